// Many jobs waiting on slow upstreams in one process (issue 20): the real server (main.ts, ROLE=all, every
// plugin) with SANDBOX_LATENCY_MS at a minute, 1,000 image jobs and 200 video jobs submitted from several
// accounts. A wait holds no worker slot (core/upstream-waits.ts), so all of them should finish in about the
// latency plus the render work. The render work is measured in the same run: the same load on a server whose
// sandbox answers at once (SANDBOX_LATENCY_MS=0), the baseline. Reported:
// - wall time from the first submit to the last job's end, against the ideal `latency + baseline wall`;
// - peak RSS while the jobs wait;
// - GET /me p50/p99 while they wait, against the same server idle before the load.
//
//   npx tsx test/bench/waits.bench.ts       BENCH_DB=postgres|pglite (default postgres when it answers)
//                                           BENCH_LATENCY_MS (60000) BENCH_IMAGES (1000) BENCH_VIDEOS (200)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import { afterAll } from "../helpers/lifecycle.ts";
import { api, call, sleep } from "../helpers/restart.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 60_000);
const IMAGES = Number(process.env.BENCH_IMAGES ?? 1000);
const VIDEOS = Number(process.env.BENCH_VIDEOS ?? 200);
const ACCOUNTS = 5;
const ADMIN = "adm_XdGlTJF3SbGBePvu1O2FxeHHTHBbIcM7Qm7yErIk";

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

/** Accounts with credits and raised caps, so neither a rate limit nor the in-flight cap refuses the load. */
async function accounts(server: ServerProcess): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const made = await call(server, "POST", "/api/v1/admin/partners", {
      adminToken: ADMIN,
      body: { name: `Bench ${i}`, credits: 100_000_000 },
    });
    if (made.status !== 201) throw new Error(`create partner: ${made.status} ${JSON.stringify(made.body)}`);
    const limits = {
      inflight_jobs: 100_000,
      rate_limits: {
        "POST /generate-image": 100_000,
        "POST /generate-video": 100_000,
        "GET /image-status/<gen_id>": 1_000_000,
        "GET /video-status/<job_id>": 1_000_000,
        "GET /me": 1_000_000,
      },
    };
    const patched = await call(server, "PATCH", `/api/v1/admin/partners/${made.body.partner_id}`, {
      adminToken: ADMIN,
      body: { limits },
    });
    if (patched.status !== 200) throw new Error(`limits: ${patched.status} ${JSON.stringify(patched.body)}`);
    keys.push(made.body.api_key);
  }
  return keys;
}

/** GET /me latencies (ms) of `n` requests, one after another. */
async function meLatencies(server: ServerProcess, key: string, n = 300): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await call(server, "GET", api("/me"), { key });
    if (res.status !== 200) throw new Error(`GET /me ${res.status}`);
    out.push(performance.now() - t0);
  }
  return out;
}

interface Job {
  kind: "image" | "video";
  id: string;
  key: string;
}

async function submitAll(server: ServerProcess, keys: string[]): Promise<Job[]> {
  const jobs: Job[] = [];
  const one = async (i: number) => {
    const key = keys[i % keys.length]!;
    if (i < IMAGES) {
      const res = await call(server, "POST", api("/generate-image"), {
        key,
        body: { prompt: `A lighthouse, picture ${i}`, model: "image-b-2" },
      });
      if (res.status !== 202) throw new Error(`generate-image ${res.status} ${JSON.stringify(res.body)}`);
      jobs.push({ kind: "image", id: res.body.public_id, key });
    } else {
      const res = await call(server, "POST", api("/generate-video"), {
        key,
        body: { prompt: `A harbour at dawn, clip ${i}`, model: "beta-2-direct", quality: "480p", duration: 2 },
      });
      if (res.status !== 202) throw new Error(`generate-video ${res.status} ${JSON.stringify(res.body)}`);
      jobs.push({ kind: "video", id: res.body.job_id, key });
    }
  };
  // Interleaved, 16 at a time, as many partners' traffic arrives.
  const order = Array.from({ length: IMAGES + VIDEOS }, (_, i) => i).sort(
    (a, b) => ((a * 7919) % 1201) - ((b * 7919) % 1201),
  );
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < order.length) await one(order[next++]!);
    }),
  );
  return jobs;
}

