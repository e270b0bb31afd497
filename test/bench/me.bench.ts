// Benchmark: requests per second of an authenticated GET /me against a bare h3 handler answering the same
// JSON, measured in one run on this machine, reported as a ratio (and each server's memory). Target: the
// ratio is at least 0.5. Also the same app without the shared HTTP manners (X-Request-Id, compression, CORS;
// transports/http-manners.ts): their cost as a ratio, target at least 0.9. Run: npm run bench  (BENCH_SECONDS, BENCH_CONNECTIONS to change the load).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";
import process from "node:process";
import autocannon from "autocannon";

const root = resolve(import.meta.dirname!, "../..");
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

// The same read over GraphQL, every field of GET /me's body, against the same server as "me".
const GRAPHQL_ME = JSON.stringify({ query: "{ me { request_id name api_key_prefix pricing_tier credits_remaining is_active created_at last_active } }" });

async function measure(variant: "bare" | "me" | "me-quiet" | "me-plain" | "graphql") {
  const mode = variant === "graphql" ? "me" : variant;
  const port = await freePort();
  // Node itself with tsx as a loader (not the tsx binary, which would fork): the pid is the server's, so its
  // RSS is measured and the kill reaches it.
  const child = spawn(process.execPath, ["--import", "tsx", "test/bench/servers.ts", mode, String(port)], { cwd: root, stdio: ["ignore", "pipe", "ignore"] });
  const key = await new Promise<string>((res, rej) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\S+)/.exec(out);
      if (m) res(m[1]!);
    });
    child.once("exit", (code) => rej(new Error(`${mode} server exited with ${code}`)));
  });
  const graphql = variant === "graphql";
  const url = `http://127.0.0.1:${port}${graphql ? "/graphql" : "/api/v1/partner/me"}`;
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "user-agent": "mediagate-bench/1.0", ...(graphql ? { "content-type": "application/json" } : {}) };
  const load = { url, headers, connections, ...(graphql ? { method: "POST" as const, body: GRAPHQL_ME } : {}) };
  await autocannon({ ...load, duration: 2 }); // warm-up: JIT, caches
  const result = await autocannon({ ...load, duration: seconds });
  const rss = rssOf(child.pid!);
  child.kill("SIGKILL");
  if (result.non2xx || result.errors) throw new Error(`${mode}: ${result.non2xx} non-2xx and ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, rss };
}

// Two rounds of the two app variants, interleaved, each round's best kept: on a 2-CPU machine shared with the
// load generator, one run of a few seconds varies by 10 % from the next, which is the size of what the manners
// ratio measures.
const bare = await measure("bare");
const best = (a: Awaited<ReturnType<typeof measure>>, b: Awaited<ReturnType<typeof measure>>) => (a.rps >= b.rps ? a : b);
let plain = await measure("me-plain");
let me = await measure("me");
let quiet = await measure("me-quiet");
plain = best(plain, await measure("me-plain"));
me = best(me, await measure("me"));
quiet = best(quiet, await measure("me-quiet"));
const overGraphql = await measure("graphql");
const ratio = me.rps / bare.rps;
console.log(`bare h3 handler     ${bare.rps.toFixed(0)} req/s  p99 ${bare.p99} ms  rss ${bare.rss.toFixed(0)} MB`);
console.log(`authenticated /me   ${me.rps.toFixed(0)} req/s  p99 ${me.p99} ms  rss ${me.rss.toFixed(0)} MB`);
console.log(`/me without manners ${plain.rps.toFixed(0)} req/s  p99 ${plain.p99} ms  rss ${plain.rss.toFixed(0)} MB`);
console.log(`ratio /me : bare    ${ratio.toFixed(2)}  (target >= 0.50)`);
console.log(`/me, ACCESS_LOG=off ${quiet.rps.toFixed(0)} req/s  p99 ${quiet.p99} ms  rss ${quiet.rss.toFixed(0)} MB`);
console.log(`ratio manners       ${(me.rps / plain.rps).toFixed(2)}  (/me : /me without the HTTP manners: request id, compression, CORS, metrics, access log; target >= 0.90)`);
console.log(`ratio manners, quiet ${(quiet.rps / plain.rps).toFixed(2)}  (the same with ACCESS_LOG=off)`);
console.log(`GraphQL { me }      ${overGraphql.rps.toFixed(0)} req/s  p99 ${overGraphql.p99} ms; ratio GraphQL : REST ${(overGraphql.rps / me.rps).toFixed(2)}`);
