// Benchmark: sandbox music speed, in seconds of music per second of wall time: the JS render alone (the
// baseline: the part no engine touches), and the whole provider call (two variations rendered, encoded to
// MP3 and covered; submitted and polled in place with no latency, so the time is the render's) on the native
// and the wasm engine, for a generation and for an extension of it.
// Run: npx tsx test/bench/music.bench.ts  (BENCH_RUNS to change the repetitions; the median is reported).
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg, type MediaEngine } from "../../lib/media/index.ts";
import { pollToEnd } from "../../lib/upstream.ts";
import { sandboxMusicProvider } from "../../plugins/music/sandbox.ts";
import { newArrangement, renderRange } from "../../plugins/music/synth.ts";
import { musicExtension, musicGeneration, ownTrackSource } from "../helpers/music-requests.ts";

const runs = Number(process.env.BENCH_RUNS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const request = musicGeneration();

const renderRates: number[] = [];
for (let i = 0; i < runs; i++) {
  const a = newArrangement({
    seed: `bench-${i}`,
    variation: 0,
    text: request.prompt,
    instrumental: false,
    hook: "Sea",
  });
  const t = performance.now();
  renderRange({ arrangement: a, lyrics: request.prompt }, 0, a.seconds);
  renderRates.push(a.seconds / ((performance.now() - t) / 1000));
}
const baseline = median(renderRates);
console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}; ${runs} runs each, median`);
console.log(`render only (JS, one track): ${baseline.toFixed(1)} s of music per s`);
console.log("| engine | call | music made | s of music per s | ratio to render only |");
console.log("|---|---|---|---|---|");

const engines: Array<[string, MediaEngine]> = [];
if (detectNativeFfmpeg()) engines.push(["native", createMediaEngine({ mode: "native" })]);
engines.push(["wasm", createMediaEngine({ mode: "wasm" })]);
for (const [name, engine] of engines) {
  const provider = sandboxMusicProvider({ latencyMs: 0, media: () => engine }).provider("V5_5")!;
  await pollToEnd(provider.generate, { ...request, prompt: "warm up" }); // the wasm compile is paid once per process
  const gen: number[] = [];
  const ext: number[] = [];
  const made = { gen: 0, ext: 0 };
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    const tracks = await pollToEnd(provider.generate, { ...request, prompt: `${request.prompt} ${i}` });
    made.gen = tracks.reduce((s, tr) => s + tr.duration, 0);
    gen.push(made.gen / ((performance.now() - t) / 1000));
    t = performance.now();
    const out = await pollToEnd(provider.extend, musicExtension(ownTrackSource(tracks[0]!), { continueAt: 15 }));
    made.ext = out.reduce((s, tr) => s + tr.duration, 0);
    ext.push(made.ext / ((performance.now() - t) / 1000));
  }
  console.log(
    `| ${name} | generate (2 tracks) | ${made.gen.toFixed(1)} s | ${median(gen).toFixed(1)} | ${(median(gen) / baseline).toFixed(2)} |`,
  );
  console.log(
    `| ${name} | extend at 15 s (2 tracks) | ${made.ext.toFixed(1)} s | ${median(ext).toFixed(1)} | ${(median(ext) / baseline).toFixed(2)} |`,
  );
  await engine.close();
}
