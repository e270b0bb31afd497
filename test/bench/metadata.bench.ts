// Benchmark: metadata removal. Images: our byte surgery in MB/s over every image fixture, against exiftool
// (`exiftool -all= -tagsfromfile @ -icc_profile`, which keeps the colour profile like we do) on the same
// files in the same run. Videos: our removal (stream copy into a new container, on the native and the wasm
// engine) against a bare native `ffmpeg -c copy` remux of the same file. Both report ratios.
// Run: npx tsx test/bench/metadata.bench.ts
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMediaEngine, detectNativeFfmpeg } from "../../lib/media/index.ts";
import { imageFormatOf } from "../../plugins/metadata/image.ts";
import { cleanVideo, videoContainerOf } from "../../plugins/metadata/video.ts";

const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/media");
const files = readdirSync(FIXTURES).sort();
const images = files
  .filter((f) => /\.(jpe?g|png|webp)$/i.test(f))
  .map((f) => ({ name: f, bytes: new Uint8Array(readFileSync(join(FIXTURES, f))) }));
const videos = files
  .filter((f) => /\.(mp4|mov)$/i.test(f))
  .map((f) => ({ name: f, bytes: new Uint8Array(readFileSync(join(FIXTURES, f))) }));
const exiftool = ["/usr/bin/exiftool", "/usr/local/bin/exiftool"].find((p) => spawnSync(p, ["-ver"]).status === 0);
const dir = mkdtempSync(join(tmpdir(), "metadata-bench-"));
const mb = (n: number) => n / 1e6;

// ---- images
const ROUNDS = 200;
const totalBytes = images.reduce((n, i) => n + i.bytes.length, 0);
for (const i of images) await imageFormatOf(i.bytes)!.clean(i.bytes); // warm up the JIT
const start = performance.now();
for (let r = 0; r < ROUNDS; r++) for (const i of images) await imageFormatOf(i.bytes)!.clean(i.bytes);
const oursMs = performance.now() - start;
const oursMBs = mb(totalBytes * ROUNDS) / (oursMs / 1000);

console.log(`images: ${images.length} fixtures, ${mb(totalBytes).toFixed(2)} MB per round`);
console.log(`  ours      ${oursMBs.toFixed(1)} MB/s (${ROUNDS} rounds, ${(oursMs / ROUNDS).toFixed(2)} ms per round)`);
if (exiftool) {
  const EXIF_ROUNDS = 5;
  let exifMs = 0;
  for (let r = 0; r < EXIF_ROUNDS; r++) {
    for (const i of images) writeFileSync(join(dir, i.name), i.bytes);
    const t0 = performance.now();
    // One process for all files per round: exiftool at its best, not paying a start-up per file.
    execFileSync(
      exiftool,
      [
        "-q",
        "-q",
        "-overwrite_original",
        "-all=",
        "-tagsfromfile",
        "@",
        "-icc_profile",
        ...images.map((i) => join(dir, i.name)),
      ],
      { stdio: "ignore" },
    );
    exifMs += performance.now() - t0;
  }
  const exifMBs = mb(totalBytes * EXIF_ROUNDS) / (exifMs / 1000);
  console.log(
    `  exiftool  ${exifMBs.toFixed(1)} MB/s (${EXIF_ROUNDS} rounds, ${(exifMs / EXIF_ROUNDS).toFixed(0)} ms per round, one process per round)`,
  );
  console.log(`  ratio ours/exiftool: ${(oursMBs / exifMBs).toFixed(1)}x`);
} else console.log("  exiftool not installed: no baseline");

// ---- videos
const VIDEO_ROUNDS = 5;
const native = detectNativeFfmpeg();
const remuxMs = new Map<string, number>();
if (native) {
  for (const v of videos) {
    const input = join(dir, v.name);
    writeFileSync(input, v.bytes);
    const out = join(dir, `copy-${v.name}`);
    const t0 = performance.now();
    for (let r = 0; r < VIDEO_ROUNDS; r++)
      execFileSync("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", input, "-c", "copy", out]);
    remuxMs.set(v.name, (performance.now() - t0) / VIDEO_ROUNDS);
  }
}
console.log(`videos (${VIDEO_ROUNDS} rounds each, ms per file):`);
for (const mode of native ? (["native", "wasm"] as const) : (["wasm"] as const)) {
  const engine = createMediaEngine({ mode });
  await engine.warmup();
  for (const v of videos) {
    const container = videoContainerOf(v.bytes)!;
    await cleanVideo(engine, v.bytes, container);
    const t0 = performance.now();
    for (let r = 0; r < VIDEO_ROUNDS; r++) await cleanVideo(engine, v.bytes, container);
    const ms = (performance.now() - t0) / VIDEO_ROUNDS;
    const base = remuxMs.get(v.name);
    console.log(
      `  ${mode.padEnd(6)} ${v.name.padEnd(12)} ours ${ms.toFixed(0).padStart(5)} ms${base ? `   ffmpeg -c copy ${base.toFixed(0).padStart(4)} ms   ratio ${(ms / base).toFixed(2)}x` : ""}`,
    );
  }
  await engine.close();
}
rmSync(dir, { recursive: true, force: true });
