// Benchmark: what upscaling costs. Video: the upscaler's own argument lists (scaleArgs) for a 5 s 480x270 clip
// with sound at 2x and at 1x (enhance), on native ffmpeg and on ffmpeg.wasm, reported as seconds and as the
// wasm/native ratio (wasm uses its faster preset, as the job does). Image: both resamplers, native libvips
// through sharp (when installed) and the wasm-vips worker (Lanczos-3, enhance, PNG encode) on a 2048x1365 JPEG
// at 1x, 2x and 4x, reported as output megapixels per second and as the wasm/sharp ratio.
// Run: npx tsx test/bench/upscale.bench.ts   (BENCH_REPS=n, default 2; the best time is reported)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import type { Factor } from "../../plugins/upscale/prices.ts";
import { type ResampleEngine, resampleEngine, upscaleImage } from "../../plugins/upscale/resample.ts";
import { measureVideo, planVideo, scaleArgs } from "../../plugins/upscale/video.ts";

const REPS = Number(process.env.BENCH_REPS ?? 2);

async function best(fn: () => Promise<unknown>): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < REPS; i++) {
    const t = performance.now();
    await fn();
    min = Math.min(min, performance.now() - t);
  }
  return min / 1000;
}

const modes: Array<"native" | "wasm"> = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
const maker = createMediaEngine({ mode: modes[0]! });
const clip = await generateTestVideo(maker, { width: 480, height: 270, seconds: 5, font: false });
await maker.close();

console.log("video upscale, 5 s 480x270 H.264 + AAC source");
const times: Record<string, number> = {};
for (const mode of modes) {
  const engine: MediaEngine = createMediaEngine({ mode });
  await engine.warmup();
  const measured = await measureVideo(clip, engine);
  for (const factor of [2, 1] as Factor[]) {
    const plan = planVideo(measured, factor);
    const args = scaleArgs(measured, plan, measured.audio, engine.kind);
    const s = await best(() =>
      engine.run(args, { inputs: { "in.bin": clip }, outputs: ["out.mp4"], timeoutMs: 1_800_000 }),
    );
    times[`${mode}/${factor}`] = s;
    console.log(
      `  ${mode.padEnd(6)} ${factor}x -> ${plan.width}x${plan.height}: ${s.toFixed(2)} s (${(measured.seconds / s).toFixed(2)}x real time)`,
    );
  }
  await engine.close();
}
if (modes.length === 2)
  for (const f of [2, 1])
    console.log(`  wasm/native ratio at ${f}x: ${(times[`wasm/${f}`]! / times[`native/${f}`]!).toFixed(1)}`);

console.log("image upscale, 2048x1365 JPEG -> PNG (Lanczos-3, enhance, encode), on each resampler");
const jpeg = new Uint8Array(readFileSync(join(import.meta.dirname, "../../../shared/fixtures/media/C.jpg")));
const engines: ResampleEngine[] = (await resampleEngine()) === "native" ? ["native", "wasm"] : ["wasm"];
const rates: Record<string, number> = {};
for (const engine of engines) {
  await upscaleImage(jpeg, 1, undefined, engine); // the start (wasm-vips or sharp load) is not what is measured
  for (const factor of [1, 2, 4] as Factor[]) {
    let out = { width: 0, height: 0 };
    const s = await best(async () => (out = await upscaleImage(jpeg, factor, undefined, engine)));
    const mp = (out.width * out.height) / 1e6;
    rates[`${engine}/${factor}`] = mp / s;
    console.log(
      `  ${engine.padEnd(6)} ${factor}x -> ${out.width}x${out.height}: ${s.toFixed(2)} s, ${(mp / s).toFixed(1)} output MP/s`,
    );
  }
}
if (engines.length === 2)
  for (const f of [1, 2, 4])
    console.log(`  wasm/sharp rate at ${f}x: ${(rates[`wasm/${f}`]! / rates[`native/${f}`]!).toFixed(2)}`);
process.exit(0);
