// Pixels of pictures and clips as ffmpeg decodes them (never as our own writers meant them): frames, pictures
// scaled to a box, mean absolute differences and mean colours of regions. Used where a test checks that an
// output shows what it was given (issue 36 item 6).
import type { MediaEngine } from "../../lib/media/index.ts";
import type { CardBox } from "../../lib/sandbox.ts";
import { encodePng } from "../../plugins/images/png.ts";

export type Rgb = [number, number, number];

/** A 3:4 picture in four quadrants of strong colours: easy to find, and nothing like a gradient or a test scene. */
export function character(
  w = 96,
  h = 128,
  q: [Rgb, Rgb, Rgb, Rgb] = [
    [220, 40, 40],
    [240, 210, 30],
    [250, 250, 250],
    [20, 30, 120],
  ],
) {
  const px = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) px.set(q[(y < h / 2 ? 0 : 2) + (x < w / 2 ? 0 : 1)]!, (y * w + x) * 3);
  return { bytes: encodePng(w, h, px, 3), mimeType: "image/png" };
}
/** One colour with a small white square in a corner (its dominant colour is the fill). */
export function flat(rgb: Rgb, w = 120, h = 160) {
  const px = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) px.set(x < 12 && y < 12 ? [255, 255, 255] : rgb, (y * w + x) * 3);
  return { bytes: encodePng(w, h, px, 3), mimeType: "image/png" };
}

export interface Frame {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** A frame as ffmpeg decodes it: the picture itself, or a clip's frame at `t`. */
export async function decode(engine: MediaEngine, bytes: Uint8Array, ext: string, t?: number): Promise<Frame> {
  const probe = await engine.probe(bytes, `in.${ext}`);
  const v = probe.streams.find((s) => s.type === "video")!;
  const seek = t === undefined ? [] : ["-ss", t.toFixed(3)];
  const out = await engine.run(
    [...seek, "-i", `in.${ext}`, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "f.rgb"],
    { inputs: { [`in.${ext}`]: bytes }, outputs: ["f.rgb"] },
  );
  return { width: v.width!, height: v.height!, rgb: out["f.rgb"]! };
}

/** A picture scaled by ffmpeg to cover exactly w x h (centre crop): what a card of that box should look like. */
export async function scaledTo(engine: MediaEngine, bytes: Uint8Array, w: number, h: number): Promise<Frame> {
  const out = await engine.run(
    [
      "-i",
      "in.png",
      "-vf",
      `scale=${w}:${h}:force_original_aspect_ratio=increase,crop=${w}:${h}`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "f.rgb",
    ],
    { inputs: { "in.png": bytes }, outputs: ["f.rgb"] },
  );
  return { width: w, height: h, rgb: out["f.rgb"]! };
}

/** Mean absolute difference per channel between `box` of `a` and all of `b` (b is box-sized), or two same-sized boxes. */
export function mad(
  a: Frame,
  box: CardBox,
  b: Frame,
  bBox: CardBox = { x: 0, y: 0, width: b.width, height: b.height },
): number {
  let sum = 0;
  for (let y = 0; y < box.height; y++) {
    for (let x = 0; x < box.width; x++) {
      const i = ((box.y + y) * a.width + box.x + x) * 3;
      const j = ((bBox.y + y) * b.width + bBox.x + x) * 3;
      for (let c = 0; c < 3; c++) sum += Math.abs(a.rgb[i + c]! - b.rgb[j + c]!);
    }
  }
  return sum / (box.width * box.height * 3);
}

export function meanOf(a: Frame, box: CardBox): Rgb {
  const sum = [0, 0, 0];
  for (let y = box.y; y < box.y + box.height; y++)
    for (let x = box.x; x < box.x + box.width; x++)
      for (let c = 0; c < 3; c++) sum[c]! += a.rgb[(y * a.width + x) * 3 + c]!;
  return sum.map((s) => s / (box.width * box.height)) as Rgb;
}

export const whole = (f: Frame): CardBox => ({ x: 0, y: 0, width: f.width, height: f.height });
/** The box shrunk by `m` pixels each side (the card's edge is where scaling and chroma subsampling blur). */
export const inset = (b: CardBox, m = 4): CardBox => ({
  x: b.x + m,
  y: b.y + m,
  width: b.width - 2 * m,
  height: b.height - 2 * m,
});
