// /metrics in the Prometheus text format (prom-client): what this process served (requests by route and
// status, latency), and, read from the database at each scrape, what the whole deployment holds (jobs by kind
// and state, queue depth, webhook deliveries by outcome, credits charged and refunded). The database figures
// are the same from every instance, so a dashboard takes them from one; the request figures are summed.
// One registry per kernel (not prom-client's global one): a test process runs many kernels side by side.

import { sql } from "kysely";
import { Counter, Gauge, type Metric, Registry } from "prom-client";
import type { Kernel } from "../core/kernel.ts";
import { type ConnectionCounts, connectionCountsOf } from "./connection-limits.ts";
import { subscriptionLimitsOf } from "./graphql/subscription-limits.ts";

export interface Metrics {
  readonly registry: Registry;
  /** One answered request: its route pattern (never the raw path: ids would explode the label set). */
  request(method: string, route: string, status: number, seconds: number): void;
}

const byKernel = new WeakMap<Kernel, Metrics>();

// Seconds: the partner API's reads answer in milliseconds, uploads and synchronous work take seconds.
const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What was served under one method and route pattern since the start. */
interface Served {
  byStatus: Map<number, number>;
  /** Requests per latency bucket (not yet cumulative; the last one is +Inf), their sum and count. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * The request counter and latency histogram, kept in plain maps and handed to the registry as two metrics in
 * prom-client's exposition form when it is scraped. prom-client's own Counter and Histogram hash a label object on
 * every observation, which with the key building cost 3-4 µs of every request (me.bench: a thirtieth of a fast
 * request); here a request costs two map lookups and three increments. The label sets are few (methods x
 * route patterns x statuses).
 */
class ServedRequests {
  readonly #byRoute = new Map<string, Map<string, Served>>();

  record(method: string, route: string, status: number, seconds: number): void {
    let routes = this.#byRoute.get(method);
    if (!routes) this.#byRoute.set(method, (routes = new Map()));
    let served = routes.get(route);
    if (!served)
      routes.set(
        route,
        (served = { byStatus: new Map(), buckets: new Array(LATENCY_BUCKETS.length + 1).fill(0), sum: 0, count: 0 }),
      );
    served.byStatus.set(status, (served.byStatus.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    served.buckets[bucket]!++;
    served.sum += seconds;
    served.count++;
  }

  *#each(): Generator<[string, string, Served]> {
    for (const [method, routes] of this.#byRoute) for (const [route, served] of routes) yield [method, route, served];
  }

  /** The two metrics as the registry reads them (`get`, the shape of prom-client's own). */
  metrics() {
    const metric = (
      name: string,
      help: string,
      type: "counter" | "histogram",
      values: () => Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>,
    ) => {
      const get = async () => ({ name, help, type, aggregator: "sum" as const, values: values() });
      return {
        name,
        help,
        type,
        aggregator: "sum" as const,
        get,
        getForPromString: get,
        reset: () => this.#byRoute.clear(),
      };
    };
    return [
      metric(
        "mediagate_http_requests_total",
        "HTTP requests answered, by method, route pattern and status.",
        "counter",
        () =>
          [...this.#each()].flatMap(([method, route, served]) =>
            [...served.byStatus].map(([status, value]) => ({ value, labels: { method, route, status } })),
          ),
      ),
      metric(
        "mediagate_http_request_duration_seconds",
        "Time to the answer's headers, by method and route pattern.",
        "histogram",
        () =>
          [...this.#each()].flatMap(([method, route, served]) => {
            let cumulative = 0;
            const buckets = served.buckets.map((n, i) => {
              cumulative += n;
              return {
                value: cumulative,
                labels: { le: i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : "+Inf", method, route },
                metricName: "mediagate_http_request_duration_seconds_bucket",
              };
            });
            return [
              ...buckets,
              {
                value: served.sum,
                labels: { method, route },
                metricName: "mediagate_http_request_duration_seconds_sum",
              },
              {
                value: served.count,
                labels: { method, route },
                metricName: "mediagate_http_request_duration_seconds_count",
              },
            ];
          }),
      ),
    ];
  }
}

/** A counter of each listener's counts under one more label (refusals by reason, time-outs by phase), read at each scrape. */
function listenerCounter(
  registry: Registry,
  listeners: () => readonly ConnectionCounts[],
  name: string,
  help: string,
  label: string,
  counts: (c: ConnectionCounts) => Readonly<Record<string, number>>,
): void {
  new Counter({
    name,
    help,
    labelNames: ["listener", label],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of listeners())
        for (const [value, n] of Object.entries(counts(c))) this.inc({ listener: c.listener, [label]: value }, n);
    },
  });
}

