// Benchmark: job dispatch latency, the time from a submit's 202 to the worker starting the job's run(), over
// 200 jobs (BENCH_JOBS), on the embedded PGlite default and on Postgres (when one answers on 127.0.0.1:5432,
// or at TEST_DATABASE_URL). Two patterns: sequential (one submit, wait for its run() to start, let the
// workers go idle, next) and a burst (all submits at once). A tiny fixture plugin declares a `ping` job kind whose run() only records
// performance.now(); its submit holds an in-flight slot like a real one, and the partner's rate limit and
// in-flight cap are raised through its admin `limits` so neither answers 429.
//
// Baselines measured in the same run, on the same backend:
// - the 202 round trip itself (auth, rate limit, charge, job row and queue insert in one transaction), and
// - plain pg-boss: boss.send() to a boss.work() handler starting, 4 workers polling every 2 s, woken by its
//   own LISTEN/NOTIFY and each fetching again as soon as its job ends (issue 21's baseline: burst dispatch at
//   most 1.5x);
// - our queue (storage/queue.ts alone): send() to the handler starting, same slots, no HTTP, no charge, no
//   job row; once as configured, and once with LISTEN off (`listenNotify: false`), where only the queue's
//   in-process wake on send stands between a job and the scan.
// The ratios say what the queue adds on top of accepting the work, and what the kernel adds on top of the
// queue. Target: median dispatch under 100 ms on both backends. Benchmarks report, they never assert.
//
// Run: npx tsx test/bench/dispatch.bench.ts          BENCH_JOBS=1000 for the larger burst
import process from "node:process";
import { PGlite } from "@electric-sql/pglite";
import { PgBoss } from "pg-boss";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { queuedThen } from "../../lib/job-states.ts";
import account from "../../plugins/account/index.ts";
import { createQueue, pgliteDatabase, type QueueTarget } from "../../storage/queue.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import { jobPlugin } from "../helpers/job-plugin.ts";
import { afterAll } from "../helpers/lifecycle.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 200);
const WARMUP = 10;
const CONCURRENCY = 4; // the job kind's slots per process, as core/jobs.ts defaults
const POLLING_SECONDS = 2; // pg-boss's own default, for the plain pg-boss baseline
// Between sequential submits: long enough for the last job to end and its worker to find the queue empty
// and go to sleep, so each submit meets idle workers. Without it a worker that just finished fetches again
// right away and catches the next job by luck, which hides whether an idle worker is woken at all.
const IDLE_GAP_MS = 25;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// When each job's run() began, and a waiter per job, keyed by job id (kernel) or queue job id (bare queue).
const started = new Map<string, number>();
const waiters = new Map<string, () => void>();
const markStarted = (id: string) => {
  started.set(id, performance.now());
  waiters.get(id)?.();
  waiters.delete(id);
};
function startOf(id: string): Promise<number> {
  const at = started.get(id);
  if (at !== undefined) return Promise.resolve(at);
  return new Promise((resolve) => waiters.set(id, () => resolve(started.get(id)!)));
}

const ping: JobKindDeclaration<Record<string, never>> = {
  ...queuedThen("done", "failed"),
  failError: "failed",
  concurrency: CONCURRENCY,
  async run(ctx) {
    markStarted(ctx.jobId);
    return { state: "done" };
  },
};

// A modest rate limit by default, as a real operation has; the bench partner's `limits.rate_limits` lifts it.
const bench = jobPlugin("dispatchbench", "ping", ping, { limitPerMinute: 10, inflight: true });

interface Sample {
  /** When the 202 (or the bare send) returned. */
  accepted: number;
  /** How long the submit (or the send) took. */
  roundTrip: number;
  id: string;
}

interface Pattern {
  /** From each job's own 202 (or send) to its run() (or handler) starting. */
  latencies: number[];
  roundTrips: number[];
  /** Burst only: milliseconds from the burst's start to the last 202, the first start and the last start. */
  lastAccepted?: number;
  firstStart?: number;
  lastStart?: number;
}

interface Result {
  backend: string;
  submitSeq: Pattern;
  submitBurst: Pattern;
  bareSeq: Pattern;
  bareBurst: Pattern;
  plainSeq: Pattern;
  plainBurst: Pattern;
  quietSeq: Pattern;
  quietBurst: Pattern;
}

