// Benchmark: webhook delivery. 1,000 jobs end and each event goes to a receiver on 127.0.0.1. Delivery
// throughput: the events are made while the delivery loop is stopped, then it is started and drains them
// (events per second). Lag: 1,000 more jobs end while it runs; the median and p95 from each terminal
// transition (the job row's finished_at) to the receiver's 2xx. The baseline in the same run: the same
// 1,000 signed POSTs sent straight through the outbound guard by a loop of concurrency 16, without database.
// Run: npx tsx test/bench/webhooks.bench.ts   (BENCH_EVENTS to change the count; PGlite, then Postgres if reachable)

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import process from "node:process";
import pg from "pg";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { DELIVERY_LIMITS } from "../../core/webhook-delivery.ts";
import { signature } from "../../core/webhooks.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import account from "../../plugins/account/index.ts";
import webhooks from "../../plugins/webhooks/index.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { serveHttp } from "../../transports/http.ts";
import { jobPlugin } from "../helpers/job-plugin.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1000);
const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

const done: JobKindDeclaration<Record<string, never>> = {
  ...queuedThen("completed", "failed"),
  failError: "failed",
  concurrency: 8,
  events: {
    success: "video.completed",
    failure: "video.failed",
    data: async (_trx, job) => ({ job_id: job.jobId, status: "completed" }),
  },
  async run() {
    return { state: "completed" };
  },
};

const bench = jobPlugin("hookbench", "done", done, {
  limitPerMinute: 1_000_000,
  submit: () => ({ credits: 0, input: {} }),
});

async function receiver() {
  const arrivals = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      arrivals.set(body.data.job_id, Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function baseline(url: string) {
  const guard = createOutboundGuard({ allowPrivate: true });
  const body = JSON.stringify({
    id: "evt_0000000000000000",
    event: "video.completed",
    created_at: 0,
    data: { job_id: "x" },
  });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < EVENTS) {
        const res = await guard.stream(url, {
          method: "POST",
          body,
          headers: {
            "content-type": "application/json",
            "x-service-signature": signature("s", Math.floor(Date.now() / 1000), body),
          },
        });
        res.cancel();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await guard.close();
  return EVENTS / seconds;
}

/** EVENTS submits over HTTP, 50 at a time, as partners' calls arrive (not in-process calls, which would not yield to I/O). */
async function submitAll(baseUrl: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  const headers = {
    authorization: `Bearer ${key}`,
    "user-agent": "mediagate-bench/1.0",
    "content-type": "application/json",
  };
  for (let i = 0; i < EVENTS; i += 50) {
    const batch = await Promise.all(
      Array.from(
        { length: Math.min(50, EVENTS - i) },
        async () =>
          (await (
            await fetch(new URL("api/v1/partner/done", baseUrl), { method: "POST", headers, body: "{}" })
          ).json()) as { job_id: string },
      ),
    );
    ids.push(...batch.map((r) => r.job_id));
  }
  return ids;
}

async function until(check: () => Promise<boolean> | boolean, ms = 600_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

async function run(backend: string, databaseUrl?: string) {
  const rcv = await receiver();
  const base = await baseline(rcv.url);
  rcv.arrivals.clear();
  const tk = await createTestKernel({
    plugins: [account, webhooks, bench],
    databaseUrl,
    start: true,
    env: { ALLOW_PRIVATE_URLS: "1" },
  });
  const db = tk.kernel.database.kysely;
  const server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port: 0, hostname: "127.0.0.1" });
  try {
    const { key } = await tk.partner();
    await tk.request("POST", "/webhook", { key, body: { url: rcv.url } });

    // Delivery throughput: the events are made with the delivery loop stopped, then it drains them.
    await tk.kernel.webhooks.stopWorkers();
    await submitAll(server.url, key);
    const pending = async () =>
      Number(
        (
          await db
            .selectFrom("webhook_deliveries")
            .select((e) => e.fn.countAll().as("n"))
            .where("status", "=", "pending")
            .executeTakeFirstOrThrow()
        ).n,
      );
    await until(async () => (await pending()) === EVENTS);
    const t0 = performance.now();
    await tk.kernel.webhooks.startWorkers();
    await until(() => rcv.arrivals.size >= EVENTS);
    const drained = rcv.arrivals.size / ((performance.now() - t0) / 1000);
    await until(async () => (await pending()) === 0, 30_000);
    rcv.arrivals.clear();

    // How long the process's event loop was held at a time while jobs ran: on the embedded database every
    // query runs on this thread, and a send or a receiver's answer waits for the loop.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    // Lag: jobs end while the loop runs; from each job's terminal transition to the receiver's 2xx.
    const started = Date.now();
    const ids = await submitAll(server.url, key);
    await until(() => rcv.arrivals.size >= EVENTS);
    const elapsed = (Math.max(...rcv.arrivals.values()) - started) / 1000;
    const rows = await db.selectFrom("jobs").select(["id", "finished_at"]).where("id", "in", ids).execute();
    const latency = rows
      .filter((r) => r.finished_at && rcv.arrivals.has(r.id))
      .map((r) => rcv.arrivals.get(r.id)! - new Date(r.finished_at!).getTime());
    loopDelay.disable();
    console.log(
      `${backend.padEnd(9)} delivery: ${drained.toFixed(0)} events/s draining ${EVENTS} due events; direct signed-POST loop ${base.toFixed(0)}/s; ratio ${(drained / base).toFixed(2)}`,
    );
    console.log(
      `${backend.padEnd(9)} end to end: ${rcv.arrivals.size}/${EVENTS} in ${elapsed.toFixed(1)} s (${(rcv.arrivals.size / elapsed).toFixed(0)}/s: submit, run, event, delivery); terminal transition -> receiver 2xx: median ${quantile(latency, 0.5)} ms, p95 ${quantile(latency, 0.95)} ms; event loop held up to ${(loopDelay.max / 1e6).toFixed(0)} ms (p99 ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms)`,
    );
  } finally {
    await server.close();
    await tk.close();
    await rcv.close();
  }
}

console.log(
  `webhook delivery, ${EVENTS} events, one receiver (DELIVERY_LIMITS: ${DELIVERY_LIMITS.perHost} at once per destination, ${DELIVERY_LIMITS.total} in all)`,
);
await run("pglite");
const admin = new pg.Client({ connectionString: ADMIN_URL });
if (
  await admin.connect().then(
    () => true,
    () => false,
  )
) {
  const name = `mediagate_bench_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${name}`);
  try {
    await run("postgres", ADMIN_URL.replace(/\/postgres$/, `/${name}`));
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}
