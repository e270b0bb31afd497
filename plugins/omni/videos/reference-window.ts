// The job's half of the Omni reference video (references.ts measures it before the charge): the window
// [start, end] of the kept source cut out and normalized (H.264 yuv420p, short edge at most 720 px, 25 fps, AAC
// 48 kHz stereo when the source has sound, no metadata), so the provider gets exactly the window. A source that
// probes but whose window cannot be cut fails the job (ReferenceCutError), refunded once.
import {
  AAC_STEREO_ARGS,
  FASTSTART_ARGS,
  firstAudio,
  firstVideo,
  h264Args,
  isMediaError,
  type MediaEngine,
  NO_METADATA_ARGS,
  type OmniReferenceVideo,
} from "mediagate/plugin";
import type { MeasuredReferenceVideo } from "./references.ts";

const round2 = (n: number) => Math.round(n * 100) / 100;

/** A source the job could not cut: the job fails, refunded once. */
export class ReferenceCutError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ReferenceCutError";
  }
}

/**
 * Job work: the window [start, end] of a measured source, cut and normalized. Waits for a media pool place as
 * long as the job may (its signal). The file's failures throw ReferenceCutError; cancellation and a missing
 * engine pass through.
 */
export async function cutReferenceWindow(
  source: MeasuredReferenceVideo,
  engine: MediaEngine,
  options: { signal?: AbortSignal } = {},
): Promise<OmniReferenceVideo> {
  const { signal } = options;
  const { bytes, start, end, url } = source;
  try {
    const probe = await engine.probe(bytes, "in.bin", { signal });
    if (!firstVideo(probe)) throw new ReferenceCutError("the stored source no longer probes as a video");
    const hasAudio = firstAudio(probe) !== undefined;
    const scale = "scale='if(gte(iw,ih),-2,min(720,iw))':'if(gte(iw,ih),min(720,ih),-2)'";
    const audio = hasAudio ? ["-map", "0:a:0", ...AAC_STEREO_ARGS] : [];
    const out = await engine.run(
      [
        "-ss",
        String(start),
        "-i",
        "in.bin",
        "-t",
        String(round2(end - start)),
        "-map",
        "0:v:0",
        ...audio,
        "-vf",
        `${scale},fps=25,format=yuv420p`,
        ...h264Args({ preset: engine.kind === "wasm" ? "ultrafast" : "veryfast", crf: 23 }),
        ...NO_METADATA_ARGS,
        ...FASTSTART_ARGS,
        "window.mp4",
      ],
      // No time-out of its own: the wait for a pool place is part of the run; the job's limit bounds both.
      { inputs: { "in.bin": bytes }, outputs: ["window.mp4"], signal, durationSeconds: end - start },
    );
    const window = out["window.mp4"]!;
    const made = await engine.probe(window, "window.mp4", { signal });
    if (firstVideo(made)?.codec !== "h264" || !(made.durationSeconds > 0))
      throw new ReferenceCutError(`the window came out ${made.durationSeconds}s long`);
    return { bytes: window, seconds: round2(made.durationSeconds), url };
  } catch (err) {
    if (signal?.aborted || err instanceof ReferenceCutError) throw err;
    if (isMediaError(err) && err.code === "engine_unavailable") throw err;
    throw new ReferenceCutError(`the window could not be cut: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
}
