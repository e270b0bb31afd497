// Benchmark: answering media links for a large file, read whole (the media route before BlobStore.open: the
// baseline) or streamed from the store (now). 16 clients at once fetch a 64 MB video from the disk store, then
// 16 fetch a 1 MB range of it; each way runs in its own child process so its peak RSS is its own.
// Reported: MB/s served and the peak RSS above the process's RSS before the first request, streamed : whole.
// Run: npx tsx test/bench/media-links.bench.ts   (BENCH_MB, BENCH_CLIENTS to change the sizes)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileResponse, streamedFileResponse } from "../../lib/file-response.ts";
import { fileBlobStore } from "../../storage/blobs.ts";

const MB = Number(process.env.BENCH_MB ?? 64);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const KEY = "video/bench/clip.mp4";
const HEADERS = { "content-type": "video/mp4" };

interface Result {
  mode: string;
  wholeMBps: number;
  rangeMBps: number;
  peakMB: number;
}

async function child(mode: "whole" | "streamed", dataDir: string): Promise<Result> {
  const blobs = fileBlobStore(dataDir);
  const answer = async (request: Request): Promise<Response> => {
    if (mode === "whole") return fileResponse(request, (await blobs.get(KEY))!, HEADERS);
    return await streamedFileResponse(request, (await blobs.open(KEY))!, HEADERS);
  };
  // Each client reads its answer to the end, in chunks, as a socket would.
  const fetchAll = async (headers: Record<string, string>) => {
    const started = performance.now();
    const sizes = await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const res = await answer(new Request("http://bench/media/x", { headers }));
        let n = 0;
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) n += chunk.byteLength;
        return n;
      }),
    );
    return sizes.reduce((a, b) => a + b, 0) / 1e6 / ((performance.now() - started) / 1000);
  };
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const wholeMBps = await fetchAll({});
  const rangeMBps = await fetchAll({ range: "bytes=1000000-1999999" });
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { mode, wholeMBps, rangeMBps, peakMB: (peak - before) / 1e6 };
}

if (process.argv[2] === "child") {
  const result = await child(process.argv[3] as "whole" | "streamed", process.argv[4]!);
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
}

const dataDir = mkdtempSync(join(tmpdir(), "mediagate-bench-media-"));
try {
  const data = new Uint8Array(MB * 1_000_000);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  await fileBlobStore(dataDir).put(KEY, data);
  const run = (mode: string): Result =>
    JSON.parse(
      execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", import.meta.filename, "child", mode, dataDir], {
        encoding: "utf8",
        maxBuffer: 1 << 20,
      }),
    );
  // Interleaved, three rounds each; the medians are reported.
  const rounds: Result[][] = [[], []];
  for (let i = 0; i < 3; i++) {
    rounds[0]!.push(run("whole"));
    rounds[1]!.push(run("streamed"));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const [whole, streamed] = rounds.map((rs) => ({
    wholeMBps: median(rs.map((r) => r.wholeMBps)),
    rangeMBps: median(rs.map((r) => r.rangeMBps)),
    peakMB: median(rs.map((r) => r.peakMB)),
  }));
  console.log(`media links: ${CLIENTS} clients, a ${MB} MB file on disk (medians of 3 interleaved rounds)`);
  console.log(
    `  whole file:  read whole ${whole!.wholeMBps.toFixed(0)} MB/s, streamed ${streamed!.wholeMBps.toFixed(0)} MB/s (streamed : whole ${(streamed!.wholeMBps / whole!.wholeMBps).toFixed(2)})`,
  );
  console.log(
    `  1 MB range:  read whole ${whole!.rangeMBps.toFixed(0)} MB/s, streamed ${streamed!.rangeMBps.toFixed(0)} MB/s (streamed : whole ${(streamed!.rangeMBps / whole!.rangeMBps).toFixed(2)})`,
  );
  console.log(
    `  peak RSS above the start: read whole ${whole!.peakMB.toFixed(0)} MB, streamed ${streamed!.peakMB.toFixed(0)} MB (streamed : whole ${(streamed!.peakMB / whole!.peakMB).toFixed(2)})`,
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