export function metricsOf(kernel: Kernel): Metrics {
  const known = byKernel.get(kernel);
  if (known) return known;
  const registry = new Registry();
  const served = new ServedRequests();
  for (const metric of served.metrics()) registry.registerMetric(metric as unknown as Metric);
  const db = () => kernel.database.kysely;

  new Gauge({
    name: "mediagate_jobs",
    help: "Jobs in the database, by plugin, kind and state.",
    labelNames: ["plugin", "kind", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db()
        .selectFrom("jobs")
        .select(["plugin", "kind", "state", sql<number>`count(*)::int`.as("n")])
        .groupBy(["plugin", "kind", "state"])
        .execute();
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
    name: "mediagate_media_pool",
    help: "This process's media pool (MEDIA_CONCURRENCY): its places, those taken, and work waiting for one.",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const s = kernel.mediaPool.stats();
      this.set({ state: "size" }, s.size);
      this.set({ state: "active" }, s.active);
      this.set({ state: "waiting" }, s.waiting);
    },
  });
  // Upstream routes (issue 39): each gateway route's circuit breaker, 1 for its current state.
  new Gauge({
    name: "mediagate_upstream_route_state",
    help: "Upstream gateway routes by model, place and provider: 1 for the breaker's state (closed, open, half-open), and retry_after while a Retry-After skips it.",
    labelNames: ["model", "route", "provider", "state"],
    registers: [registry],
    collect() {
      this.reset();
      const now = kernel.clock.now();
      for (const gateway of kernel.contributions("upstream.gateway"))
        for (const r of gateway.routes()) {
          const labels = { model: r.model, route: String(r.index), provider: r.provider };
          for (const state of ["closed", "open", "half-open"] as const)
            this.set({ ...labels, state }, r.state === state ? 1 : 0);
          this.set({ ...labels, state: "retry_after" }, (r.retryAfterUntil ?? 0) > now ? 1 : 0);
        }
    },
  });
  new Gauge({
    name: "mediagate_upstream_route_failures",
    help: "Consecutive submit failures of each upstream gateway route (0 after a success).",
    labelNames: ["model", "route", "provider"],
    registers: [registry],
    collect() {
      this.reset();
      for (const gateway of kernel.contributions("upstream.gateway"))
        for (const r of gateway.routes())
          this.set({ model: r.model, route: String(r.index), provider: r.provider }, r.consecutiveFailures);
    },
  });
  new Gauge({
    name: "mediagate_webhook_deliveries",
    help: "Webhook deliveries by outcome (pending while attempts remain, delivered, failed).",
    labelNames: ["status"],
    registers: [registry],
    async collect() {
      this.reset();
      const rows = await db()
        .selectFrom("webhook_deliveries")
        .select(["status", sql<number>`count(*)::int`.as("n")])
        .groupBy("status")
        .execute();
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
      const rows = await db()
        .selectFrom("ledger")
        .select(["type", sql<string>`coalesce(sum(amount), 0)`.as("total")])
        .groupBy("type")
        .execute();
      const total = new Map(rows.map((r) => [r.type, Number(r.total)]));
      // Usage rows are negative amounts: the gauge says how much was charged, as a positive number.
      this.set({ type: "charged" }, -(total.get("usage") ?? 0));
      this.set({ type: "refunded" }, total.get("refund") ?? 0);
      this.set({ type: "purchased" }, total.get("purchase") ?? 0);
      this.set({ type: "adjusted" }, total.get("adjustment") ?? 0);
    },
  });

  // The limits of transports/connection-limits.ts and graphql/subscription-limits.ts, read from their own
  // counts at each scrape (a listener's counts are registered when it is created: none for a worker).
  new Gauge({
    name: "mediagate_http_connections",
    help: "Open connections of this process, by listener (public: PORT, health: HEALTH_PORT).",
    labelNames: ["listener"],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of connectionCountsOf(kernel)) this.inc({ listener: c.listener }, c.open());
    },
  });
  const listeners = () => connectionCountsOf(kernel);
  listenerCounter(
    registry,
    listeners,
    "mediagate_http_connections_refused_total",
    "Connections closed at once over a cap, by listener and reason (per_address, max).",
    "reason",
    (c) => c.refused,
  );
  listenerCounter(
    registry,
    listeners,
    "mediagate_http_timeouts_total",
    "Connections closed for a request too slow to arrive, by listener and phase (headers, body).",
    "phase",
    (c) => c.timeouts,
  );
  const subscriptions = subscriptionLimitsOf(kernel);
  new Gauge({
    name: "mediagate_graphql_subscriptions",
    help: "Open GraphQL subscriptions of this process (SSE and WebSocket).",
    registers: [registry],
    collect() {
      this.set(subscriptions.open);
    },
  });
  new Counter({
    name: "mediagate_graphql_subscriptions_refused_total",
    help: "GraphQL subscriptions refused over a cap, by reason (per_key, per_socket).",
    labelNames: ["reason"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, n] of Object.entries(subscriptions.refused)) this.inc({ reason }, n);
    },
  });

  const metrics: Metrics = {
    registry,
    request: (method, route, status, seconds) => served.record(method, route, status, seconds),
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
    return new Response("# metrics unavailable: the database did not answer\n", {
      status: 503,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
}
