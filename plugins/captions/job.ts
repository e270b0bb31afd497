// The two job kinds of a caption job. `caption` is the first run (charged at submit): transcribe, cut the
// words into cards, burn them. `reburn` is an edit's run (no charge): burn the edited cards with the job's
// style. Both write their output under a new random name, so a retry after a crash overwrites nothing a
// partner holds a link to, and a failed re-burn leaves the previous output where it was.
//
// States (spec part 2 "Caption jobs"): pending → processing → complete | no_speech | failed. `pending` moves
// to `processing` when a worker picks the job up (the spec leaves that trigger open).
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import {
  cleanUpstreamText,
  isTransient,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  type MediaEngine,
  UPSTREAM_TEXT_LIMITS,
} from "mediagate/plugin";
import { CAPTION_FAILURES } from "./errors.ts";
import { DAY_MS, RETENTION } from "./limits.ts";
import { CAPTIONS_TABLE, type CaptionRow, captionById, type SourceMedia, styleOf } from "./records.ts";
import { buildAss } from "./render/ass.ts";
import { burnCaptions } from "./render/burn.ts";
import { applyDisplayTiming, makeCards } from "./render/cards.ts";
import { DEFAULT_FONT_KEY, fontByKey, readFont } from "./render/fonts.ts";
import { fontPixels } from "./render/layout.ts";
import { type OpenedSource, openSource, SourceGone, sourceMedia } from "./source.ts";
import { extractSpeechInputs } from "./transcribe/extract.ts";
import type { Card, FontEntry } from "./types.ts";

export const CAPTION_STATES = {
  states: ["pending", "processing", "complete", "no_speech", "failed"],
  initial: "pending",
  transitions: {
    pending: ["processing", "complete", "no_speech", "failed"],
    processing: ["complete", "no_speech", "failed"],
  },
  terminal: { complete: "success", no_speech: "failure", failed: "failure" },
  failState: "failed",
} as const;

// A re-burn's own job: it charges nothing, so its failure refunds nothing; the caption job shows `complete`.
const REBURN_STATES = {
  states: ["pending", "processing", "complete", "failed"],
  initial: "pending",
  transitions: { pending: ["processing", "complete", "failed"], processing: ["complete", "failed"] },
  terminal: { complete: "success", failed: "failure" },
  failState: "failed",
} as const;

/** The re-burn job's input (a type, so it is a plain record as the kernel stores it). */
export type ReburnInput = { caption_job_id: string; chunks: Card[] };

const fontOf = (key: string): FontEntry => fontByKey(key) ?? fontByKey(DEFAULT_FONT_KEY)!;

async function opened(ctx: JobRunContext, row: CaptionRow): Promise<OpenedSource> {
  try {
    return await openSource(ctx, row);
  } catch (err) {
    if (err instanceof SourceGone) throw new JobFailure(CAPTION_FAILURES.sourceGone);
    throw err;
  }
}

/** Learns the source's size, rate and duration once and keeps them on the row. */
async function mediaFor(
  ctx: JobRunContext,
  engine: MediaEngine,
  row: CaptionRow,
  source: OpenedSource,
): Promise<SourceMedia> {
  const media = await sourceMedia(engine, row, source, ctx.signal).catch((err) => {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(
      `captions ${ctx.jobId}: the source could not be read: ${err instanceof Error ? err.message : String(err)}`,
    );
    throw new JobFailure(CAPTION_FAILURES.failed);
  });
  if (!row.media)
    await ctx.db
      .updateTable(CAPTIONS_TABLE)
      .set({ media: JSON.stringify(media) })
      .where("job_id", "=", row.job_id)
      .execute();
  return media;
}

/** Burns `cards` onto the source and stores the result; resolves with the new output key. */
async function render(
  ctx: JobRunContext,
  engine: MediaEngine,
  row: CaptionRow,
  source: OpenedSource,
  media: SourceMedia,
  cards: Card[],
  from: number,
): Promise<string> {
  const style = styleOf(row);
  const font = fontOf(style.font);
  const frame = { width: media.width, height: media.height, fps: media.fps };
  const ass = buildAss(cards, style, font, frame);
  let last = 0;
  const bytes = await burnCaptions(engine, {
    source: source.input,
    audioCodec: media.audio ?? null,
    ass,
    font: { file: font.file, bytes: await readFont(font) },
    frame,
    durationSeconds: media.duration,
    signal: ctx.signal,
    onProgress(fraction: number) {
      const percent = Math.floor(from + fraction * (97 - from));
      if (percent > last) {
        last = percent;
        void ctx.progress(percent, "Rendering").catch(() => {});
      }
    },
  }).catch((err: unknown) => {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`captions ${ctx.jobId}: burning failed: ${err instanceof Error ? err.message : String(err)}`);
    throw new JobFailure(CAPTION_FAILURES.failed);
  });
  // A capability URL (docs/architecture.md "Media links"): unguessable, and new on every run.
  const key = `out/${row.job_id}-${randomBytes(16).toString("hex")}.mp4`;
  await ctx.blobs.put(key, bytes, {
    contentType: "video/mp4",
    expiresAt: new Date(ctx.clock.now() + RETENTION.captionedOutputDays * DAY_MS),
  });
  return key;
}