/** Polls every job's status until all have ended; returns when the last one did. */
async function allEnded(server: ServerProcess, jobs: Job[], onTick: () => void): Promise<{ failed: number }> {
  let open = [...jobs];
  let failed = 0;
  while (open.length > 0) {
    const still: Job[] = [];
    for (const job of open) {
      const path = job.kind === "image" ? api(`/image-status/${job.id}`) : api(`/video-status/${job.id}`);
      const res = await call(server, "GET", path, { key: job.key });
      const status = res.body.status as string;
      if (status === "pending" || status === "queued" || status === "processing") still.push(job);
      else if (status !== "success" && status !== "complete") failed++;
    }
    open = still;
    onTick();
    if (open.length > 0) await sleep(1000);
  }
  return { failed };
}

async function run(name: string, latencyMs: number, database: { url?: string }) {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-waits-bench-"));
  const server = await startServer(
    {
      ROLE: "all",
      LOG_LEVEL: "warn",
      ADMIN_TOKEN: ADMIN,
      DATA_DIR: dataDir,
      SANDBOX_LATENCY_MS: String(latencyMs),
      ...(database.url ? { DATABASE_URL: database.url } : {}),
    },
    180_000,
  );
  try {
    const keys = await accounts(server);
    await sleep(3000);
    const idle = await meLatencies(server, keys[0]!);
    const idleRss = rssMb(server.pid);
    const t0 = performance.now();
    const jobs = await submitAll(server, keys);
    const submittedS = (performance.now() - t0) / 1000;
    let peakRss = rssMb(server.pid);
    // While they wait (before the latency is over), GET /me as a partner would call it.
    const waiting = latencyMs > 0 ? await meLatencies(server, keys[0]!) : [];
    const { failed } = await allEnded(server, jobs, () => {
      if (performance.now() - t0 < latencyMs) peakRss = Math.max(peakRss, rssMb(server.pid));
    });
    const wallS = (performance.now() - t0) / 1000;
    return { name, wallS, submittedS, failed, idle, waiting, idleRss, peakRss };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const usePostgres = process.env.BENCH_DB ? process.env.BENCH_DB === "postgres" : !!(await postgresUrl());
const database = { url: usePostgres ? await isolatedPostgresDatabase() : undefined };
const label = usePostgres ? "postgres" : "pglite";
console.log(`${IMAGES} image jobs + ${VIDEOS} video jobs (beta-2-direct 480p 2 s), ${ACCOUNTS} accounts, on ${label}`);

const base = await run("latency 0", 0, { url: usePostgres ? await isolatedPostgresDatabase() : undefined });
console.log(
  `baseline (SANDBOX_LATENCY_MS=0): all ended in ${base.wallS.toFixed(1)} s (submitted in ${base.submittedS.toFixed(1)} s), ${base.failed} failed`,
);
const slow = await run(`latency ${LATENCY_MS}`, LATENCY_MS, database);
const ideal = LATENCY_MS / 1000 + base.wallS;
const p = (xs: number[], q: number) => quantile(xs, q).toFixed(1);
console.log(
  `SANDBOX_LATENCY_MS=${LATENCY_MS}: all ended in ${slow.wallS.toFixed(1)} s (submitted in ${slow.submittedS.toFixed(1)} s), ${slow.failed} failed`,
);
console.log(
  `  wall / ideal (latency + baseline wall = ${ideal.toFixed(1)} s): ${(slow.wallS / ideal).toFixed(2)}  (target at most 1.5)`,
);
console.log(
  `  RSS idle ${slow.idleRss.toFixed(0)} MB, peak while waiting ${slow.peakRss.toFixed(0)} MB  (target under 500)`,
);
console.log(
  `  GET /me idle p50 ${p(slow.idle, 0.5)} ms p99 ${p(slow.idle, 0.99)} ms; while waiting p50 ${p(slow.waiting, 0.5)} ms p99 ${p(slow.waiting, 0.99)} ms: p99 ratio ${(quantile(slow.waiting, 0.99) / quantile(slow.idle, 0.99)).toFixed(2)}  (target at most 2)`,
);
await afterAll();
