// The test kit: a whole kernel in memory (PGlite, memory blobs, memory counters and pub/sub, a fake clock)
// and the HTTP app (transports/http.ts: REST, admin, GraphQL, media) driven through `app.fetch`, no server.
// Our plugins and a third party's are tested the same way. Pass `databaseUrl` / `redisUrl` to run the same
// test on Postgres and Redis.

import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeClock, fakeClock } from "../core/clock.ts";
import { type Config, loadConfig } from "../core/config.ts";
import { createKernel, type Kernel } from "../core/kernel.ts";
import { createLogger, type Logger } from "../core/log.ts";
import type { PluginDeclaration } from "../core/plugin.ts";
import type { OutboundGuard } from "../lib/outbound/index.ts";
import { memoryBlobStore } from "../storage/blobs.ts";
import { memoryCounters, redisCounters } from "../storage/counters.ts";
import { type Database, openDatabase } from "../storage/db.ts";
import { memoryPubSub, redisPubSub } from "../storage/pubsub.ts";
import type { PartnerLimits, PricingTier } from "../storage/tables.ts";
import { createHttpApp } from "../transports/http.ts";
import { pgliteTemplate, seedEmbeddedDataDir } from "./pglite-template.ts";

export { type FalStandIn, type FalStandInOptions, startFalStandIn } from "./standins/fal.ts";
export { type ReplicateStandIn, type ReplicateStandInOptions, startReplicateStandIn } from "./standins/replicate.ts";

export interface TestKernelOptions {
  plugins: readonly PluginDeclaration[];
  /** Postgres instead of in-memory PGlite (an isolated, empty database). */
  databaseUrl?: string;
  /**
   * PGlite on disk in this directory instead of in memory (without `databaseUrl`), so a second kernel can
   * open it after the first closes: a restart, in process.
   */
  dataDir?: string;
  /** Redis for counters and pub/sub instead of memory. */
  redisUrl?: string;
  /** Extra environment: the kernel's variables and the plugins' declared ones (SANDBOX_LATENCY_MS defaults to 0 here). */
  env?: Record<string, string>;
  /** Start background work (queue workers, usage flushing). Off by default: most tests need neither. */
  start?: boolean;
  /** A logger of the test's own (to read what is logged); default: LOG_LEVEL's, silent here. */
  logger?: Logger;
  /** An outbound-URL guard of the test's own (e.g. with a fake DNS resolver). */
  outbound?: OutboundGuard;
  /**
   * Called with the SQL and the parameters of every statement the kernel runs through its query builder (the
   * queue's own statements are not among them), to count what a code path costs the database.
   */
  onStatement?(sql: string, parameters: readonly unknown[]): void;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the body is not JSON. */
  body: any;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Defaults to a custom agent; pass null to send none. */
  userAgent?: string | null;
}

export interface TestKernel {
  kernel: Kernel;
  config: Config;
  clock: FakeClock;
  adminToken: string;
  /** Calls the app in process. Paths are absolute (`/api/v1/partner/me`) or relative to the partner API. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** The app's own fetch handler, for a request built by hand and the raw Response (bytes, encodings). */
  fetch(request: Request): Promise<Response>;
  /** A partner created through the kernel, with its key. */
  /** A fresh account and key; `limits` are the admin API's per-account overrides (e.g. a raised rate limit). */
  partner(options?: {
    name?: string;
    credits?: number;
    tier?: PricingTier;
    features?: Record<string, boolean>;
    limits?: PartnerLimits;
  }): Promise<{ id: string; key: string }>;
  close(): Promise<void>;
}