async function transcribe(ctx: JobRunContext, engine: MediaEngine, source: OpenedSource, media: SourceMedia) {
  const { wav, timedText } = await extractSpeechInputs(engine, source.input, {
    signal: ctx.signal,
    durationSeconds: media.duration,
  }).catch((err: unknown) => {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`captions ${ctx.jobId}: audio extraction failed: ${err instanceof Error ? err.message : String(err)}`);
    throw new JobFailure(CAPTION_FAILURES.failed);
  });
  if (!wav && !source.spoken?.words.length && !timedText) return [];
  const transcript = await ctx
    .capability("speech.transcribe")
    .transcribe({
      audio: wav ?? new Uint8Array(0),
      spoken: source.spoken,
      timedText,
      signal: ctx.signal,
      onProgress: (f) =>
        void ctx.progress(Math.floor(5 + Math.max(0, Math.min(1, f)) * 30), "Transcribing").catch(() => {}),
    })
    .catch((err: unknown) => {
      if (ctx.signal.aborted || isTransient(err)) throw err;
      ctx.log.warn(`captions ${ctx.jobId}: transcription failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new JobFailure(CAPTION_FAILURES.failed);
    });
  // Words are upstream text (a transcription service, or subtitles embedded in the partner's file): cleaned
  // before they are stored on the row and drawn (lib/upstream-text.ts), so a NUL is never a database error.
  return transcript.words
    .map((w) => ({ ...w, text: cleanUpstreamText(w.text, UPSTREAM_TEXT_LIMITS.word) }))
    .filter((w) => w.text.trim() && Number.isFinite(w.start) && Number.isFinite(w.end) && w.end > w.start);
}

/** Transcribes the source and cuts the words into cards, kept on the row; no words at all is `no_speech`. */
async function firstCards(
  ctx: JobRunContext,
  engine: MediaEngine,
  row: CaptionRow,
  source: OpenedSource,
  media: SourceMedia,
): Promise<Card[]> {
  await ctx.progress(5, "Transcribing");
  const words = await transcribe(ctx, engine, source, media);
  const style = styleOf(row);
  const font = fontOf(style.font);
  const frame = { width: media.width, height: media.height, fps: media.fps };
  const cards = words.length
    ? makeCards(words, {
        chunking: style.chunking,
        fontPath: font.path,
        fontPx: fontPixels(style.size, frame),
        frame,
        embolden: font.embolden,
        case: style.case,
        outline: style.outline,
      })
    : [];
  if (cards.length === 0) throw new JobFailure(CAPTION_FAILURES.noSpeech, "no_speech");
  await ctx.db
    .updateTable(CAPTIONS_TABLE)
    .set({ transcript: JSON.stringify(words), chunks: JSON.stringify(cards), chunk_count: cards.length })
    .where("job_id", "=", ctx.jobId)
    .execute();
  return cards;
}

/** What both kinds of job share: one retry, an hour an attempt, two at once. */
const ATTEMPTS = { failError: CAPTION_FAILURES.failed, retries: 1, timeoutSeconds: 3600, concurrency: 2 } as const;

/** The first steps of either job: processing, then the caption row's source opened and measured. */
async function begin(ctx: JobRunContext, captionJobId: string, message: string) {
  if (ctx.state === "pending") await ctx.moveTo("processing", message);
  const engine = ctx.capability("media");
  const row = await captionById(ctx.db, captionJobId);
  const source = await opened(ctx, row);
  return { engine, row, source, media: await mediaFor(ctx, engine, row, source) };
}

export const captionJob: JobKindDeclaration<{ first: true }> = {
  ...CAPTION_STATES,
  ...ATTEMPTS,
  async run(ctx) {
    const { engine, row: started, source, media } = await begin(ctx, ctx.jobId, "Transcribing");
    // A retry after a crash during the burn keeps the transcript it already has.
    const cards = started.chunks
      ? (JSON.parse(started.chunks) as Card[])
      : await firstCards(ctx, engine, started, source, media);
    const row = await captionById(ctx.db, ctx.jobId);
    await ctx.progress(40, "Rendering");
    const key = await render(ctx, engine, row, source, media, cards, 40);
    await ctx.db
      .updateTable(CAPTIONS_TABLE)
      .set({
        output_key: key,
        output_expires_at: new Date(ctx.clock.now() + RETENTION.captionedOutputDays * DAY_MS),
        completed_at: new Date(ctx.clock.now()),
      })
      .where("job_id", "=", ctx.jobId)
      .execute();
    return { state: "complete", output: {} };
  },
};

export const reburnJob: JobKindDeclaration<ReburnInput> = {
  ...REBURN_STATES,
  ...ATTEMPTS,
  async run(ctx) {
    const { engine, row, source, media } = await begin(ctx, ctx.input.caption_job_id, "Rendering");
    const style = styleOf(row);
    const cards = applyDisplayTiming(ctx.input.chunks, style.chunking);
    await ctx.progress(5, "Rendering");
    const key = await render(ctx, engine, row, source, media, cards, 5);
    const previous = row.output_key;
    // Counted once even if this attempt is retried after the update: the re-burn's id marks it applied.
    const applied = await ctx.db
      .updateTable(CAPTIONS_TABLE)
      .set({
        output_key: key,
        output_expires_at: new Date(ctx.clock.now() + RETENTION.captionedOutputDays * DAY_MS),
        chunks: JSON.stringify(ctx.input.chunks),
        chunk_count: ctx.input.chunks.length,
        edit_count: sql`edit_count + 1`,
        applied_reburn_job_id: ctx.jobId,
        completed_at: new Date(ctx.clock.now()),
      })
      .where("job_id", "=", row.job_id)
      .where((eb) => eb.or([eb("applied_reburn_job_id", "is", null), eb("applied_reburn_job_id", "!=", ctx.jobId)]))
      .executeTakeFirst();
    if (Number(applied.numUpdatedRows) === 0) {
      // Already applied by an earlier attempt: keep that output, drop this one.
      await ctx.blobs.remove(key).catch(() => {});
    } else if (previous && previous !== key) {
      await ctx.blobs.remove(previous).catch(() => {});
    }
    return { state: "complete", output: {} };
  },
};
