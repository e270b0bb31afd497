// The analysis job: queued → downloading → extracting_frames → transcribing → analyzing → complete | error
// (spec part 1 "Ad analysis"; the moves after `queued` are ours, one per stage, in that order).
//
//   downloading        `social.extract` (the social downloader's extractor, not its endpoint: the account's
//                      download quota is not touched); the ad is kept as a private blob for the later stages
//   extracting_frames  measure.ts: cuts, frames (libvips colours and brightness), loudness
//   transcribing       `speech.transcribe` on the ad's audio (the extractor's own spoken record when it has one)
//   analyzing          facts.ts, then `text.generate` (task "ad-analysis") writes the four texts
//
// Each stage stores what it produced on the analysis row before the next begins, so a retry after a crash (the
// kernel restarts the job in the state it had reached) goes on from there. A failure anywhere ends in `error`
// with a sentence of errors.ts, and the kernel refunds the charge once.
//
// Markers (docs/architecture.md "Sandbox providers"): a link whose path contains `sandbox-fail` fails at the download (the
// sandbox extractor's own marker); `sandbox-frames-fail`, `sandbox-transcribe-fail` and `sandbox-analyze-fail`
// fail the stage they name, checked here as the stage begins, the way that stage's own failure would. No post
// of any network has such a path, so they cost a real deployment nothing.
import {
  AD_ANALYSIS_FIELDS,
  AD_ANALYSIS_TASK,
  type AdAnalysisTexts,
  ExtractionError,
  isTransient,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  type MediaEngine,
  PRIVATE_KEY_PREFIX,
  SOCIAL_LIMITS,
  type TimedWord,
} from "mediagate/plugin";
import { ANALYSIS_FAILURES as F, STAGE_MESSAGES } from "./errors.ts";
import { adFacts } from "./facts.ts";
import { JOB } from "./limits.ts";
import { measureAd } from "./measure.ts";
import {
  type AnalysisOutput,
  type AnalysisRow,
  analysisOf,
  parsed,
  type StoredAnalysis,
  saveAnalysis,
} from "./records.ts";

const STAGES = ["queued", "downloading", "extracting_frames", "transcribing", "analyzing"] as const;
type Stage = (typeof STAGES)[number];

/** Overall progress (percent) at the start and end of each stage. */
const STAGE_PROGRESS: Record<Exclude<Stage, "queued">, [number, number]> = {
  downloading: [0, 30],
  extracting_frames: [30, 55],
  transcribing: [55, 85],
  analyzing: [85, 99],
};

export const STAGE_FAULTS = {
  extracting_frames: "sandbox-frames-fail",
  transcribing: "sandbox-transcribe-fail",
  analyzing: "sandbox-analyze-fail",
} as const;

/** What an upstream model is told; the sandbox writer (plugins/text/ad-analysis.ts) follows the same brief. */
export const WRITER_INSTRUCTIONS = [
  "You analyze one short-form video ad. The input is a JSON object of facts measured on it: duration, size, the",
  "times of its cuts, the colours and brightness of its frames, its loudness, its transcript as timed lines, its",
  "hook (what is said and shown in the first seconds) and its call to action.",
  "Answer a JSON object with exactly four string fields:",
  "summary: two to four sentences on what the ad is and how it is made, with its figures;",
  'transcription: the transcript lines exactly as given, one per line as "[m:ss.s] text", or "(No speech detected.)";',
  "analysis: one short paragraph each on the hook, pacing, voice, sound, look and call to action, citing the figures;",
  "ugc_script: a script a creator could record, beat by beat with time ranges, exactly as long as the ad.",
  "Use only the facts given. Never state anything the facts do not show.",
].join("\n");

const round3 = (n: number) => Math.round(n * 1000) / 1000;

const row = (ctx: JobRunContext) => analysisOf(ctx.db, ctx.jobId);

const save = (
  ctx: JobRunContext,
  values: Partial<Pick<AnalysisRow, "media_key" | "spoken" | "measurements" | "transcript">>,
): Promise<void> => saveAnalysis(ctx.db, ctx.jobId, values);

