// The upscaler's media work without a kernel: video scaling with the same arguments on every engine this
// machine has (native ffmpeg and ffmpeg.wasm), checked by decoding; and the image resampler's worker (alpha,
// orientation, cancellation).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  createMediaEngine,
  firstAudio,
  firstVideo,
  generateTestVideo,
  isMediaError,
  loadVips,
  type MediaEngine,
} from "../../lib/media/index.ts";
import { encodePng, pngInfo } from "../../plugins/images/png.ts";
import { measureImage, planImage } from "../../plugins/upscale/image.ts";
import { type ResampleEngine, resampleEngine, upscaleImage } from "../../plugins/upscale/resample.ts";
import { measureVideo, planVideo, scaleArgs } from "../../plugins/upscale/video.ts";
import { rejection } from "../helpers/assert.ts";
import { ENGINE_MODES, fixture } from "../media/util.ts";

const maker = createMediaEngine({ mode: ENGINE_MODES[0]! });
const make = async (args: string[], out: string, inputs: Record<string, Uint8Array> = {}) =>
  (await maker.run([...args, out], { inputs, outputs: [out], timeoutMs: 120_000 }))[out]!;
const clip = await generateTestVideo(maker, { width: 320, height: 180, seconds: 1.5, font: false });
// Odd size, Motion JPEG and PCM sound in a MOV: the audio cannot be copied into MP4 and is encoded instead.
const oddMov = await make(
  [
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=161x91:rate=10:duration=1",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=1",
    "-c:v",
    "mjpeg",
    "-pix_fmt",
    "yuvj444p",
    "-c:a",
    "pcm_s16le",
    "-shortest",
  ],
  "odd.mov",
);
await maker.close();

/** First frame as a vips image. */
async function firstFrame(engine: MediaEngine, bytes: Uint8Array) {
  const png = (
    await engine.run(["-i", "in.bin", "-frames:v", "1", "f.png"], {
      inputs: { "in.bin": bytes },
      outputs: ["f.png"],
      timeoutMs: 60_000,
    })
  )["f.png"]!;
  return (await loadVips()).Image.newFromBuffer(png);
}

for (const mode of ENGINE_MODES) {
  const t = suite(`video scaling on the ${mode} engine`);
  let engine: MediaEngine;
  t.before(() => {
    engine = createMediaEngine({ mode });
  });
  t.after(async () => {
    await engine.close();
  });

  t("2x: H.264 at twice the size, the same picture, the sound copied", async () => {
    const measured = await measureVideo(clip, engine);
    assert.equal([measured.width, measured.height, measured.audio], [320, 180, "copy"]);
    const plan = planVideo(measured, 2);
    const progress: number[] = [];
    const out = (
      await engine.run(scaleArgs(measured, plan, measured.audio, engine.kind), {
        inputs: { "in.bin": clip },
        outputs: ["out.mp4"],
        durationSeconds: measured.seconds,
        onProgress: (f) => progress.push(f),
        timeoutMs: 300_000,
      })
    )["out.mp4"]!;
    const probe = await engine.probe(out, "out.mp4");
    const v = firstVideo(probe)!;
    assert.equal([v.codec, v.width, v.height], ["h264", 640, 360]);
    assert.is(firstAudio(probe)?.codec, "aac");
    assert.ok(Math.abs(probe.durationSeconds - measured.seconds) < 0.1);
    assert.is(progress.at(-1), 1);
    // Scaled back down, the first frame is the source's first frame (a real resampling, not a blank or a crop).
    const a = (await firstFrame(engine, clip)).cast("float");
    const b = (await firstFrame(engine, out)).resize(0.5, { kernel: "lanczos3" }).cast("float");
    const diff = a.subtract(b).abs().avg();
    assert.ok(diff < 6, `mean difference ${diff}`);
  });

  t("factor 1: odd edges grow to even, Motion JPEG and PCM become H.264 and AAC", async () => {
    const measured = await measureVideo(oddMov, engine);
    assert.equal([measured.width, measured.height, measured.audio], [161, 91, "aac"]);
    const plan = planVideo(measured, 1);
    assert.equal(plan, { width: 162, height: 92 });
    const out = (
      await engine.run(scaleArgs(measured, plan, measured.audio, engine.kind), {
        inputs: { "in.bin": oddMov },
        outputs: ["out.mp4"],
        timeoutMs: 300_000,
      })
    )["out.mp4"]!;
    const probe = await engine.probe(out, "out.mp4");
    assert.equal([firstVideo(probe)!.codec, firstVideo(probe)!.width, firstVideo(probe)!.height], ["h264", 162, 92]);
    assert.is(firstAudio(probe)?.codec, "aac");
  });

  t.run();
}

