// Sandboxes use the references they are given (issue 36 item 6), checked on the pixels as ffmpeg decodes them:
// the image sandbox paints an uploaded reference (read at submit, as an upstream receives it) into the frame as
// its subject and takes its colours, where a reference by URL only seeds it; the video sandbox starts on the
// start frame and, given a character reference too (Script Runner's character-locked mode), holds the
// character's card on it from the first frame, so locked and scene-driven first frames differ there and only
// there; reference images without a frame make the subject and the palette of the scene; Omni characters stand
// in a scene made of reference images. Small sizes, on every media engine present.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { pollToEnd, type InPlace } from "../../lib/upstream.ts";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import { cardBox, cardRow, type CardBox } from "../../lib/sandbox.ts";
import { ENGINE_MODES } from "../media/util.ts";
import type { ImageGenerationRequest, OmniGenerationRequest, VideoGenerationRequest } from "../../contracts/index.ts";
import { sandboxImageProvider } from "../../plugins/images/sandbox.ts";
import { sandboxVideoProvider } from "../../plugins/video/sandbox.ts";
import { sandboxOmniProvider } from "../../plugins/omni/sandbox.ts";
import { encodePng } from "../../plugins/images/png.ts";

type Rgb = [number, number, number];

/** A 3:4 picture in four quadrants of strong colours: easy to find, and nothing like a gradient or a test scene. */
export function character(w = 96, h = 128, q: [Rgb, Rgb, Rgb, Rgb] = [[220, 40, 40], [240, 210, 30], [250, 250, 250], [20, 30, 120]]) {
  const px = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) px.set(q[(y < h / 2 ? 0 : 2) + (x < w / 2 ? 0 : 1)]!, (y * w + x) * 3);
  return { bytes: encodePng(w, h, px, 3), mimeType: "image/png" };
}
/** One colour with a small white square in a corner (its dominant colour is the fill). */
function flat(rgb: Rgb, w = 120, h = 160) {
  const px = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) px.set(x < 12 && y < 12 ? [255, 255, 255] : rgb, (y * w + x) * 3);
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
  const out = await engine.run([...seek, "-i", `in.${ext}`, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "f.rgb"], { inputs: { [`in.${ext}`]: bytes }, outputs: ["f.rgb"] });
  return { width: v.width!, height: v.height!, rgb: out["f.rgb"]! };
}

/** A picture scaled by ffmpeg to cover exactly w x h (centre crop): what a card of that box should look like. */
export async function scaledTo(engine: MediaEngine, bytes: Uint8Array, w: number, h: number): Promise<Frame> {
  const out = await engine.run(["-i", "in.png", "-vf", `scale=${w}:${h}:force_original_aspect_ratio=increase,crop=${w}:${h}`, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "f.rgb"], { inputs: { "in.png": bytes }, outputs: ["f.rgb"] });
  return { width: w, height: h, rgb: out["f.rgb"]! };
}

/** Mean absolute difference per channel between `box` of `a` and all of `b` (b is box-sized), or two same-sized boxes. */
export function mad(a: Frame, box: CardBox, b: Frame, bBox: CardBox = { x: 0, y: 0, width: b.width, height: b.height }): number {
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
  for (let y = box.y; y < box.y + box.height; y++) for (let x = box.x; x < box.x + box.width; x++) for (let c = 0; c < 3; c++) sum[c]! += a.rgb[(y * a.width + x) * 3 + c]!;
  return sum.map((s) => s / (box.width * box.height)) as Rgb;
}

const whole = (f: Frame): CardBox => ({ x: 0, y: 0, width: f.width, height: f.height });
/** The box shrunk by `m` pixels each side (the card's edge is where scaling and chroma subsampling blur). */
const inset = (b: CardBox, m = 4): CardBox => ({ x: b.x + m, y: b.y + m, width: b.width - 2 * m, height: b.height - 2 * m });