/** The database as the kernel sees it, with each statement's SQL handed to `onStatement` before it runs. */
function countingStatements(database: Database, onStatement: NonNullable<TestKernelOptions["onStatement"]>): Database {
  const counted = (lane: Database["kysely"]) => {
    const executor = lane.getExecutor();
    return lane.withPlugin({
      transformQuery(args) {
        const compiled = executor.compileQuery(args.node, args.queryId);
        onStatement(compiled.sql, compiled.parameters);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
  };
  return { ...database, kysely: counted(database.kysely), background: counted(database.background) };
}

export async function createTestKernel(options: TestKernelOptions): Promise<TestKernel> {
  const clock = fakeClock(Date.UTC(2026, 10, 1, 12, 0, 0));
  const config = loadConfig({
    DATA_DIR: join(tmpdir(), "mediagate-test"),
    SANDBOX_LATENCY_MS: "0",
    LOG_LEVEL: "silent",
    ...options.env,
  });
  const onDisk = !options.databaseUrl && options.dataDir;
  if (onDisk) await seedEmbeddedDataDir(options.dataDir!);
  const database = await openDatabase({
    url: options.databaseUrl,
    poolSize: 20,
    ...(onDisk ? { dataDir: options.dataDir } : { template: options.databaseUrl ? undefined : await pgliteTemplate() }),
  });
  const prefix = `mgtest:${randomBytes(4).toString("hex")}:`;
  // What the kit opens itself, the kernel does not close when it fails to boot (it closes only what it
  // opened): a plugin that fails to boot would leave the database and the Redis connections (which retry
  // for ever) open, and the test process would never exit. So the kit closes them and rethrows the error.
  const counters = options.redisUrl
    ? redisCounters({ url: options.redisUrl, prefix })
    : memoryCounters(() => clock.now());
  const pubsub = options.redisUrl ? redisPubSub({ url: options.redisUrl, prefix }) : memoryPubSub();
  let kernel: Kernel | undefined;
  let app: ReturnType<typeof createHttpApp>;
  const adminToken = "test-admin-token";
  try {
    kernel = await createKernel({
      config,
      plugins: options.plugins,
      database: options.onStatement ? countingStatements(database, options.onStatement) : database,
      blobs: memoryBlobStore(),
      counters,
      pubsub,
      clock,
      logger: options.logger ?? createLogger(config.logLevel),
      outbound: options.outbound,
    });
    if (options.start) await kernel.start();
    app = createHttpApp(kernel, { adminToken });
  } catch (err) {
    // kernel.stop closes its own part; the kit's adapters were handed in, so they are closed here either way.
    await kernel?.stop().catch(() => {});
    await Promise.allSettled([counters.close(), pubsub.close()]);
    await database.close().catch(() => {});
    throw err;
  }
  const booted = kernel;

  return {
    kernel: booted,
    config,
    clock,
    adminToken,
    async request(method, path, opts = {}) {
      const url = new URL(
        path.startsWith("/api/") || path.startsWith("/media/") || path === "/healthz" ? path : `/api/v1/partner${path}`,
        "http://mediagate.test",
      );
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.userAgent !== null) headers["user-agent"] = opts.userAgent ?? "mediagate-tests/1.0";
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      let body: string | FormData | undefined;
      if (opts.body instanceof FormData) {
        body = opts.body; // the Request sets the multipart content type with its boundary
      } else if (opts.body !== undefined) {
        body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
        headers["content-type"] ??= "application/json";
      }
      const res = await app.fetch(new Request(url, { method, headers, body }));
      const text = await res.text();
      let parsed: unknown = text;
      if ((res.headers.get("content-type") ?? "").includes("json")) parsed = JSON.parse(text);
      return { status: res.status, headers: res.headers, body: parsed };
    },
    async fetch(request) {
      return await app.fetch(request);
    },
    async partner(p = {}) {
      const { partner, apiKey } = await booted.accounts.create({
        name: p.name ?? "Test partner",
        credits: p.credits ?? 1000,
        pricingTier: p.tier,
        features: p.features,
      });
      if (p.limits) await booted.accounts.update(partner.id, { limits: p.limits });
      return { id: partner.id, key: apiKey };
    },
    async close() {
      await booted.stop();
      // Handed in, so not the kernel's to close: the Redis connections would otherwise outlive the kit.
      await Promise.allSettled([counters.close(), pubsub.close()]);
      await database.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// GraphQL through the same kernel, no server: `graphql(tk, query, variables, { key })` for queries and
// mutations, `graphqlSubscription(...)` for a subscription read over SSE, as a browser or curl would.

export interface GraphqlRequestOptions {
  key?: string;
  headers?: Record<string, string>;
  /** Defaults to a custom agent; pass null to send none. */
  userAgent?: string | null;
}

export interface GraphqlError {
  message: string;
  path?: Array<string | number>;
  extensions?: Record<string, any>;
}

export interface GraphqlResponse {
  status: number;
  headers: Headers;
  data: any;
  errors?: GraphqlError[];
}

const graphqlApps = new WeakMap<Kernel, ReturnType<typeof createHttpApp>>();

function graphqlFetch(tk: TestKernel, body: unknown, accept: string, opts: GraphqlRequestOptions): Promise<Response> {
  let app = graphqlApps.get(tk.kernel);
  if (!app) graphqlApps.set(tk.kernel, (app = createHttpApp(tk.kernel, { adminToken: tk.adminToken })));
  const headers: Record<string, string> = { "content-type": "application/json", accept, ...opts.headers };
  if (opts.userAgent !== null) headers["user-agent"] = opts.userAgent ?? "mediagate-tests/1.0";
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  return Promise.resolve(
    app.fetch(new Request("http://mediagate.test/graphql", { method: "POST", headers, body: JSON.stringify(body) })),
  );
}

/** One GraphQL document through `app.fetch`; `errors` carry the REST texts, `extensions.status` the REST status. */
export async function graphql(
  tk: TestKernel,
  query: string,
  variables?: Record<string, unknown>,
  opts: GraphqlRequestOptions = {},
): Promise<GraphqlResponse> {
  const res = await graphqlFetch(tk, { query, variables }, "application/json", opts);
  const text = await res.text();
  const body = (res.headers.get("content-type") ?? "").includes("json")
    ? JSON.parse(text)
    : { data: null, errors: [{ message: text }] };
  return {
    status: res.status,
    headers: res.headers,
    data: body.data ?? null,
    ...(body.errors ? { errors: body.errors } : {}),
  };
}

/**
 * The results of a subscription read over SSE (`Accept: text/event-stream`), one `{data, errors}` per
 * event, until the server completes it. Leaving the loop early disconnects, as a client going away does.
 */
export async function* graphqlSubscription(
  tk: TestKernel,
  query: string,
  variables?: Record<string, unknown>,
  opts: GraphqlRequestOptions = {},
): AsyncGenerator<{ data: any; errors?: GraphqlError[] }> {
  const res = await graphqlFetch(tk, { query, variables }, "text/event-stream", opts);
  if (!res.body) throw new Error(`no event stream (HTTP ${res.status})`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        }
        if (event === "complete") return;
        if (data.length && data.join("").trim()) yield JSON.parse(data.join("\n"));
      }
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n/g, "\n");
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
