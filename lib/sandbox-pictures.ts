// Pictures for sandbox providers (issue 36 item 6): what a sandbox needs to make its output visibly use the
// references it is given. A character or reference picture is decoded and sized once with libvips (the media
// engine's wasm-vips), then either painted into a frame (the image sandbox) or overlaid as one small still on
// every frame of a clip (the video and Omni sandboxes): one composite per frame, no per-frame scaling. The
// references' dominant colours give a scene without a picture of its own its palette.
//
// Card geometry is shared here so tests can find the card in an output and compare its pixels with the
// reference's own.
import { checkPicture } from "./media/budgets.ts";
import { MediaError } from "./media/errors.ts";
import { encodeImage, type VipsImage, withVips } from "./media/vips.ts";

export type Rgb = [number, number, number];

export interface SandboxPicture {
  width: number;
  height: number;
  /** 8-bit RGB, row by row. */
  rgb: Uint8Array;
}

export interface CardBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/** 8-bit sRGB with three bands: alpha flattened onto mid grey (a cut-out character stays visible), grey expanded. */
function toRgb(img: VipsImage, track: <I extends VipsImage>(i: I) => I): VipsImage {
  let out = img;
  if (out.hasAlpha()) out = track(out.flatten({ background: [128, 128, 128] }));
  if (out.interpretation !== "srgb") out = track(out.colourspace("srgb"));
  if (out.format !== "uchar") out = track(out.cast("uchar"));
  if (out.bands > 3) out = track(out.extractBand(0, { n: 3 }));
  return out;
}

/** The image's pixels, copied out of the wasm heap (vips' Memory: a Uint8Array, the image being uchar). */
const pixelsOf = (img: VipsImage) => new Uint8Array(img.writeToMemory());

/** Refuses a picture over the engine's pixel budget before libvips decodes it (a plugin may not have measured it). */
function withinBudget(bytes: Uint8Array): void {
  const verdict = checkPicture(bytes);
  if (!verdict.ok) throw new MediaError("invalid_input", `sandbox reference: ${verdict.reason}`);
}

/** The picture covering exactly width x height (centre crop, orientation applied), as raw RGB. */
export async function sandboxPicture(bytes: Uint8Array, width: number, height: number): Promise<SandboxPicture> {
  withinBudget(bytes);
  return withVips("invalid_input", (vips, track) => {
    const img = toRgb(track(vips.Image.thumbnailBuffer(bytes, width, { height, size: "both", crop: "centre" })), track);
    return { width: img.width, height: img.height, rgb: pixelsOf(img) };
  });
}

/** The picture covering exactly width x height, as a PNG (what a clip overlays: ffmpeg never rescales it). */
export async function sandboxCardPng(bytes: Uint8Array, width: number, height: number): Promise<Uint8Array> {
  withinBudget(bytes);
  return withVips("invalid_input", (vips, track) => {
    const img = toRgb(track(vips.Image.thumbnailBuffer(bytes, width, { height, size: "both", crop: "centre" })), track);
    return encodeImage(img, "png", { keepIcc: false });
  });
}

/**
 * Up to `count` dominant colours, most frequent first: the picture shrunk to at most 32 px, its pixels counted
 * in 8 x 8 x 8 bins, each colour the mean of a bin's pixels; a bin closer than 60 to a colour already taken is
 * passed over, and after the first only bins holding a tenth of the pixels count (an accent is not a palette),
 * so a picture of one colour gives one.
 */
export async function dominantColours(bytes: Uint8Array, count = 3): Promise<Rgb[]> {
  withinBudget(bytes);
  const small = await withVips("invalid_input", (vips, track) =>
    pixelsOf(toRgb(track(vips.Image.thumbnailBuffer(bytes, 32, { height: 32, size: "both" })), track)),
  );
  const bins = new Map<number, { n: number; sum: Rgb }>();
  for (let i = 0; i + 2 < small.length; i += 3) {
    const r = small[i]!,
      g = small[i + 1]!,
      b = small[i + 2]!;
    const key = ((r >> 5) << 6) | ((g >> 5) << 3) | (b >> 5);
    const bin = bins.get(key) ?? { n: 0, sum: [0, 0, 0] };
    bin.n++;
    bin.sum[0] += r;
    bin.sum[1] += g;
    bin.sum[2] += b;
    bins.set(key, bin);
  }
  const out: Rgb[] = [];
  const pixels = small.length / 3;
  for (const bin of [...bins.values()].sort((a, b) => b.n - a.n)) {
    if (out.length > 0 && bin.n < pixels / 10) break;
    const c = bin.sum.map((s) => Math.round(s / bin.n)) as Rgb;
    if (out.every((o) => Math.hypot(o[0] - c[0], o[1] - c[1], o[2] - c[2]) >= 60)) out.push(c);
    if (out.length === count) break;
  }
  return out;
}

/** `0xRRGGBB`, as ffmpeg's colour options take it. */
export const hexColour = (c: Rgb) =>
  `0x${c
    .map((v) =>
      Math.max(0, Math.min(255, Math.round(v)))
        .toString(16)
        .padStart(2, "0"),
    )
    .join("")}`;

/**
 * Where a reference picture goes, always 3:4 (portrait, as a character picture usually is), even-sized:
 * - `subject`: the picture is the frame's subject, centred horizontally, a little below the middle (the image
 *   sandbox writes the prompt above it), 56 % of the frame's height at most;
 * - `corner`: a character reference over a clip that has a scene of its own (a start frame), lower left, 30 %
 *   of the width (the lower right is where Omni puts a reference video).
 */
export function cardBox(frameWidth: number, frameHeight: number, place: "subject" | "corner"): CardBox {
  const margin = Math.round(Math.min(frameWidth, frameHeight) / 30);
  if (place === "corner") {
    const width = even(frameWidth * 0.3);
    const height = even((width * 4) / 3);
    return { x: margin, y: frameHeight - height - margin, width, height };
  }
  const height = even(Math.min(frameHeight * 0.56, (frameWidth * 0.8 * 4) / 3));
  const width = even((height * 3) / 4);
  return {
    x: Math.round((frameWidth - width) / 2),
    y: Math.min(frameHeight - height - margin, Math.round(frameHeight * 0.62 - height / 2)),
    width,
    height,
  };
}

/**
 * Boxes for `n` (1-3) cards side by side, centred in the frame: characters standing in a scene made from other
 * references (Omni). Each is 3:4, at most 40 % of the frame's height, and all fit the width with margins.
 */
export function cardRow(frameWidth: number, frameHeight: number, n: number): CardBox[] {
  const margin = Math.round(Math.min(frameWidth, frameHeight) / 30);
  const byWidth = (frameWidth - (n + 1) * margin) / n;
  const width = even(Math.min(byWidth, (frameHeight * 0.4 * 3) / 4));
  const height = even((width * 4) / 3);
  const total = n * width + (n - 1) * margin;
  const x0 = Math.round((frameWidth - total) / 2);
  const y = Math.round((frameHeight - height) / 2);
  return Array.from({ length: n }, (_, i) => ({ x: x0 + i * (width + margin), y, width, height }));
}