for (const mode of ENGINE_MODES) {
  const t = suite(`sandbox references on ${mode}`);
  const engine = createMediaEngine({ mode });
  t.after(async () => {
    await engine.close();
  });

  t("image sandbox: an uploaded reference is the frame's subject and gives it its colours; one by URL does not", async () => {
    const provider = sandboxImageProvider({ latencyMs: 0 }).route("primary")!;
    const [W, H] = [360, 640];
    const pic = character();
    const green = flat([20, 190, 70]);
    const base: Omit<ImageGenerationRequest, "references"> = { prompt: "A harbour at dawn. Featuring the character.", model: "image-a-pro", width: W, height: H, background: "auto", index: 0 };
    // Read at submit: the reader is a function, which no recorded request can carry.
    const uploaded = await pollToEnd(provider, { ...base, references: [{ id: "sha-1", mimeType: "image/png", read: async () => pic.bytes }] });
    const byUrl = await pollToEnd(provider, { ...base, references: [{ id: "https://example.com/c.png", url: "https://example.com/c.png" }] });
    const box = cardBox(W, H, "subject");
    const want = await scaledTo(engine, pic.bytes, box.width, box.height);
    const got = await decode(engine, uploaded.bytes, "png");
    assert.equal([got.width, got.height], [W, H]);
    const near = mad(got, inset(box), want, inset({ ...box, x: 0, y: 0 }));
    const far = mad(await decode(engine, byUrl.bytes, "png"), inset(box), want, inset({ ...box, x: 0, y: 0 }));
    assert.ok(near < 12, `the card region is the character's picture: mean difference ${near.toFixed(1)}`);
    assert.ok(far > 50, `a reference the sandbox cannot read leaves the character out: ${far.toFixed(1)}`);

    // A strong green reference: the background below the card is green.
    const greenFrame = await decode(engine, (await pollToEnd(provider, { ...base, references: [{ id: "sha-2", mimeType: "image/png", read: async () => green.bytes }] })).bytes, "png");
    const below = { x: 0, y: box.y + box.height + 2, width: W, height: H - box.y - box.height - 2 };
    const [r, g, b] = meanOf(greenFrame, below);
    assert.ok(g > r + 60 && g > b + 60, `green carried: ${[r, g, b].map(Math.round)}`);
  });

  t("video sandbox: character-locked holds the character's card from the first frame; scene-driven starts on the frame alone", async () => {
    const provider = sandboxVideoProvider({ latencyMs: 0, media: () => engine }).forModel("gamma-3.1-fast")!;
    const [W, H] = [360, 640];
    const start = flat([40, 110, 170], 180, 320);
    const pic = character();
    const base: InPlace<VideoGenerationRequest> = { prompt: "A harbour at dawn.\nLine 1.", negativePrompt: null, model: "gamma-3.1-fast", width: W, height: H, seconds: 2, sound: false, startFrame: start, referenceImages: [], referenceVideos: [], referenceAudio: [] };
    const locked = await pollToEnd(provider, { ...base, referenceImages: [pic] });
    const driven = await pollToEnd(provider, base);
    const [l0, d0] = [await decode(engine, locked.bytes, "mp4", 0), await decode(engine, driven.bytes, "mp4", 0)];
    const startPx = await scaledTo(engine, start.bytes, W, H);
    const box = cardBox(W, H, "corner");
    const want = await scaledTo(engine, pic.bytes, box.width, box.height);
    const local = inset({ ...box, x: 0, y: 0 });
    assert.ok(mad(d0, whole(d0), startPx) < 8, `scene-driven starts on the start frame: ${mad(d0, whole(d0), startPx).toFixed(1)}`);
    assert.ok(mad(l0, inset(box), want, local) < 15, `locked: the corner is the character: ${mad(l0, inset(box), want, local).toFixed(1)}`);
    assert.ok(mad(l0, inset(box), d0, inset(box)) > 50, "the first frames differ where the character is");
    const top = { x: 0, y: 0, width: W, height: box.y - 4 };
    assert.ok(mad(l0, top, d0, top) < 6, `and are the same scene elsewhere: ${mad(l0, top, d0, top).toFixed(1)}`);
    // Held to the end, not only shown at the start.
    const l1 = await decode(engine, locked.bytes, "mp4", 1.9);
    assert.ok(mad(l1, inset(box), want, local) < 15, `still the character at the end: ${mad(l1, inset(box), want, local).toFixed(1)}`);
  });

  t("video sandbox: reference images without a frame are the subject and the palette", async () => {
    const provider = sandboxVideoProvider({ latencyMs: 0, media: () => engine }).forModel("beta-2-direct")!;
    const [W, H] = [360, 640];
    const magenta = flat([200, 30, 170]);
    const base: InPlace<VideoGenerationRequest> = { prompt: "A dancer", negativePrompt: null, model: "beta-2-direct", width: W, height: H, seconds: 2, sound: false, referenceImages: [], referenceVideos: [], referenceAudio: [] };
    const withRef = await decode(engine, (await pollToEnd(provider, { ...base, referenceImages: [magenta] })).bytes, "mp4", 1);
    const without = await decode(engine, (await pollToEnd(provider, base)).bytes, "mp4", 1);
    const box = cardBox(W, H, "subject");
    const want = await scaledTo(engine, magenta.bytes, box.width, box.height);
    assert.ok(mad(withRef, inset(box, 8), want, inset({ ...box, x: 0, y: 0 }, 8)) < 15, "the subject is the reference's picture");
    // Above the card: the scene's own colours (the prompt's words scroll through it, dark boxes included).
    const above = { x: 0, y: 0, width: W, height: box.y };
    const [r, g, b] = meanOf(withRef, above);
    assert.ok(r > g + 50 && b > g + 50, `magenta carried: ${[r, g, b].map(Math.round)}`);
    const [r0, g0, b0] = meanOf(without, above);
    assert.not.ok(r0 > g0 + 50 && b0 > g0 + 50, `the test scene is not magenta: ${[r0, g0, b0].map(Math.round)}`);
  });

  t("omni sandbox: characters stand in a scene made of the reference images", async () => {
    const provider = sandboxOmniProvider({ latencyMs: 0, media: () => engine });
    const [W, H] = [540, 960];
    const pic = character();
    const req: InPlace<OmniGenerationRequest> = {
      prompt: "Mia on a green hill",
      model: "omni",
      width: W,
      height: H,
      seconds: 4,
      seed: null,
      characters: [{ id: "svc-00000001", name: "Mia", description: "Mia", image: pic, voice: null }],
      voices: [],
      referenceImages: [flat([20, 190, 70], 270, 480)],
      referenceVideo: null,
    };
    const frame = await decode(engine, (await pollToEnd(provider, req)).bytes, "mp4", 0.2);
    const [box] = cardRow(W, H, 1);
    const want = await scaledTo(engine, pic.bytes, box!.width, box!.height);
    const d = mad(frame, inset(box!), want, inset({ ...box!, x: 0, y: 0 }));
    assert.ok(d < 15, `the character's picture in the middle: ${d.toFixed(1)}`);
    const [r, g, b] = meanOf(frame, { x: 0, y: H - 80, width: W, height: 60 });
    assert.ok(g > r + 60 && g > b + 60, `the green reference is the scene: ${[r, g, b].map(Math.round)}`);
  });

  t.run();
}
