// Benchmark: what burning captions costs. A 1080p H.264/AAC clip gets a card every 2 s (three words each, the
// tiktok preset: stroked face, soft offset shadow, so libass draws three layers with a blur), burned with the
// job's own arguments (burn.ts burnArgs), and the same clip is re-encoded bare with the same arguments minus the
// subtitles filter (libx264 at the same preset and crf, the same audio): the encode a burn cannot avoid. Reported
// per engine: seconds, speed as a multiple of real time, and burn/bare (the burn's overhead over the encode) in
// wall time and in CPU time (the ffmpeg child's on native, the worker's on wasm), the latter barely moved by
// other load on the machine.
// Native runs a 60 s clip; ffmpeg.wasm (single-threaded) a shorter one, WASM_SECONDS (default 10): a 60 s 1080p
// wasm burn takes far longer than the benchmark should (see the printed per-second figures to extrapolate).
// Run: npx tsx test/bench/captions-burn.bench.ts   (BENCH_REPS=n, default 2; NATIVE_SECONDS, WASM_SECONDS)
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import { buildAss } from "../../plugins/captions/render/ass.ts";
import { BURN_ENCODE, BURN_FILES, burnArgs } from "../../plugins/captions/render/burn.ts";
import { fontByKey, readFont } from "../../plugins/captions/render/fonts.ts";
import { PRESETS } from "../../plugins/captions/style/input.ts";
import type { CaptionStyle, Card, Frame } from "../../plugins/captions/types.ts";

const REPS = Number(process.env.BENCH_REPS ?? 2);
const SECONDS = { native: Number(process.env.NATIVE_SECONDS ?? 60), wasm: Number(process.env.WASM_SECONDS ?? 10) };
const FRAME: Frame = { width: 1920, height: 1080, fps: 25 };
// The preset as style-options lists it (the bench burns what a partner picking "tiktok" gets).
const TIKTOK: CaptionStyle = PRESETS.find((p) => p.key === "tiktok")!.style;
const WORDS = "the quick brown fox jumps over a lazy dog while seven tired people watch the evening news".split(" ");

function cardsFor(seconds: number): Card[] {
  const cards: Card[] = [];
  for (let t = 0, i = 0; t + 1.8 <= seconds; t += 2, i += 3) {
    cards.push({ start: t, end: t + 1.8, text: [0, 1, 2].map((k) => WORDS[(i + k) % WORDS.length]).join(" ") });
  }
  return cards;
}

/** CPU seconds used so far by this process (its threads: the wasm workers) and its finished children (native ffmpeg). */
function cpuSeconds(): number {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    children = (Number(f[13]) + Number(f[14])) / 100; // cutime + cstime, in clock ticks (USER_HZ = 100)
  } catch {
    // not Linux: the children's time is unknown
  }
  return (own.user + own.system) / 1e6 + children;
}

interface Timing {
  wall: number;
  cpu: number;
}

/**
 * Bare and burn alternate (bare, burn, bare, burn, ...) so that a change in the machine's load (2 CPUs shared
 * with other sessions) hits both alike; the best wall time and the least CPU time of each are kept.
 */
async function alternate(
  cases: Record<"bare" | "burn", () => Promise<unknown>>,
): Promise<Record<"bare" | "burn", Timing>> {
  const out = { bare: { wall: Infinity, cpu: Infinity }, burn: { wall: Infinity, cpu: Infinity } };
  for (let i = 0; i < REPS; i++) {
    for (const name of ["bare", "burn"] as const) {
      const c0 = cpuSeconds();
      const t0 = performance.now();
      await cases[name]();
      out[name].wall = Math.min(out[name].wall, (performance.now() - t0) / 1000);
      out[name].cpu = Math.min(out[name].cpu, cpuSeconds() - c0);
    }
  }
  return out;
}

const font = fontByKey(TIKTOK.font)!;
const fontBytes = await readFont(font);
const modes: Array<"native" | "wasm"> = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
const maker = createMediaEngine({ mode: modes[0]! });

console.log(
  `captions burn vs bare x264 re-encode (preset ${BURN_ENCODE.preset}, crf ${BURN_ENCODE.crf}), ${FRAME.width}x${FRAME.height} ${FRAME.fps} fps, tiktok style, best of ${REPS}, bare and burn alternating`,
);
console.log(
  `  load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} (2 CPUs shared with other sessions)`,
);
for (const mode of modes) {
  const seconds = SECONDS[mode];
  const clip = await generateTestVideo(
    maker,
    { ...FRAME, seconds, font: false, seed: "captions-burn" },
    { timeoutMs: 3_600_000 },
  );
  const cards = cardsFor(seconds);
  const ass = new TextEncoder().encode(buildAss(cards, TIKTOK, font, FRAME));
  const burn = burnArgs({ audioCodec: null });
  const vf = burn.indexOf("-vf");
  const bare = [...burn.slice(0, vf), ...burn.slice(vf + 2)];
  const engine: MediaEngine = createMediaEngine({ mode });
  await engine.warmup();
  const io = {
    inputs: { [BURN_FILES.source]: clip, [BURN_FILES.ass]: ass },
    fonts: { [font.file]: fontBytes },
    outputs: [BURN_FILES.output],
    timeoutMs: 3_600_000,
  };
  const t = await alternate({
    bare: () => engine.run(bare, { ...io, inputs: { [BURN_FILES.source]: clip }, fonts: undefined }),
    burn: () => engine.run(burn, io),
  });
  await engine.close();
  const line =
    `  ${mode.padEnd(6)} ${seconds} s clip (${(clip.byteLength / 1e6).toFixed(1)} MB, ${cards.length} cards): ` +
    `burn ${t.burn.wall.toFixed(1)} s wall (${(seconds / t.burn.wall).toFixed(2)}x real time), bare ${t.bare.wall.toFixed(1)} s (${(seconds / t.bare.wall).toFixed(2)}x real time), ` +
    `burn/bare ${(t.burn.wall / t.bare.wall).toFixed(2)} wall, ${(t.burn.cpu / t.bare.cpu).toFixed(2)} CPU (${t.burn.cpu.toFixed(1)} / ${t.bare.cpu.toFixed(1)} CPU s)`;
  console.log(line);
}
await maker.close();
console.log(
  `  load average at end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
process.exit(0);