async function sequential(once: () => Promise<Sample>): Promise<Pattern> {
  const latencies: number[] = [];
  const roundTrips: number[] = [];
  for (let i = 0; i < JOBS; i++) {
    const s = await once();
    roundTrips.push(s.roundTrip);
    latencies.push((await startOf(s.id)) - s.accepted);
    await sleep(IDLE_GAP_MS);
  }
  return { latencies, roundTrips };
}

async function burst(once: () => Promise<Sample>): Promise<Pattern> {
  const t0 = performance.now();
  const samples = await Promise.all(Array.from({ length: JOBS }, once));
  const starts = await Promise.all(samples.map((s) => startOf(s.id)));
  return {
    // A handler may start before its send's promise resolves (the worker was already awake); that is 0.
    latencies: samples.map((s, i) => Math.max(0, starts[i]! - s.accepted)),
    roundTrips: samples.map((s) => s.roundTrip),
    lastAccepted: Math.max(...samples.map((s) => s.accepted)) - t0,
    firstStart: Math.min(...starts) - t0,
    lastStart: Math.max(...starts) - t0,
  };
}

async function throughKernel(databaseUrl: string | undefined): Promise<[Pattern, Pattern]> {
  const tk = await createTestKernel({ plugins: [account, bench], databaseUrl, start: true });
  try {
    const { key } = await tk.partner({
      credits: 1_000_000,
      limits: { rate_limits: { "POST /ping": 1_000_000 }, inflight_jobs: 1000 },
    });
    const submit = async (): Promise<Sample> => {
      const t0 = performance.now();
      const res = await tk.request("POST", "/ping", { key, body: {} });
      const accepted = performance.now();
      if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
      return { id: res.body.job_id, accepted, roundTrip: accepted - t0 };
    };
    for (let i = 0; i < WARMUP; i++) await startOf((await submit()).id);
    return [await sequential(submit), await burst(submit)];
  } finally {
    await tk.close();
  }
}

/** A send as a Sample: when it returned, and how long it took. */
function timedSend(send: () => Promise<string | null>): () => Promise<Sample> {
  return async () => {
    const t0 = performance.now();
    const id = await send();
    const accepted = performance.now();
    return { id: id!, accepted, roundTrip: accepted - t0 };
  };
}

async function throughBareQueue(target: QueueTarget, listenNotify: boolean): Promise<[Pattern, Pattern]> {
  let stopping = false;
  // pg-boss's stop() can return while its pool's sockets are still closing; dropping the database right
  // after then terminates them, which pg-boss reports as an error. Only errors while measuring matter.
  const onError = (err: unknown) => void (stopping || console.error("bare queue:", err));
  const queue = createQueue(target, { onError, listenNotify });
  try {
    await queue.createQueue("bench.bare");
    await queue.work("bench.bare", async (job) => markStarted(job.id), { concurrency: CONCURRENCY });
    const send = timedSend(() => queue.send("bench.bare", {}));
    for (let i = 0; i < WARMUP; i++) await startOf((await send()).id);
    return [await sequential(send), await burst(send)];
  } finally {
    stopping = true;
    await queue.stop();
  }
}

async function throughPlainPgBoss(target: QueueTarget): Promise<[Pattern, Pattern]> {
  const boss =
    target.kind === "pglite"
      ? new PgBoss({ db: pgliteDatabase(target.pglite), backend: "pglite", useListenNotify: true, schedule: false })
      : new PgBoss({ connectionString: target.connectionString, useListenNotify: true, schedule: false });
  let stopping = false;
  boss.on("error", (err) => void (stopping || console.error("plain pg-boss:", err)));
  await boss.start();
  try {
    await boss.createQueue("bench.plain", { notify: true });
    // pg-boss at its best for a burst, as our queue used it before the fetcher: a worker per slot, each made to
    // fetch again the moment its job ends (notifyWorker); left alone, a pg-boss worker sleeps out its polling
    // interval after every job (with NOTIFY on, a 30 s backstop), and the baseline would only measure that.
    for (let i = 0; i < CONCURRENCY; i++) {
      const slot = { id: "" };
      slot.id = await boss.work(
        "bench.plain",
        { pollingIntervalSeconds: POLLING_SECONDS, notifyPollingIntervalSeconds: POLLING_SECONDS },
        async ([job]) => {
          markStarted(job!.id);
          if (slot.id) setImmediate(() => boss.notifyWorker(slot.id));
        },
      );
    }
    const send = timedSend(() => boss.send("bench.plain", {}));
    for (let i = 0; i < WARMUP; i++) await startOf((await send()).id);
    return [await sequential(send), await burst(send)];
  } finally {
    stopping = true;
    await boss.stop({ graceful: true, close: true });
  }
}

