// Video upscale: measuring the source before the charge (spec: "downloaded and measured before charging"),
// and the job that scales it for real with the media engine, recorded through `video.records` so it is polled
// at GET /video-status and listed by GET /videos like any video job (and, like merges, emits no events).
//
// Choices where the spec is silent, written down here:
// - MP4/MOV means ISO-BMFF: the first box is ftyp (or moov/mdat/wide/free/skip for old QuickTime files), the
//   demuxer agrees, and there is a real video track; 3GP/3G2 brands are refused.
// - Sizes are the displayed ones (rotation applied): the output is stored upright at factor x that size.
//   Factor 1 keeps the size, except that an odd edge grows by 1 px (H.264 4:2:0 needs even edges; the spec
//   says sources are never cropped).
// - Scaling is Lanczos; factor 1 ("enhance") is a light temporal/spatial denoise (hqdn3d) and an unsharp mask
//   on luma; factors 2 and 4 get the same unsharp mask after scaling, since enlarging softens edges.
// - Output: H.264 (yuv420p, CRF 18) in MP4 with the frame rate kept, moov in front; the first audio track is
//   copied when MP4 can carry its codec, else encoded to AAC 192 kb/s; other tracks are dropped.
// - `duration` of the record is the billed whole seconds until the job completes, then the output's length.
// - Billed seconds are measured, not only read from the header: a container's mvhd/mdhd durations are what the
//   file says, and one that understates its length would be under-billed. The seconds billed are the longer
//   of the stated duration and the span of the picture's packets (the first video track, read by a stream
//   copy: no decoding, and packet timestamps are the decoded frames' timestamps). The job's ffmpeg is capped
//   at the billed seconds (`-t`) besides, so no file (a long audio track behind a short picture included) can
//   make it work longer than was paid for. An honest file is billed as before: its stated duration already
//   covers its picture.
import {
  ApiError,
  displaySize,
  firstAudio,
  firstVideo,
  isMediaError,
  isoBmffFirstBox,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  latin1,
  type MediaEngine,
  type MediaEngineKind,
  type ProbeExcess,
  probeOverBudget,
  QUEUED_PROCESSING_COMPLETE,
} from "mediagate/plugin";
import { UPSCALE_ERRORS } from "./errors.ts";
import { billedSeconds, type Factor, VIDEO } from "./prices.ts";

const ISO_BMFF = "mov,mp4,m4a,3gp,3g2,mj2";
/** Audio codecs MP4 carries as they are. */
const COPYABLE_AUDIO = new Set(["aac", "mp3", "ac3", "eac3", "alac"]);
const PROBE_TIMEOUT_MS = 60_000;
/** The partner's 400 for each way a probed file is over the media budget. */
const OVER_BUDGET: Record<ProbeExcess["kind"], string> = {
  resolution: UPSCALE_ERRORS.over4K,
  duration: UPSCALE_ERRORS.videoTooLong,
  fps: UPSCALE_ERRORS.videoFormat,
};

/** MP4 or MOV by its boxes: never by a URL's extension or a server's content type. */
export function isMp4OrMov(bytes: Uint8Array): boolean {
  const box = isoBmffFirstBox(bytes);
  if (!box) return false;
  if (box.type !== "ftyp") return true;
  const brand = latin1(bytes, box.body, box.body + 4);
  return brand.length === 4 && !brand.startsWith("3g");
}

export interface MeasuredVideo {
  /** Seconds billed: the stated duration or the picture's packets' span, whichever is longer. */
  seconds: number;
  /** Displayed size (rotation applied). */
  width: number;
  height: number;
  audio: "copy" | "aac" | null;
}