/** Moves to `stage` unless an earlier attempt already got there or further. */
async function enter(ctx: JobRunContext, stage: Exclude<Stage, "queued">): Promise<void> {
  if (STAGES.indexOf(ctx.state as Stage) < STAGES.indexOf(stage)) await ctx.moveTo(stage, STAGE_MESSAGES[stage]);
  await ctx.progress(STAGE_PROGRESS[stage][0], STAGE_MESSAGES[stage]);
}

/** Progress inside a stage, `fraction` 0-1 of it; only increases, never awaited by the work it reports. */
function reporter(ctx: JobRunContext, stage: Exclude<Stage, "queued">): (fraction: number) => void {
  const [from, to] = STAGE_PROGRESS[stage];
  let last = from;
  return (fraction) => {
    const percent = Math.floor(from + Math.max(0, Math.min(1, fraction)) * (to - from));
    if (percent <= last) return;
    last = percent;
    void ctx.progress(percent, STAGE_MESSAGES[stage]).catch(() => {});
  };
}

function faultAt(r: StoredAnalysis, stage: keyof typeof STAGE_FAULTS): boolean {
  return new URL(r.normalized_url).pathname.toLowerCase().includes(STAGE_FAULTS[stage]);
}

const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function download(ctx: JobRunContext, r: StoredAnalysis): Promise<void> {
  const onProgress = reporter(ctx, "downloading");
  let post;
  try {
    post = await ctx
      .capability("social.extract")
      .extract({ url: r.normalized_url, platform: r.platform, limits: SOCIAL_LIMITS, signal: ctx.signal, onProgress });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    if (err instanceof ExtractionError) {
      ctx.log.info(`analysis ${ctx.jobId}: download: ${err.reason}: ${err.message}`);
      throw new JobFailure(F.download[err.reason]);
    }
    throw err; // unexpected: the runtime retries, then fails with the generic sentence
  }
  // An ad is one video; a carousel's first one is analyzed.
  const item = post.items[0];
  if (!item) throw new JobFailure(F.download.no_video);
  if (item.video.byteLength > SOCIAL_LIMITS.maxFileBytes) throw new JobFailure(F.download.too_large);
  // Fixed key: a retry overwrites what a lost attempt wrote. Private: never served.
  const key = `${PRIVATE_KEY_PREFIX}analysis/${ctx.jobId}/ad.mp4`;
  await ctx.blobs.put(key, item.video, {
    contentType: "video/mp4",
    expiresAt: new Date(ctx.clock.now() + JOB.keepMediaMs),
  });
  await save(ctx, { media_key: key, spoken: item.spoken ? JSON.stringify(item.spoken) : null });
}

async function adBytes(ctx: JobRunContext, r: StoredAnalysis): Promise<Uint8Array> {
  const bytes = r.media_key ? await ctx.blobs.get(r.media_key) : null;
  if (!bytes) throw new JobFailure(F.failed);
  return bytes;
}

async function measure(ctx: JobRunContext, engine: MediaEngine, r: StoredAnalysis): Promise<void> {
  if (faultAt(r, "extracting_frames")) throw new JobFailure(F.frames);
  const m = await measureAd(engine, await adBytes(ctx, r), ctx.signal).catch((err: unknown) => {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`analysis ${ctx.jobId}: measuring failed: ${describe(err)}`);
    throw new JobFailure(F.frames);
  });
  if (m.duration > SOCIAL_LIMITS.maxSeconds) throw new JobFailure(F.download.too_long);
  await save(ctx, { measurements: JSON.stringify(m) });
}

/** The ad's first audio stream as 16 kHz mono 16-bit WAV, what the recognizers read. */
async function speechAudio(
  engine: MediaEngine,
  ad: Uint8Array,
  seconds: number,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const out = await engine.run(
    [
      "-i",
      "ad.mp4",
      "-map",
      "0:a:0",
      "-vn",
      "-sn",
      "-dn",
      "-ac",
      "1",
      "-ar",
      "16000",
      "-c:a",
      "pcm_s16le",
      "-f",
      "wav",
      "audio.wav",
    ],
    {
      inputs: { "ad.mp4": ad },
      outputs: ["audio.wav"],
      durationSeconds: seconds,
      signal,
      timeoutMs: 120_000 + 500 * seconds,
    },
  );
  return out["audio.wav"]!;
}