async function measure(backend: "pglite" | "postgres"): Promise<Result> {
  const [submitSeq, submitBurst] = await throughKernel(
    backend === "postgres" ? await isolatedPostgresDatabase() : undefined,
  );
  const bare = async (listenNotify: boolean) => {
    if (backend === "postgres")
      return throughBareQueue({ kind: "postgres", connectionString: await isolatedPostgresDatabase() }, listenNotify);
    const pglite = new PGlite();
    try {
      return await throughBareQueue({ kind: "pglite", pglite }, listenNotify);
    } finally {
      await pglite.close();
    }
  };
  const [plainSeq, plainBurst] =
    backend === "postgres"
      ? await throughPlainPgBoss({ kind: "postgres", connectionString: await isolatedPostgresDatabase() })
      : await (async () => {
          const pglite = new PGlite();
          try {
            return await throughPlainPgBoss({ kind: "pglite", pglite });
          } finally {
            await pglite.close();
          }
        })();
  const [bareSeq, bareBurst] = await bare(true);
  const [quietSeq, quietBurst] = await bare(false);
  return { backend, submitSeq, submitBurst, plainSeq, plainBurst, bareSeq, bareBurst, quietSeq, quietBurst };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const median = (xs: number[]) => quantile(xs, 0.5);
const ms = (x: number) => x.toFixed(1).padStart(9);
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a").padStart(6);

function report(results: Result[]) {
  console.log(`\njob dispatch: ${JOBS} jobs per pattern, ${CONCURRENCY} worker slots\n`);
  console.log(`${"backend".padEnd(9)} ${"measurement".padEnd(44)} ${"median ms".padStart(9)} ${"p95 ms".padStart(9)}`);
  for (const r of results) {
    const rows: Array<[string, number[]]> = [
      ["baseline: submit round trip (202), seq.", r.submitSeq.roundTrips],
      ["baseline: plain pg-boss send -> handler, seq.", r.plainSeq.latencies],
      ["baseline: plain pg-boss send -> handler, burst", r.plainBurst.latencies],
      ["our queue send -> handler, sequential", r.bareSeq.latencies],
      ["our queue send -> handler, burst", r.bareBurst.latencies],
      ["our queue, LISTEN off, sequential", r.quietSeq.latencies],
      ["our queue, LISTEN off, burst", r.quietBurst.latencies],
      ["dispatch 202 -> run(), sequential", r.submitSeq.latencies],
      ["dispatch 202 -> run(), burst", r.submitBurst.latencies],
    ];
    for (const [name, xs] of rows)
      console.log(`${r.backend.padEnd(9)} ${name.padEnd(44)} ${ms(median(xs))} ${ms(quantile(xs, 0.95))}`);
  }
  console.log(`\n${"backend".padEnd(9)} ratios of medians`);
  for (const r of results) {
    const seq = median(r.submitSeq.latencies);
    console.log(
      `${r.backend.padEnd(9)} sequential dispatch : submit round trip ${ratio(seq, median(r.submitSeq.roundTrips))}` +
        `   sequential dispatch : plain pg-boss ${ratio(seq, median(r.plainSeq.latencies))}` +
        `   burst dispatch : plain pg-boss burst ${ratio(median(r.submitBurst.latencies), median(r.plainBurst.latencies))} (p95 ${ratio(quantile(r.submitBurst.latencies, 0.95), quantile(r.plainBurst.latencies, 0.95))})`,
    );
  }
  console.log(`\n${"backend".padEnd(9)} burst timeline, ms from the first submit`);
  for (const r of results) {
    const b = r.submitBurst;
    console.log(
      `${r.backend.padEnd(9)} last 202 at ${b.lastAccepted!.toFixed(0)}, first run() at ${b.firstStart!.toFixed(0)}, last run() at ${b.lastStart!.toFixed(0)}` +
        ` (${((JOBS * 1000) / b.lastStart!).toFixed(0)} jobs/s; plain pg-boss: last handler at ${r.plainBurst.lastStart!.toFixed(0)}, our queue at ${r.bareBurst.lastStart!.toFixed(0)})`,
    );
  }
}

const results: Result[] = [await measure("pglite")];
if (await postgresUrl()) results.push(await measure("postgres"));
else console.log("postgres not reachable (127.0.0.1:5432 or TEST_DATABASE_URL): skipped");
await afterAll(); // drops the isolated Postgres databases
report(results);
