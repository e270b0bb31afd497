// Benchmark: the Omni sandbox's render time for an 8 s clip at 1080p and at 4k (9:16, one character speaking
// a quoted line, no latency: submitted and polled in place with pollToEnd, so the time is the render's), on
// the native and the wasm engine, as a ratio of the clip's duration (render seconds / 8: below 1 is faster
// than real time). The baseline in the same run is the clip's own length; the table adds wasm/native. Each
// engine runs in its own child process so its peak RSS is its own.
// Run: npx tsx test/bench/omni-render.bench.ts   (OMNI_BENCH_CASES=1080p to skip 4k)
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg } from "../../lib/media/index.ts";
import { pollToEnd } from "../../lib/upstream.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { frameSize, type OmniResolution } from "../../plugins/omni/prices.ts";
import { sandboxOmniProvider } from "../../plugins/omni/sandbox.ts";
import { childEngine, runEngineChild } from "./engine-child.ts";

type Mode = "native" | "wasm";
type EngineResult = { mode: Mode; rows: Array<{ resolution: string; ms: number }>; peakRssMb: number };
const SECONDS = 8;
const CASES = (process.env.OMNI_BENCH_CASES ?? "1080p,4k").split(",") as OmniResolution[];

function face(): Uint8Array {
  const w = 480,
    h = 640;
  const px = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) px.set([(x * 255) / w, (y * 255) / h, 120], (y * w + x) * 3);
  return encodePng(w, h, px, 3);
}

async function runEngine(mode: Mode) {
  const engine = createMediaEngine({ mode });
  await engine.warmup();
  const provider = sandboxOmniProvider({ latencyMs: 0, media: () => engine });
  const rows: Array<{ resolution: string; ms: number }> = [];
  for (const resolution of CASES) {
    const { width, height } = frameSize(resolution, "9:16");
    const t0 = performance.now();
    await pollToEnd(provider, {
      prompt: 'Nova looks up. Nova: "The storm is coming, we should head back to the harbour now."',
      model: "omni",
      width,
      height,
      seconds: SECONDS,
      seed: 1,
      characters: [
        {
          id: "svc-00000001",
          name: "Nova",
          description: "a sailor",
          image: { bytes: face(), mimeType: "image/png" },
          voice: { id: "v", name: "Nova", base_voice: "kore", description: "" },
        },
      ],
      voices: [],
      referenceImages: [],
      referenceVideo: null,
    });
    rows.push({ resolution, ms: performance.now() - t0 });
  }
  await engine.close();
  process.stdout.write(`${JSON.stringify({ mode, rows, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

const child = childEngine();
if (child) {
  await runEngine(child);
} else {
  const modes: Mode[] = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
  const results = [];
  for (const mode of modes) results.push(await runEngineChild<EngineResult>(import.meta.url, mode));
  console.log(
    `Omni sandbox render, ${SECONDS} s 9:16 clip, one character speaking (ratio = render time / clip duration)`,
  );
  console.log("engine   resolution   render s   ratio    peak RSS MB");
  for (const r of results)
    for (const row of r.rows)
      console.log(
        `${r.mode.padEnd(8)} ${row.resolution.padEnd(12)} ${(row.ms / 1000).toFixed(1).padStart(8)}   ${(row.ms / 1000 / SECONDS).toFixed(2).padStart(5)}    ${r.peakRssMb.toFixed(0)}`,
      );
  if (results.length === 2) {
    for (const resolution of CASES) {
      const n = results[0]!.rows.find((x) => x.resolution === resolution)!.ms;
      const w = results[1]!.rows.find((x) => x.resolution === resolution)!.ms;
      console.log(`wasm/native at ${resolution}: ${(w / n).toFixed(2)}`);
    }
  }
}