// Both resamplers, native libvips (sharp, when installed) and wasm-vips, take the same steps.
const RESAMPLERS: ResampleEngine[] = (await resampleEngine()) === "native" ? ["native", "wasm"] : ["wasm"];
for (const engine of RESAMPLERS) {
  const r = suite(`image resampler (${engine})`);

  r("transparent pixels do not bleed their colour into opaque ones", async () => {
    // Left half transparent red, right half opaque blue.
    const px = new Uint8Array(8 * 8 * 4);
    for (let y = 0; y < 8; y++)
      for (let x = 0; x < 8; x++) px.set(x < 4 ? [255, 0, 0, 0] : [0, 0, 255, 255], (y * 8 + x) * 4);
    const out = await upscaleImage(encodePng(8, 8, px, 4), 4, undefined, engine);
    assert.equal(pngInfo(out.bytes), { width: 32, height: 32, colorType: 6 });
    const img = (await loadVips()).Image.newFromBuffer(out.bytes);
    let blended = 0;
    for (let x = 0; x < 32; x++) {
      const [red, , blue, alpha] = img.getpoint(x, 16);
      if (alpha! < 16) continue; // next to nothing to see
      if (alpha! < 240) blended++;
      // Any visible pixel, edge ones included, is the opaque side's blue, only more or less transparent.
      assert.ok(red! < 8 && blue! > 240, `pixel ${x}: rgb ${red},_,${blue} alpha ${alpha}`);
    }
    assert.ok(blended > 0, "the edge was resampled, not copied");
  });

  r("EXIF orientation: measured, planned and made as displayed", async () => {
    const vips = await loadVips();
    const src = vips.Image.newFromBuffer(fixture("earth_apollo17.jpg")).crop(0, 0, 300, 200);
    const tagged = src.copy();
    tagged.setInt("orientation", 6); // rotate 90 to display
    const jpeg = tagged.writeToBuffer(".jpg", { keep: 31 });
    const measured = await measureImage(jpeg);
    assert.equal(measured, { format: "jpeg", width: 200, height: 300 });
    const plan = planImage(measured, 2);
    const out = await upscaleImage(jpeg, 2, undefined, engine);
    assert.equal([out.width, out.height], [plan.width, plan.height]);
    assert.equal([plan.width, plan.height], [400, 600]);
  });

  r("a cancelled resample stops, and the next one runs on a fresh worker", async () => {
    const big = fixture("C.jpg");
    const ctl = new AbortController();
    const slow = upscaleImage(big, 4, ctl.signal, engine);
    setTimeout(() => ctl.abort(), 50);
    const err = await rejection(slow);
    assert.ok(isMediaError(err) && err.code === "aborted", String(err));
    const next = await upscaleImage(fixture("test_xmp.webp"), 2, undefined, engine);
    assert.equal([next.width, next.height], [256, 256]);
  });

  r("a truncated file behind a readable header is the input's fault, not a half-grey picture", async () => {
    const png = encodePng(64, 64, new Uint8Array(64 * 64 * 3).fill(7), 3);
    const damaged = png.slice(0, 50);
    const err = await rejection(upscaleImage(damaged, 2, undefined, engine));
    assert.ok(isMediaError(err) && err.isInputError, String(err));
  });

  r.run();
}