/** Format, duration and size, with the spec's 400s; 500 when the engine is not there. */
export async function measureVideo(
  bytes: Uint8Array,
  engine: MediaEngine,
  signal?: AbortSignal,
): Promise<MeasuredVideo> {
  if (!isMp4OrMov(bytes)) throw new ApiError(400, UPSCALE_ERRORS.videoFormat);
  let probe;
  try {
    probe = await engine.probe(bytes, "in.mp4", { signal, timeoutMs: PROBE_TIMEOUT_MS });
  } catch (err) {
    if (signal?.aborted) throw err;
    if (isMediaError(err) && err.code === "engine_unavailable") throw new ApiError(500, UPSCALE_ERRORS.notAvailable);
    throw new ApiError(400, UPSCALE_ERRORS.videoFormat);
  }
  const size = displaySize(probe);
  if (probe.formatName !== ISO_BMFF || !firstVideo(probe) || !size || !(probe.durationSeconds > 0))
    throw new ApiError(400, UPSCALE_ERRORS.videoFormat);
  const tooLong = (seconds: number) => Math.round(seconds * 1000) > VIDEO.inputMaxSeconds * 1000;
  if (tooLong(probe.durationSeconds)) throw new ApiError(400, UPSCALE_ERRORS.videoTooLong);
  // The budget of lib/media/budgets.ts before any frame is read: a header declaring 16K frames is past the
  // spec's 4K output at any factor; an absurd frame rate is no video we take.
  const excess = probeOverBudget(probe);
  if (excess) throw new ApiError(400, OVER_BUDGET[excess.kind]);
  const a = firstAudio(probe);
  let seconds: number;
  try {
    seconds = Math.max(probe.durationSeconds, await pictureSeconds(engine, bytes, signal));
  } catch (err) {
    if (signal?.aborted) throw err;
    if (isMediaError(err) && err.code === "engine_unavailable") throw new ApiError(500, UPSCALE_ERRORS.notAvailable);
    throw new ApiError(400, UPSCALE_ERRORS.videoFormat);
  }
  if (!(seconds > 0)) throw new ApiError(400, UPSCALE_ERRORS.videoFormat);
  if (tooLong(seconds)) throw new ApiError(400, UPSCALE_ERRORS.videoTooLong);
  return { seconds, ...size, audio: a ? (COPYABLE_AUDIO.has(a.codec) ? "copy" : "aac") : null };
}

/**
 * The seconds the packets of the first video track span: a stream copy into ffmpeg's framecrc listing (one
 * line per packet with its timestamps), read up to just past the limit so a file cannot make it long.
 */