async function transcribe(ctx: JobRunContext, engine: MediaEngine, r: StoredAnalysis): Promise<void> {
  if (faultAt(r, "transcribing")) throw new JobFailure(F.transcribe);
  const m = parsed.measurements(r)!;
  let transcript: { language: string; words: TimedWord[] } = { language: "en", words: [] };
  if (m.hasAudio) {
    const onProgress = reporter(ctx, "transcribing");
    const result = await (async () => {
      const wav = await speechAudio(engine, await adBytes(ctx, r), m.duration, ctx.signal);
      return ctx
        .capability("speech.transcribe")
        .transcribe({ audio: wav, language: "en", spoken: parsed.spoken(r), signal: ctx.signal, onProgress });
    })().catch((err: unknown) => {
      if (ctx.signal.aborted || err instanceof JobFailure || isTransient(err)) throw err;
      ctx.log.warn(`analysis ${ctx.jobId}: transcription failed: ${describe(err)}`);
      throw new JobFailure(F.transcribe);
    });
    const words = result.words
      .filter((w) => w.text.trim() && Number.isFinite(w.start) && Number.isFinite(w.end) && w.end >= w.start)
      .map((w) => ({ text: w.text.trim(), start: round3(w.start), end: round3(w.end), confidence: w.confidence }));
    transcript = { language: result.language, words };
  }
  await save(ctx, { transcript: JSON.stringify(transcript) });
}

/** The writer's answer as the four texts, or null when it is not a JSON object of four non-empty strings. */
export function readTexts(text: string): AdAnalysisTexts | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const out: Partial<AdAnalysisTexts> = {};
  for (const field of AD_ANALYSIS_FIELDS) {
    const v = (value as Record<string, unknown>)[field];
    if (typeof v !== "string" || !v.trim()) return null;
    out[field] = v.trim();
  }
  return out as AdAnalysisTexts;
}

async function write(ctx: JobRunContext, r: StoredAnalysis): Promise<AdAnalysisTexts> {
  if (faultAt(r, "analyzing")) throw new JobFailure(F.analyze);
  const facts = adFacts(r.platform, parsed.measurements(r)!, parsed.transcript(r)!);
  const answer = await ctx
    .capability("text.generate")
    .generate({
      task: AD_ANALYSIS_TASK,
      instructions: WRITER_INSTRUCTIONS,
      input: JSON.stringify(facts),
      json: true,
      maxChars: JOB.maxAnswerChars,
      signal: ctx.signal,
    })
    .catch((err: unknown) => {
      if (ctx.signal.aborted || isTransient(err)) throw err;
      ctx.log.warn(`analysis ${ctx.jobId}: writing failed: ${describe(err)}`);
      throw new JobFailure(F.analyze);
    });
  const texts = readTexts(answer.text);
  if (!texts) {
    ctx.log.warn(`analysis ${ctx.jobId}: the writer (${answer.provider}) answered no four texts`);
    throw new JobFailure(F.analyze);
  }
  return texts;
}

export const analysisJob: JobKindDeclaration<Record<string, never>> = {
  states: [...STAGES, "complete", "error"],
  initial: "queued",
  transitions: {
    queued: ["downloading", "error"],
    downloading: ["extracting_frames", "error"],
    extracting_frames: ["transcribing", "error"],
    transcribing: ["analyzing", "error"],
    analyzing: ["complete", "error"],
  },
  terminal: { complete: "success", error: "failure" },
  failState: "error",
  failError: F.failed,
  retries: JOB.retries,
  timeoutSeconds: JOB.timeoutSeconds,
  concurrency: JOB.concurrency,
  async run(ctx) {
    const engine = ctx.capability("media");
    await enter(ctx, "downloading");
    let r = await row(ctx);
    if (!r.media_key) await download(ctx, r);

    await enter(ctx, "extracting_frames");
    r = await row(ctx);
    if (!r.measurements) await measure(ctx, engine, r);

    await enter(ctx, "transcribing");
    r = await row(ctx);
    if (!r.transcript) await transcribe(ctx, engine, r);

    await enter(ctx, "analyzing");
    r = await row(ctx);
    const result = await write(ctx, r);
    // The ad was kept for the stages only; a failed job's copy is swept when it expires (JOB.keepMediaMs).
    if (r.media_key) await ctx.blobs.remove(r.media_key).catch(() => {});
    return { state: "complete", output: { result } satisfies AnalysisOutput };
  },
};
