// Benchmark: the video area's media work on the native and the wasm engine, so operators know what the
// embedded default costs: sandbox generation of 5 s and 10 s clips at 720p and 1080p (9:16, no latency), and
// the merge of two such clips (stream copy: same shape). The baseline is the native engine in the same run;
// the table reports wasm/native per case. Each engine runs in its own child process so its peak RSS is its own.
// Run: npx tsx test/bench/video.bench.ts
import { spawn } from "node:child_process";
import process from "node:process";
import { createMediaEngine, detectNativeFfmpeg, videoFrameSize } from "../../lib/media/index.ts";
import { pollToEnd } from "../../lib/upstream.ts";
import { concatClips } from "../../plugins/video/merge.ts";
import { sandboxVideoProvider } from "../../plugins/video/sandbox.ts";

type Mode = "native" | "wasm";
const CASES = [
  { quality: "720p", short: 720, seconds: 5 },
  { quality: "720p", short: 720, seconds: 10 },
  { quality: "1080p", short: 1080, seconds: 5 },
  { quality: "1080p", short: 1080, seconds: 10 },
] as const;

interface Row {
  case: string;
  generateMs: number;
  mergeMs: number;
  reencoded: boolean;
}

async function runEngine(mode: Mode) {
  const engine = createMediaEngine({ mode });
  await engine.warmup();
  const provider = sandboxVideoProvider({ latencyMs: 0, media: () => engine }).route("beta-2-direct")!;
  const rows: Row[] = [];
  for (const c of CASES) {
    const { width, height } = videoFrameSize("9:16", c.short);
    const request = (prompt: string) => ({
      prompt,
      negativePrompt: null,
      model: "beta-2-direct",
      width,
      height,
      seconds: c.seconds,
      sound: true,
      referenceImages: [],
      referenceVideos: [],
      referenceAudio: [],
      signal: new AbortController().signal,
      onProgress() {},
    });
    const t0 = performance.now();
    const a = await pollToEnd(provider, request("A lighthouse in a storm, waves breaking"));
    const generateMs = performance.now() - t0;
    const b = await pollToEnd(provider, request("A quiet harbour at dawn"));
    const t1 = performance.now();
    const merged = await concatClips(engine, [a.bytes, b.bytes]);
    rows.push({
      case: `${c.seconds} s ${c.quality}`,
      generateMs,
      mergeMs: performance.now() - t1,
      reencoded: merged.reencoded,
    });
  }
  await engine.close();
  process.stdout.write(`${JSON.stringify({ mode, rows, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

function spawnEngine(mode: Mode): Promise<{ mode: Mode; rows: Row[]; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, import.meta.filename!, "--engine", mode], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.on("close", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0 || !line.startsWith("{")) return reject(new Error(`${mode} failed (${code}): ${out}`));
      resolve(JSON.parse(line));
    });
  });
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main() {
  const modes: Mode[] = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];
  console.log(
    `machine: ${process.platform} ${process.arch}, node ${process.version}, ${(await import("node:os")).availableParallelism()} CPUs\n`,
  );
  const results = [];
  for (const m of modes) results.push(await spawnEngine(m));
  const native = results.find((r) => r.mode === "native");
  const table: string[][] = [
    [
      "clip (9:16, with sound)",
      "engine",
      "generate",
      "merge 2 clips",
      "merge path",
      "generate native/wasm",
      "merge native/wasm",
    ],
  ];
  for (const r of results) {
    for (const row of r.rows) {
      const base = native?.rows.find((x) => x.case === row.case);
      table.push([
        row.case,
        r.mode,
        s(row.generateMs),
        s(row.mergeMs),
        row.reencoded ? "re-encode" : "stream copy",
        r.mode === "wasm" && base ? (base.generateMs / row.generateMs).toFixed(2) : "",
        r.mode === "wasm" && base ? (base.mergeMs / row.mergeMs).toFixed(2) : "",
      ]);
    }
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, c) => cell.padEnd(widths[c]!)).join(" | ")} |`;
  console.log(line(table[0]!));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const row of table.slice(1)) console.log(line(row));
  for (const r of results)
    console.log(
      `peak RSS ${r.mode}: ${Math.round(r.peakRssMb)} MB (node process${r.mode === "native" ? "; ffmpeg runs in its own processes" : ", ffmpeg.wasm inside it"})`,
    );
}

const argv = process.argv.slice(2);
if (argv[0] === "--engine") await runEngine(argv[1] as Mode);
else await main();
