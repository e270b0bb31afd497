// Benchmark: sandbox music speed, in seconds of music per second of wall time: the JS synthesis alone
// (render.ts, one variation, sung and instrumental), and the whole sandbox provider (two variations, MP3
// encoding, probing, covers) on every media engine this machine has. Run: npx tsx test/bench/music.bench.ts
// (BENCH_RUNS to change the repetitions; the median is reported).
import process from "node:process";
import { createMediaEngine } from "../../core/media/index.ts";
import type { MusicGenerationRequest } from "../../plugins/music/provider.ts";
import { newArrangement, renderRange } from "../../plugins/music/render.ts";
import { sandboxMusicProvider } from "../../plugins/music/sandbox.ts";
import { ENGINE_MODES } from "../media/util.ts";

const runs = Number(process.env.BENCH_RUNS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const PROMPT = "an upbeat summer pop song about the sea at night";

console.log(`${runs} runs each, median`);
for (const instrumental of [false, true]) {
  const rates: number[] = [];
  let seconds = 0;
  for (let i = 0; i < runs; i++) {
    const arrangement = newArrangement({ seed: `bench${i}`, variation: 0, text: PROMPT, instrumental, hook: "Summer Sea" });
    const t = performance.now();
    renderRange({ arrangement, lyrics: PROMPT }, 0, arrangement.seconds);
    rates.push(arrangement.seconds / ((performance.now() - t) / 1000));
    seconds = arrangement.seconds;
  }
  console.log(`synthesis (${instrumental ? "instrumental" : "sung"}, ~${seconds.toFixed(0)} s a song): ${median(rates).toFixed(1)} s/s`);
}

for (const mode of ENGINE_MODES) {
  const media = createMediaEngine({ mode });
  const provider = sandboxMusicProvider({ latencyMs: 0, media: () => media }).provider("V5_5")!;
  const request = (prompt: string): MusicGenerationRequest => ({ model: "V5_5", prompt, custom: false, style: null, title: null, instrumental: false, signal: new AbortController().signal, onProgress() {} });
  // The wasm core's compile and the worker start are paid once per process, not per request.
  await provider.generate(request("warm up"));
  const rates: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const tracks = await provider.generate(request(`${PROMPT} ${i}`));
    rates.push(tracks.reduce((s, track) => s + track.duration, 0) / ((performance.now() - t) / 1000));
  }
  console.log(`provider on ${media.kind} (two variations, MP3 192k, covers): ${median(rates).toFixed(1)} s/s`);
  await media.close();
}
