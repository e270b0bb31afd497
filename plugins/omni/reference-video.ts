// The reference video of POST /omni/video, prepared inside the request and before the charge (it changes the
// price, and the spec says the source is measured): downloaded through the outbound guard (at most 90 MB),
// probed (an MP4/MOV with a video track, at most 30 s), its window [video_start, video_end] checked against
// the measured length, then cut out and normalized (H.264 yuv420p, short edge at most 720 px, 25 fps, AAC
// 48 kHz stereo when the source has sound, no metadata) so the provider gets exactly the window.
//
// Choices where the spec is silent, written down here: sizes are decimal (90,000,000 bytes); a source without
// sound gives a window without sound (the sandbox composites only the picture); the length bound is
// inclusive, to the hundredth of a second; an over-cap download is a 413 like every other size cap.
import { ApiError, fetchSource, probeOverBudget, firstAudio, firstVideo, isMediaError, isoBmffFirstBox, type MediaEngine, type OmniReferenceVideo, type OutboundGuard } from "mediagate/plugin";
import { OMNI_ERRORS as E } from "./errors.ts";
import { LIMITS } from "./limits.ts";

const DOWNLOAD_TIMEOUT_MS = 120_000;
const PROBE_TIMEOUT_MS = 60_000;
const CUT_TIMEOUT_MS = 120_000;
const ISO_BMFF = "mov,mp4,m4a,3gp,3g2,mj2";
const NO_METADATA = ["-map_metadata", "-1", "-map_metadata:s", "-1", "-map_chapters", "-1", "-fflags", "+bitexact"];

export interface ReferenceVideoDeps {
  guard: OutboundGuard;
  engine: MediaEngine;
  signal?: AbortSignal;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The engine failing on the partner's file is the file's 400; a missing engine or a cancelled request is not. */
function unusable(err: unknown, deps: ReferenceVideoDeps): unknown {
  if (deps.signal?.aborted) return err;
  if (err instanceof ApiError) return err;
  if (isMediaError(err) && err.code === "engine_unavailable") return err;
  return new ApiError(400, E.referenceVideoUnusable);
}

export async function prepareReferenceVideo(url: string, start: number, end: number, deps: ReferenceVideoDeps): Promise<OmniReferenceVideo> {
  const bytes = await fetchSource(
    url,
    { maxBytes: LIMITS.referenceVideoMaxBytes, timeoutMs: DOWNLOAD_TIMEOUT_MS, texts: { invalidUrl: E.invalidVideoUrl(url.slice(0, 200)), tooLarge: E.referenceVideoTooLarge, download: E.referenceUnavailable } },
    { guard: deps.guard, signal: deps.signal },
  );
  // Junk (and a manifest: HLS, DASH, concat) is refused on its first bytes, before the engine reads it.
  if (!isoBmffFirstBox(bytes)) throw new ApiError(400, E.referenceVideoUnreadable);
  let seconds: number;
  let hasAudio: boolean;
  try {
    const probe = await deps.engine.probe(bytes, "in.bin", { signal: deps.signal, timeoutMs: PROBE_TIMEOUT_MS });
    if (probe.formatName !== ISO_BMFF || !firstVideo(probe) || !Number.isFinite(probe.durationSeconds) || probe.durationSeconds <= 0) throw new ApiError(400, E.referenceVideoUnreadable);
    // lib/media/budgets.ts before the cut decodes a frame: an 8K frame, 240 fps and 4 hours at most.
    const excess = probeOverBudget(probe);
    if (excess) throw new ApiError(400, excess.kind === "duration" ? E.referenceVideoTooLong : E.referenceVideoUnreadable);
    seconds = round2(probe.durationSeconds);
    hasAudio = firstAudio(probe) !== undefined;
  } catch (err) {
    throw err instanceof ApiError ? err : unusable(err, deps);
  }
  if (seconds > LIMITS.referenceVideoMaxSeconds) throw new ApiError(400, E.referenceVideoTooLong);
  if (end > seconds) throw new ApiError(400, E.trimOutsideSource(seconds));

  const scale = "scale='if(gte(iw,ih),-2,min(720,iw))':'if(gte(iw,ih),min(720,ih),-2)'";
  const audio = hasAudio ? ["-map", "0:a:0", "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2"] : [];
  try {
    const out = await deps.engine.run(
      [
        "-ss", String(start), "-i", "in.bin", "-t", String(round2(end - start)),
        "-map", "0:v:0", ...audio,
        "-vf", `${scale},fps=25,format=yuv420p`,
        "-c:v", "libx264", "-preset", deps.engine.kind === "wasm" ? "ultrafast" : "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
        ...NO_METADATA, "-movflags", "+faststart",
        "window.mp4",
      ],
      { inputs: { "in.bin": bytes }, outputs: ["window.mp4"], signal: deps.signal, timeoutMs: CUT_TIMEOUT_MS, durationSeconds: end - start },
    );
    const window = out["window.mp4"]!;
    const probe = await deps.engine.probe(window, "window.mp4", { signal: deps.signal, timeoutMs: PROBE_TIMEOUT_MS });
    if (firstVideo(probe)?.codec !== "h264" || !(probe.durationSeconds > 0)) throw new ApiError(400, E.referenceVideoUnusable);
    return { bytes: window, seconds: round2(probe.durationSeconds), url };
  } catch (err) {
    throw unusable(err, deps);
  }
}
