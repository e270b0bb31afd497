// The reference video of POST /omni/video. Before the charge (it changes the price, and the spec says the
// source is measured) it is downloaded through the outbound guard (at most 90 MB) and probed (an MP4/MOV with
// a video track, at most 30 s), its window [video_start, video_end] checked against the measured length; the
// file is kept as downloaded. The job cuts the window out and normalizes it (reference-window.ts), so the
// provider gets exactly the window: an encode is job work, and a busy media pool only makes the job wait
// (issue 36 item 9: a partner never gets a 503 or a wait on an encode because our own CPU is busy).
//
// Choices where the spec is silent, written down here: sizes are decimal (90,000,000 bytes); a source without
// sound gives a window without sound (the sandbox composites only the picture); the length bound is
// inclusive, to the hundredth of a second; an over-cap download is a 413 like every other size cap; a source
// that probes but whose window cannot be cut fails the job (ReferenceCutError), refunded once.
import {
  ApiError,
  fetchSource,
  firstVideo,
  isMediaError,
  isoBmffFirstBox,
  isWholeIsoBmff,
  type MediaEngine,
  type OutboundGuard,
  probeOverBudget,
} from "mediagate/plugin";
import { OMNI_ERRORS } from "../errors.ts";
import { LIMITS } from "../prices.ts";

const DOWNLOAD_TIMEOUT_MS = 120_000;
const ISO_BMFF = "mov,mp4,m4a,3gp,3g2,mj2";

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
  return new ApiError(400, OMNI_ERRORS.referenceVideoUnusable);
}

/** The source as downloaded and the window to cut from it: what the job keeps. */
export interface MeasuredReferenceVideo {
  url: string;
  bytes: Uint8Array;
  start: number;
  end: number;
}

/** Downloads and probes the source and checks the window: the spec's 400/413 before any charge, no encode. */
export async function measureReferenceVideo(
  url: string,
  start: number,
  end: number,
  deps: ReferenceVideoDeps,
): Promise<MeasuredReferenceVideo> {
  const bytes = await fetchSource(
    url,
    {
      maxBytes: LIMITS.referenceVideoMaxBytes,
      timeoutMs: DOWNLOAD_TIMEOUT_MS,
      texts: {
        invalidUrl: OMNI_ERRORS.invalidVideoUrl(url.slice(0, 200)),
        tooLarge: OMNI_ERRORS.referenceVideoTooLarge,
        download: OMNI_ERRORS.referenceUnavailable,
      },
    },
    { guard: deps.guard, signal: deps.signal },
  );
  // Junk (and a manifest: HLS, DASH, concat) is refused on its first bytes, before the engine reads it.
  if (!isoBmffFirstBox(bytes)) throw new ApiError(400, OMNI_ERRORS.referenceVideoUnreadable);
  // What the cut used to find out after the probe, told now: the file cannot be prepared.
  if (!isWholeIsoBmff(bytes)) throw new ApiError(400, OMNI_ERRORS.referenceVideoUnusable);
  let seconds: number;
  try {
    // No time-out of our own: it would count the wait for a media pool place, and a busy machine must not read
    // as a bad file (the engine's own cap bounds a probe that never ends; the request's signal, the wait).
    const probe = await deps.engine.probe(bytes, "in.bin", { signal: deps.signal });
    if (
      probe.formatName !== ISO_BMFF ||
      !firstVideo(probe) ||
      !Number.isFinite(probe.durationSeconds) ||
      probe.durationSeconds <= 0
    )
      throw new ApiError(400, OMNI_ERRORS.referenceVideoUnreadable);
    // lib/media/budgets.ts before the cut decodes a frame: an 8K frame, 240 fps and 4 hours at most.
    const excess = probeOverBudget(probe);
    if (excess)
      throw new ApiError(
        400,
        excess.kind === "duration" ? OMNI_ERRORS.referenceVideoTooLong : OMNI_ERRORS.referenceVideoUnreadable,
      );
    seconds = round2(probe.durationSeconds);
  } catch (err) {
    throw err instanceof ApiError ? err : unusable(err, deps);
  }
  if (seconds > LIMITS.referenceVideoMaxSeconds) throw new ApiError(400, OMNI_ERRORS.referenceVideoTooLong);
  if (end > seconds) throw new ApiError(400, OMNI_ERRORS.trimOutsideSource(seconds));
  return { url, bytes, start, end };
}
