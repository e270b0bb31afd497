// Benchmark: native ffmpeg vs ffmpeg.wasm on the same argument lists, so operators know what the embedded
// default costs: a 10 s 1080p MP4 → MOV remux (stream copy) and a 5 s 720p libx264 + AAC encode (the
// sandbox's test video job). Each (engine, operation) runs in its own child process so that peak RSS belongs
// to that case alone; for native the ffmpeg child's own peak (VmHWM) is reported as well, since its memory is
// not in Node's.
// Run: npx tsx test/bench/media.bench.ts   (BENCH_REPS=n, default 2; the best time is reported)
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg, type MediaEngine, testVideoJob } from "../../lib/media/index.ts";

type Mode = "native" | "wasm";
type Op = "remux" | "encode";

// The encode: the sandbox's own test video job (lib/media/generate.ts, testsrc2 with a tone), at 720p with
// x264's veryfast preset and no text.
const ENCODE = testVideoJob({
  width: 1280,
  height: 720,
  seconds: 5,
  preset: "veryfast",
  font: false,
  output: "out.mp4",
});

const OPS: Record<
  Op,
  { label: string; args: string[]; inputs: (dir: string) => Record<string, Uint8Array>; outputs: string[] }
> = {
  remux: {
    label: "remux 10 s 1080p mp4→mov (copy)",
    args: ["-i", "in.mp4", "-map", "0", "-c", "copy", "out.mov"],
    inputs: (dir) => ({ "in.mp4": new Uint8Array(readFileSync(join(dir, "in-1080p.mp4"))) }),
    outputs: ["out.mov"],
  },
  encode: {
    label: "encode 5 s 720p libx264+aac",
    args: ENCODE.args,
    inputs: () => ENCODE.inputs,
    outputs: ENCODE.outputs,
  },
};

/** Peak resident memory (MB) of ffmpeg processes started by this process, sampled from /proc. */
function childPeakSampler(): { stop(): number } {
  let peak = 0;
  const tick = () => {
    let pids: string[] = [];
    try {
      pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
    } catch {
      return;
    }
    for (const pid of pids) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (ppid !== process.pid) continue;
        const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
        peak = Math.max(peak, hwm);
      } catch {
        // the process ended between listing and reading
      }
    }
  };
  const timer = setInterval(tick, 20);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

/** Child side: run one case and print one JSON line. */
async function runCase(mode: Mode, op: Op, dir: string, reps: number) {
  const engine: MediaEngine = createMediaEngine({ mode });
  const w0 = performance.now();
  await engine.warmup();
  const warmupMs = performance.now() - w0;
  const spec = OPS[op];
  const inputs = spec.inputs(dir);
  const times: number[] = [];
  const sampler = childPeakSampler();
  let outBytes = 0;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const out = await engine.run(spec.args, { inputs, outputs: spec.outputs });
    times.push(performance.now() - t0);
    outBytes = out[spec.outputs[0]!]!.byteLength;
  }
  const childPeakMb = sampler.stop();
  await engine.close();
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(
    `${JSON.stringify({ mode, op, warmupMs, bestMs: Math.min(...times), meanMs: times.reduce((a, b) => a + b, 0) / times.length, peakRssMb, childPeakMb, outBytes })}\n`,
  );
}

interface Result {
  mode: Mode;
  op: Op;
  warmupMs: number;
  bestMs: number;
  meanMs: number;
  peakRssMb: number;
  childPeakMb: number;
  outBytes: number;
}

function spawnCase(mode: Mode, op: Op, dir: string, reps: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, import.meta.filename!, "--case", mode, op, dir, String(reps)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.on("close", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0 || !line.startsWith("{")) return reject(new Error(`case ${mode}/${op} failed (${code}): ${out}`));
      resolve(JSON.parse(line));
    });
  });
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (n: number) => (n ? `${Math.round(n)} MB` : "-");

async function main() {
  const reps = Math.max(1, Number(process.env.BENCH_REPS ?? 2));
  const modes: Mode[] = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
  const dir = mkdtempSync(join(tmpdir(), "media-bench-"));
  try {
    // The remux input: a real H.264/AAC 1080p file at a camera-like bitrate (noise keeps x264 from squeezing the
    // test pattern to nothing), made with the fastest engine available.
    const gen = createMediaEngine({ mode: modes[0] });
    const t0 = performance.now();
    const job = testVideoJob({
      width: 1920,
      height: 1080,
      seconds: 10,
      preset: "veryfast",
      seed: "bench",
      output: "in.mp4",
    });
    const vf = job.args.indexOf("-vf") + 1;
    job.args[vf] = `noise=alls=12:allf=t,${job.args[vf]}`;
    job.args.splice(job.args.indexOf("-crf"), 2, "-b:v", "8M", "-maxrate", "8M", "-bufsize", "16M");
    const input = (await gen.run(job.args, { inputs: job.inputs, outputs: job.outputs }))["in.mp4"]!;
    await gen.close();
    writeFileSync(join(dir, "in-1080p.mp4"), input);
    console.log(
      `input: 10 s 1920x1080 H.264/AAC, ${(input.byteLength / 1e6).toFixed(1)} MB (made on ${modes[0]} in ${s(performance.now() - t0)})`,
    );
    console.log(
      `machine: ${process.platform} ${process.arch}, node ${process.version}, ${(await import("node:os")).availableParallelism()} CPUs; reps: ${reps} (best shown)\n`,
    );

    const results: Result[] = [];
    for (const op of Object.keys(OPS) as Op[])
      for (const mode of modes) results.push(await spawnCase(mode, op, dir, reps));

    const rows: string[][] = [
      ["operation", "engine", "time (best)", "mean", "wasm/native", "peak RSS node", "peak RSS ffmpeg", "engine load"],
    ];
    for (const op of Object.keys(OPS) as Op[]) {
      const native = results.find((r) => r.op === op && r.mode === "native");
      for (const r of results.filter((x) => x.op === op)) {
        rows.push([
          OPS[op].label,
          r.mode,
          s(r.bestMs),
          s(r.meanMs),
          r.mode === "wasm" && native ? `${(r.bestMs / native.bestMs).toFixed(1)}x` : "",
          mb(r.peakRssMb),
          r.mode === "native" ? mb(r.childPeakMb) : "(in node)",
          r.mode === "wasm" ? s(r.warmupMs) : "-",
        ]);
      }
    }
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
    const line = (row: string[]) => `| ${row.map((cell, c) => cell.padEnd(widths[c]!)).join(" | ")} |`;
    console.log(line(rows[0]!));
    console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
    for (const row of rows.slice(1)) console.log(line(row));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const argv = process.argv.slice(2);
if (argv[0] === "--case") await runCase(argv[1] as Mode, argv[2] as Op, argv[3]!, Number(argv[4]));
else await main();
