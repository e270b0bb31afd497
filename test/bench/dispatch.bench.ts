// Benchmark: job dispatch latency, the time from a submit's 202 to the worker starting the job's run(),
// over 200 jobs, on the embedded PGlite default and on Postgres (when it answers on 127.0.0.1:5432).
// Two patterns: sequential (one submit, wait for its start, next) and a burst (200 submits at once).
// The baseline in the same run is the 202 round trip itself (charge, job row and queue insert in one
// transaction), so the ratio says how much the queue adds on top of accepting the work.
// Target: median dispatch under 100 ms on both. Run: npx tsx test/bench/dispatch.bench.ts
import { randomBytes } from "node:crypto";
import process from "node:process";
import pg from "pg";
import { z } from "zod";
import { createTestKernel, type TestKernel } from "../../core/testing.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import account from "../../plugins/account/index.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

// When each job's run() began, and a waiter per job.
const started = new Map<string, number>();
const waiters = new Map<string, () => void>();

const ping: JobKindDeclaration<Record<string, never>> = {
  states: ["queued", "done", "failed"],
  initial: "queued",
  transitions: { queued: ["done", "failed"] },
  terminal: { done: "success", failed: "failure" },
  failState: "failed",
  failError: "failed",
  concurrency: 4,
  async run(ctx) {
    started.set(ctx.jobId, performance.now());
    waiters.get(ctx.jobId)?.();
    return { state: "done" };
  },
};

const bench = definePlugin({
  name: "dispatchbench",
  rateLimits: { "POST /ping": [{ limit: 1_000_000, windowSeconds: 60 }] },
  jobs: { ping },
  operations: [
    operation({
      method: "POST",
      path: "/ping",
      status: 202,
      input: z.object({}),
      async handle(ctx) {
        const job = await ctx.submitJob({ kind: "ping", credits: 1, state: "queued", input: {}, insufficientCredits: () => "Insufficient credits" });
        return { job_id: job.jobId };
      },
    }),
  ],
});

function startOf(jobId: string): Promise<number> {
  const at = started.get(jobId);
  if (at !== undefined) return Promise.resolve(at);
  return new Promise((resolve) => waiters.set(jobId, () => resolve(started.get(jobId)!)));
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function submit(tk: TestKernel, key: string): Promise<{ jobId: string; accepted: number; roundTrip: number }> {
  const t0 = performance.now();
  const res = await tk.request("POST", "/ping", { key, body: {} });
  const accepted = performance.now();
  if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { jobId: res.body.job_id, accepted, roundTrip: accepted - t0 };
}

async function run(backend: string, databaseUrl?: string) {
  const tk = await createTestKernel({ plugins: [account, bench], databaseUrl, start: true });
  try {
    const { key } = await tk.partner({ credits: 1_000_000 });
    for (let i = 0; i < 10; i++) await startOf((await submit(tk, key)).jobId); // warm-up

    const seq: number[] = [];
    const rt: number[] = [];
    for (let i = 0; i < JOBS; i++) {
      const s = await submit(tk, key);
      rt.push(s.roundTrip);
      seq.push((await startOf(s.jobId)) - s.accepted);
    }

    const burstStart = performance.now();
    const subs = await Promise.all(Array.from({ length: JOBS }, () => submit(tk, key)));
    const starts = await Promise.all(subs.map((s) => startOf(s.jobId)));
    const burst = subs.map((s, i) => Math.max(0, starts[i]! - s.accepted));
    const drained = Math.max(...starts) - burstStart;

    const row = (name: string, xs: number[]) =>
      `${backend.padEnd(9)} ${name.padEnd(22)} median ${quantile(xs, 0.5).toFixed(1).padStart(7)} ms   p95 ${quantile(xs, 0.95).toFixed(1).padStart(7)} ms`;
    console.log(row("submit (202) baseline", rt));
    console.log(row("dispatch, sequential", seq));
    console.log(row("dispatch, burst", burst));
    console.log(`${backend.padEnd(9)} ratio sequential dispatch : submit (medians) ${(quantile(seq, 0.5) / quantile(rt, 0.5)).toFixed(2)}`);
    console.log(`${backend.padEnd(9)} burst of ${JOBS}: last job started ${drained.toFixed(0)} ms after the first submit (${((JOBS * 1000) / drained).toFixed(0)} jobs/s)`);
  } finally {
    await tk.close();
  }
}

console.log(`job dispatch, ${JOBS} jobs per pattern (concurrency 4 per process)`);
await run("pglite");

const admin = new pg.Client({ connectionString: ADMIN_URL });
let reachable = true;
await admin.connect().catch(() => (reachable = false));
if (reachable) {
  const name = `mediagate_bench_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${name}`);
  try {
    await run("postgres", ADMIN_URL.replace(/\/postgres$/, `/${name}`));
  } finally {
    const left = await admin.query(`select application_name, state, left(query, 60) as q from pg_stat_activity where datname = $1`, [name]);
    if (left.rows.length) console.log("connections left open:", left.rows);
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
} else {
  console.log("postgres  not reachable on 127.0.0.1:5432, skipped");
}
