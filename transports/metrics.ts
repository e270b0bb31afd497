// /metrics in the Prometheus text format (prom-client): what this process served (requests by route and
// status, latency), and, read from the database at each scrape, what the whole deployment holds (jobs by kind
// and state, queue depth, webhook deliveries by outcome, credits charged and refunded). The database figures
// are the same from every instance, so a dashboard takes them from one; the request figures are summed.
// One registry per kernel (not prom-client's global one): a test process runs many kernels side by side.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { sql } from "kysely";
import type { Kernel } from "../core/kernel.ts";

export interface Metrics {
  readonly registry: Registry;
  /** One answered request: its route pattern (never the raw path: ids would explode the label set). */
  request(method: string, route: string, status: number, seconds: number): void;
}

const byKernel = new WeakMap<Kernel, Metrics>();

// Seconds: the partner API's reads answer in milliseconds, uploads and synchronous work take seconds.
const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function metricsOf(kernel: Kernel): Metrics {
  const known = byKernel.get(kernel);
  if (known) return known;
  const registry = new Registry();
  const requests = new Counter({ name: "mediagate_http_requests_total", help: "HTTP requests answered, by method, route pattern and status.", labelNames: ["method", "route", "status"], registers: [registry] });
  const latency = new Histogram({ name: "mediagate_http_request_duration_seconds", help: "Time to the answer's headers, by method and route pattern.", labelNames: ["method", "route"], buckets: LATENCY_BUCKETS, registers: [registry] });
  const db = () => kernel.database.kysely;

  new Gauge({
    name: "mediagate_jobs",
    help: "Jobs in the database, by plugin, kind and state.",
    labelNames: ["plugin", "kind", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().selectFrom("jobs").select(["plugin", "kind", "state", sql<number>`count(*)::int`.as("n")]).groupBy(["plugin", "kind", "state"]).execute();
      for (const r of rows) this.set({ plugin: r.plugin, kind: r.kind, state: r.state }, Number(r.n));
    },
  });
  new Gauge({
    name: "mediagate_queue_jobs",
    help: "Queue jobs by queue and state (ready to run, deferred to a later time, active).",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const q of await kernel.queue.depths()) {
        this.set({ queue: q.name, state: "ready" }, q.ready);
        this.set({ queue: q.name, state: "deferred" }, q.deferred);
        this.set({ queue: q.name, state: "active" }, q.active);
      }
    },
  });
  new Gauge({
    name: "mediagate_webhook_deliveries",
    help: "Webhook deliveries by outcome (pending while attempts remain, delivered, failed).",
    labelNames: ["status"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().selectFrom("webhook_deliveries").select(["status", sql<number>`count(*)::int`.as("n")]).groupBy("status").execute();
      for (const r of rows) this.set({ status: r.status }, Number(r.n));
    },
  });
  new Gauge({
    name: "mediagate_credits",
    help: "Credits in the ledger since the start: charged (usage), refunded, purchased, adjusted (net).",
    labelNames: ["type"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db().selectFrom("ledger").select(["type", sql<string>`coalesce(sum(amount), 0)`.as("total")]).groupBy("type").execute();
      const total = new Map(rows.map((r) => [r.type, Number(r.total)]));
      // Usage rows are negative amounts: the gauge says how much was charged, as a positive number.
      this.set({ type: "charged" }, -(total.get("usage") ?? 0));
      this.set({ type: "refunded" }, total.get("refund") ?? 0);
      this.set({ type: "purchased" }, total.get("purchase") ?? 0);
      this.set({ type: "adjusted" }, total.get("adjustment") ?? 0);
    },
  });

  // The label sets are few (routes x methods x statuses): their bound children are kept, so a request costs
  // two map lookups and two increments instead of prom-client hashing a label object twice (me.bench).
  const counted = new Map<string, { inc(): void }>();
  const timed = new Map<string, { observe(v: number): void }>();
  const metrics: Metrics = {
    registry,
    request(method, route, status, seconds) {
      const key = `${method} ${route}`;
      const countKey = `${key} ${status}`;
      let count = counted.get(countKey);
      if (!count) counted.set(countKey, (count = requests.labels(method, route, String(status))));
      count.inc();
      let timer = timed.get(key);
      if (!timer) timed.set(key, (timer = latency.labels(method, route)));
      timer.observe(seconds);
    },
  };
  byKernel.set(kernel, metrics);
  return metrics;
}

/** The exposition, or a 503 naming the failure when the database cannot be read for the gauges. */
export async function metricsResponse(kernel: Kernel): Promise<Response> {
  const { registry } = metricsOf(kernel);
  try {
    return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
  } catch (err) {
    kernel.log.warn("metrics: a gauge could not be read", err);
    return new Response("# metrics unavailable: the database did not answer\n", { status: 503, headers: { "content-type": "text/plain; charset=utf-8" } });
  }
}
