// Benchmark: webhook delivery throughput. 1,000 jobs end and each event goes to a receiver on 127.0.0.1;
// reports events per second and the median and p95 latency from the terminal transition (the job row's
// finished_at) to the receiver's 2xx. The baseline in the same run: the same 1,000 signed POSTs sent
// straight through the outbound guard by a loop of the same concurrency (16), without queue or database.
// Run: npx tsx test/bench/webhooks.bench.ts   (BENCH_EVENTS to change the count; PGlite, then Postgres if reachable)
import { createServer } from "node:http";
import { queuedThen } from "../../core/job-states.ts";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import process from "node:process";
import pg from "pg";
import { z } from "zod";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { signature } from "../../core/webhooks.ts";
import account from "../../plugins/account/index.ts";
import webhooks from "../../plugins/webhooks/index.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1000);
const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

const done: JobKindDeclaration<Record<string, never>> = {
  ...queuedThen("completed", "failed"),
  failError: "failed",
  concurrency: 8,
  events: { success: "video.completed", failure: "video.failed", data: async (_trx, job) => ({ job_id: job.jobId, status: "completed" }) },
  async run() {
    return { state: "completed" };
  },
};

const bench = definePlugin({
  name: "hookbench",
  rateLimits: { "POST /done": [{ limit: 1_000_000, windowSeconds: 60 }] },
  jobs: { done },
  operations: [
    operation({
      method: "POST",
      path: "/done",
      status: 202,
      input: z.object({}),
      async handle(ctx) {
        return { job_id: (await ctx.submitJob({ kind: "done", credits: 0, state: "queued", input: {} })).jobId };
      },
    }),
  ],
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
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, arrivals, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function baseline(url: string) {
  const guard = createOutboundGuard({ allowPrivate: true });
  const body = JSON.stringify({ id: "evt_0000000000000000", event: "video.completed", created_at: 0, data: { job_id: "x" } });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < EVENTS) {
        const res = await guard.stream(url, { method: "POST", body, headers: { "content-type": "application/json", "x-service-signature": signature("s", Math.floor(Date.now() / 1000), body) } });
        res.cancel();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await guard.close();
  return EVENTS / seconds;
}

async function run(backend: string, databaseUrl?: string) {
  const rcv = await receiver();
  const base = await baseline(rcv.url);
  rcv.arrivals.clear();
  const tk = await createTestKernel({ plugins: [account, webhooks, bench], databaseUrl, start: true, env: { ALLOW_PRIVATE_URLS: "1" } });
  try {
    const { key } = await tk.partner();
    await tk.request("POST", "/webhook", { key, body: { url: rcv.url } });
    const t0 = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, EVENTS - i) }, () => tk.request("POST", "/done", { key, body: {} })));
      ids.push(...batch.map((r) => r.body.job_id as string));
    }
    const deadline = Date.now() + 600_000;
    while (rcv.arrivals.size < EVENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const elapsed = (Math.max(...rcv.arrivals.values()) - t0) / 1000;
    const rows = await tk.kernel.database.kysely.selectFrom("jobs").select(["id", "finished_at"]).where("id", "in", ids).execute();
    const latency = rows.filter((r) => r.finished_at && rcv.arrivals.has(r.id)).map((r) => rcv.arrivals.get(r.id)! - new Date(r.finished_at!).getTime());
    const rate = rcv.arrivals.size / elapsed;
    console.log(`${backend.padEnd(9)} ${rcv.arrivals.size}/${EVENTS} delivered in ${elapsed.toFixed(1)} s: ${rate.toFixed(0)} events/s (submit, run, event, delivery); direct POST baseline ${base.toFixed(0)}/s; ratio ${(rate / base).toFixed(2)}`);
    console.log(`${backend.padEnd(9)} terminal transition -> receiver 2xx: median ${quantile(latency, 0.5)} ms, p95 ${quantile(latency, 0.95)} ms`);
  } finally {
    await tk.close();
    await rcv.close();
  }
}

console.log(`webhook delivery, ${EVENTS} events, 16 delivery slots per process`);
await run("pglite");
const admin = new pg.Client({ connectionString: ADMIN_URL });
if (await admin.connect().then(() => true, () => false)) {
  const name = `mediagate_bench_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${name}`);
  try {
    await run("postgres", ADMIN_URL.replace(/\/postgres$/, `/${name}`));
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}
