// Pixel and duration budgets: how much picture and time one partner input may ask the media tools to make.
// Bytes are capped by each area (20 MB an image, 95 MB a video), but bytes say little about work: a 746 KB
// PNG declares 16,000 x 16,000 (1 GB of RGBA once decoded), a 100 KB MP4 can declare 16K frames or a
// million frames a second. So every picture is judged by its header (lib/formats/dimensions.ts) and every
// probed video or audio by its probe, before anything decodes it and before any charge. Areas answer an
// input over budget with their own 400 for an input they cannot use; where the spec gives a tighter limit
// (upscale-image's 8K output, upscale-video's 120 s) the area checks that too.
import { type PictureSize, pictureSize } from "../formats/dimensions.ts";
import type { Probe } from "./probe.ts";

/** The one table. Each number with why it is what it is. */
export const MEDIA_BUDGETS = {
  /**
   * A still picture: 40 megapixels. The largest camera and phone pictures partners send are 24-50 MP in raw
   * form but 12-48 MP as JPEG; 40 MP (about 7700 x 5200) decodes to 160 MB of RGBA, which one job may hold.
   */
  stillMegapixels: 40,
  /**
   * A still picture's longer edge: 16,384 px, the largest a WebP can be and more than any camera makes; a
   * 40 MP budget alone would pass a 100,000 x 400 strip that scalers and zoompan treat as 100,000 wide.
   */
  stillLongEdge: 16_384,
  /**
   * An animation (APNG, animated WebP or GIF) over all its frames: 400 megapixels, ten full-budget stills or
   * 190 frames of 1080p. Decoders make every frame at the canvas size, so a 1000-frame GIF of 1000 x 1000
   * costs a gigapixel whatever its bytes.
   */
  animationMegapixels: 400,
  /**
   * A probed video or audio file: 4 hours. Every area has a shorter limit of its own (120 s to upscale, 15 s a
   * reference); this one bounds what a header may declare to the tools that read the file before that.
   */
  mediaSeconds: 4 * 3600,
  /** A probed video's frame: 8K UHD (7680 x 4320, 33 MP), the largest any source we take is shot in. */
  videoPixels: 7680 * 4320,
  /** A probed video's longer edge: 8192 px (DCI 8K); more is a crafted header, not a camera. */
  videoLongEdge: 8192,
  /** A probed video's frame rate: 240 fps, phones' slow motion; a declared 100,000 fps is a bomb of frames. */
  videoFps: 240,
} as const;

export interface PictureBudget {
  /** Megapixels of a still (default MEDIA_BUDGETS.stillMegapixels). */
  maxMegapixels?: number;
  /** Longer edge in pixels (default MEDIA_BUDGETS.stillLongEdge). */
  maxLongEdge?: number;
  /** Megapixels over all of an animation's frames (default MEDIA_BUDGETS.animationMegapixels). */
  maxAnimationMegapixels?: number;
}

export type PictureVerdict = { ok: true; size: PictureSize } | { ok: false; size: PictureSize | null; reason: string };

const MP = 1_000_000;

/**
 * Judges a picture (PNG, JPEG, WebP or GIF bytes) by its header: within budget, or why not (a phrase a
 * partner can read after "Invalid image_url: "). A header that cannot be read is over budget too: nothing may
 * decode a picture whose size is not known.
 */
export function checkPicture(bytes: Uint8Array, budget: PictureBudget = {}): PictureVerdict {
  const size = pictureSize(bytes);
  if (!size) return { ok: false, size, reason: "its size cannot be read from its header" };
  const maxMp = budget.maxMegapixels ?? MEDIA_BUDGETS.stillMegapixels;
  const maxEdge = budget.maxLongEdge ?? MEDIA_BUDGETS.stillLongEdge;
  const maxAnimation = budget.maxAnimationMegapixels ?? MEDIA_BUDGETS.animationMegapixels;
  const pixels = size.width * size.height;
  const dims = `${size.width} x ${size.height} pixels`;
  if (Math.max(size.width, size.height) > maxEdge)
    return { ok: false, size, reason: `${dims} is over the limit of ${maxEdge} pixels an edge` };
  if (pixels > maxMp * MP) return { ok: false, size, reason: `${dims} is over the limit of ${maxMp} megapixels` };
  if (size.frames > 1 && pixels * size.frames > maxAnimation * MP)
    return {
      ok: false,
      size,
      reason: `${size.frames} frames of ${dims} are over the limit of ${maxAnimation} megapixels in all`,
    };
  return { ok: true, size };
}

/** True when the picture is within budget (checkPicture without the why). */
export const pictureWithinBudget = (bytes: Uint8Array, budget?: PictureBudget): boolean =>
  checkPicture(bytes, budget).ok;

export interface ProbeBudget {
  maxSeconds?: number;
  maxPixels?: number;
  maxLongEdge?: number;
  maxFps?: number;
}

export interface ProbeExcess {
  /** What is over: the length, a stream's frame size, or its frame rate. */
  kind: "duration" | "resolution" | "fps";
  reason: string;
}

/**
 * Judges a probed file: null when within budget, else what is over and why. Every video stream counts, cover
 * art included (an attached picture is decoded like any frame, and held to the still-picture budget).
 */
export function probeOverBudget(probe: Probe, budget: ProbeBudget = {}): ProbeExcess | null {
  const maxSeconds = budget.maxSeconds ?? MEDIA_BUDGETS.mediaSeconds;
  if (!Number.isFinite(probe.durationSeconds) || probe.durationSeconds > maxSeconds)
    return {
      kind: "duration",
      reason: `a duration of ${probe.durationSeconds} s is over the limit of ${maxSeconds} s`,
    };
  for (const s of probe.streams) {
    if (s.type !== "video") continue;
    const still = s.attachedPicture === true;
    const maxPixels = still ? MEDIA_BUDGETS.stillMegapixels * MP : (budget.maxPixels ?? MEDIA_BUDGETS.videoPixels);
    const maxEdge = still ? MEDIA_BUDGETS.stillLongEdge : (budget.maxLongEdge ?? MEDIA_BUDGETS.videoLongEdge);
    const maxFps = budget.maxFps ?? MEDIA_BUDGETS.videoFps;
    const w = s.width ?? 0;
    const h = s.height ?? 0;
    if (Math.max(w, h) > maxEdge || w * h > maxPixels)
      return {
        kind: "resolution",
        reason: `a ${w} x ${h} ${still ? "picture" : "video"} is over the limit of ${maxEdge} pixels an edge and ${Math.round(maxPixels / MP)} megapixels`,
      };
    if (!still && s.fps !== undefined && s.fps > maxFps)
      return { kind: "fps", reason: `${s.fps} frames a second is over the limit of ${maxFps}` };
  }
  return null;
}