async function pictureSeconds(engine: MediaEngine, bytes: Uint8Array, signal?: AbortSignal): Promise<number> {
  const args = [
    "-i",
    "in.bin",
    "-map",
    "0:v:0",
    "-c",
    "copy",
    "-t",
    String(VIDEO.inputMaxSeconds + 1),
    "-f",
    "framecrc",
    "packets.txt",
  ];
  const out = await engine.run(args, {
    inputs: { "in.bin": bytes },
    outputs: ["packets.txt"],
    signal,
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  return packetSpan(new TextDecoder().decode(out["packets.txt"]));
}

/**
 * From a framecrc listing: `#tb <stream>: <num>/<den>` headers, then `<stream>, <dts>, <pts>, <duration>,
 * <size>, <crc>` a packet. The span runs from the earliest packet start to the latest packet end, in seconds;
 * packets before 0 (an AAC encoder's priming, which the edit list hides) are not played, so time starts at 0.
 */
export function packetSpan(listing: string): number {
  const timeBase = new Map<string, number>();
  let start = Infinity;
  let end = -Infinity;
  for (const line of listing.split("\n")) {
    const tb = /^#tb (\d+): (\d+)\/(\d+)\s*$/.exec(line);
    if (tb) {
      if (Number(tb[3]) > 0) timeBase.set(tb[1]!, Number(tb[2]) / Number(tb[3]));
      continue;
    }
    if (line.startsWith("#")) continue;
    const [stream, , pts, duration] = line.split(",").map((f) => f.trim());
    const unit = stream === undefined ? undefined : timeBase.get(stream);
    const at = Number(pts);
    const length = Number(duration);
    if (unit === undefined || pts === "" || !Number.isFinite(at) || !Number.isFinite(length)) continue;
    start = Math.min(start, at * unit);
    end = Math.max(end, (at + Math.max(0, length)) * unit);
  }
  start = Math.max(0, start);
  return end > start ? end - start : 0;
}

export interface VideoPlan {
  width: number;
  height: number;
}

const even = (n: number) => n + (n % 2);

/** The output size; the 4K rule's 400 before any charge. */
export function planVideo(source: { width: number; height: number }, factor: Factor): VideoPlan {
  const width = even(source.width * factor);
  const height = even(source.height * factor);
  if (Math.max(width, height) > VIDEO.maxOutputLongEdge) throw new ApiError(400, UPSCALE_ERRORS.over4K);
  return { width, height };
}

const UNSHARP = "unsharp=5:5:0.6:5:5:0";

/** One argument list for both engines (the media engine: files by bare name); `maxSeconds` caps the output at what was billed. */
export function scaleArgs(
  source: { width: number; height: number },
  plan: VideoPlan,
  audio: MeasuredVideo["audio"],
  engine: MediaEngineKind,
  maxSeconds?: number,
): string[] {
  const filters: string[] = [];
  if (plan.width === source.width && plan.height === source.height) filters.push("hqdn3d=1.5:1.5:6:6");
  else filters.push(`scale=${plan.width}:${plan.height}:flags=lanczos+accurate_rnd+full_chroma_int`);
  filters.push(UNSHARP, "setsar=1", "format=yuv420p");
  const audioArgs =
    audio === null ? [] : ["-map", "0:a:0", ...(audio === "copy" ? ["-c:a", "copy"] : ["-c:a", "aac", "-b:a", "192k"])];
  return [
    "-i",
    "in.bin",
    "-map",
    "0:v:0",
    ...audioArgs,
    "-vf",
    filters.join(","),
    // The wasm engine is several times slower; its preset keeps a two-minute source within the job's time.
    "-c:v",
    "libx264",
    "-preset",
    engine === "wasm" ? "ultrafast" : "fast",
    "-crf",
    "18",
    "-pix_fmt",
    "yuv420p",
    ...(maxSeconds === undefined ? [] : ["-t", String(maxSeconds)]),
    "-movflags",
    "+faststart",
    "out.mp4",
  ];
}

export type StoredVideoInput = {
  source_key: string;
  factor: Factor;
  source_width: number;
  source_height: number;
  width: number;
  height: number;
  seconds: number;
  audio: MeasuredVideo["audio"];
};

/** Progress rows are throttled: the engine reports every quarter second, the row needs whole percents. */
function progressWriter(ctx: JobRunContext, from: number, to: number) {
  let last = -1;
  let lastAt = 0;
  let writing: Promise<void> = Promise.resolve();
  return {
    report(fraction: number) {
      const percent = Math.floor(from + Math.max(0, Math.min(1, fraction)) * (to - from));
      const now = Date.now();
      if (percent <= last || now - lastAt < 250) return;
      last = percent;
      lastAt = now;
      // A lost progress row is not worth failing the job for; the next one carries the same news.
      writing = writing.then(() => ctx.progress(percent, "Upscaling")).catch(() => {});
    },
    /** Written before the job ends, so no row lands after the terminal state. */
    flush: () => writing,
  };
}

export const videoUpscaleJob: JobKindDeclaration<StoredVideoInput> = {
  // The video states of spec part 2; no `events`: "Video upscale jobs ... emit no events".
  ...QUEUED_PROCESSING_COMPLETE,
  failError: UPSCALE_ERRORS.failed,
  retries: 1,
  timeoutSeconds: 3600,
  concurrency: 1,
  async run(ctx) {
    if (ctx.state === "queued") await ctx.moveTo("processing", "Upscaling");
    const input = ctx.input;
    const source = await ctx.blobs.get(input.source_key);
    if (!source) throw new JobFailure(UPSCALE_ERRORS.failed);
    const engine = ctx.capability("media");
    const fail = async (detail: string) => {
      ctx.log.warn(`upscale ${ctx.jobId}: ${detail}`);
      await ctx.blobs.remove(input.source_key).catch(() => {});
      return new JobFailure(UPSCALE_ERRORS.failed);
    };

    const progress = progressWriter(ctx, 1, 95);
    let bytes: Uint8Array;
    try {
      const args = scaleArgs(
        { width: input.source_width, height: input.source_height },
        input,
        input.audio,
        engine.kind,
        billedSeconds(input.seconds),
      );
      try {
        const out = await engine.run(args, {
          inputs: { "in.bin": source },
          outputs: ["out.mp4"],
          signal: ctx.signal,
          timeoutMs: 3_500_000,
          durationSeconds: input.seconds,
          onProgress: progress.report,
        });
        bytes = out["out.mp4"]!;
      } finally {
        await progress.flush();
      }
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (isMediaError(err) && err.isInputError) throw await fail(err.describe());
      throw err; // ours: retried, then failed and refunded by the runtime
    }
    const probe = await engine.probe(bytes, "out.mp4", { signal: ctx.signal, timeoutMs: PROBE_TIMEOUT_MS });
    const v = firstVideo(probe);
    if (v?.codec !== "h264" || v.width !== input.width || v.height !== input.height) {
      throw await fail(`planned ${input.width}x${input.height} h264, made ${v?.width}x${v?.height} ${v?.codec}`);
    }
    const records = ctx.capability("video.records");
    const output = await records.storeOutput(ctx.jobId, bytes, {
      duration: Math.max(1, Math.round(probe.durationSeconds)),
      metadata_removed: false,
      width: input.width,
      height: input.height,
    });
    await ctx.blobs.remove(input.source_key).catch(() => {});
    return { state: "complete", output: { ...output } };
  },
};
