// The HTTP server, composed in one place: the REST partner API (rest/), the admin API (admin/), GraphQL over
// HTTP and, on a Node server, over WebSocket (graphql/), media links and the health check. `createHttpApp`
// is the fetch handler tests drive through `app.fetch` without a port; `serveHttp` puts the same app on a
// port under Node or Deno (main.ts, benches).
import { type H3, type H3Event, HTTPResponse, serve } from "h3";
import type { Kernel } from "../core/kernel.ts";
import type { AccessEntry, Logger } from "../core/log.ts";
import { checkReadiness } from "../core/readiness.ts";
import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";
import { type AdminDoor, adminDoor } from "./admin/door.ts";
import { adminRouteDocs, mountAdminApi } from "./admin/routes.ts";
import { guardConnections } from "./connection-limits.ts";
import { endSubscriptions } from "./graphql/subscriptions.ts";
import type { GraphqlWebSocket } from "./graphql/websocket.ts";
import { createGraphql, GRAPHQL_PATH, type GraphqlServer } from "./graphql/yoga.ts";
import {
  CLIENT_CLOSED,
  chooseEncoding,
  clientGone,
  compressJson,
  corsHeaders,
  mountSocketConventions,
  type NodeServerEvents,
  RoutedH3,
  requestIdOf,
  type SocketConventionsHost,
  stageHeaders,
  traceIdOf,
} from "./http-conventions.ts";
import { type Metrics, metricsOf, metricsResponse } from "./metrics.ts";
import { mountConsole } from "./rest/console.ts";
import { mountDocs } from "./rest/docs.ts";
import { mountMedia } from "./rest/media.ts";
import { mountPartnerApi, PARTNER_BASE } from "./rest/partner-api.ts";
import { json } from "./rest/respond.ts";
import { mountUpstreamCallbacks } from "./rest/upstream-callbacks.ts";

export interface HttpAppOptions {
  adminToken: string;
  /** The GraphQL server to mount; `serveHttp` passes the one its WebSocket transport shares. */
  graphql?: GraphqlServer;
  /**
   * The HTTP conventions every route shares (mountConventions). Default on; off only so a benchmark can measure what they cost
   * against the same app without them (test/bench/me.bench.ts).
   */
  conventions?: boolean;
  /**
   * Whether this app serves the admin API (default true). False when the admin API is served apart
   * (ADMIN_PORT / ADMIN_HOST, `serveAdmin`): its paths are then a 404 here like any unknown path.
   */
  admin?: boolean;
}

/**
 * `/healthz`, liveness: 200 while the process answers at all, whatever its dependencies do (restarting a
 * process because its database is down helps nobody). `/readyz`, readiness: 200 {"status":"ready","checks":{…}}
 * when the database, the queue and Redis (when configured) answer, else 503 {"status":"not ready","checks":{…}}
 * with the failing check named (core/readiness.ts).
 */
function mountProbes(app: H3, kernel: Kernel, door?: AdminDoor): void {
  app.get("/healthz", () => json(200, { status: "ok" }));
  app.get("/readyz", async () => {
    const { ready, checks, details } = await checkReadiness(kernel);
    return json(ready ? 200 : 503, { status: ready ? "ready" : "not ready", checks, ...(details ? { details } : {}) });
  });
  // /metrics (transports/metrics.ts): on the public port only with the admin token (a scraper sends it as a
  // bearer token); on HEALTH_PORT, which an operator keeps off the public network, without.
  // The admin door (transports/admin/door.ts) counts its wrong tokens like the admin API's.
  app.get("/metrics", async (event) => {
    if (door) {
      try {
        await door.admit(event.req as Request, METRICS_CHALLENGE);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return json(err.status, { ...err.body(), request_id: requestIdOf(event) }, err.headers);
      }
    }
    return metricsResponse(kernel);
  });
}

const METRICS_CHALLENGE = { "www-authenticate": 'Bearer realm="metrics"' };

/** Where a listed browser origin may call (CORS_ORIGINS): the partner API and GraphQL, never the admin API. */
function inCorsScope(pathname: string): boolean {
  return pathname === GRAPHQL_PATH || pathname.startsWith(`${PARTNER_BASE}/`);
}

/**
 * The conventions every route shares (transports/http-conventions.ts): X-Request-Id on every answer, OPTIONS answered
 * with Allow (and a CORS preflight for a listed origin), CORS headers on the answers to a listed origin, JSON
 * compressed above 1 KB. One function in front of every route (RoutedH3.around), which sets its headers on the
 * answer the route returns (no route has to know); only what h3 renders itself (a thrown error) gets them
 * through `event.res.errHeaders`. Staging every header on `event.res` would be simpler, and costs a copy of
 * every answer's headers (me.bench).
 */
function mountConventions(app: RoutedH3, kernel: Kernel): void {
  const origins = kernel.config.corsOrigins;
  const metrics = metricsOf(kernel);
  const log = kernel.config.accessLog ? kernel.log : undefined;
  app.around(async (event, route) => {
    const started = performance.now();
    const request = event.req as Request;
    const cors = origins.length > 0 && inCorsScope(event.url.pathname);
    const trace = traceIdOf(event);
    if (request.method === "OPTIONS") {
      const allow = app.allowedMethods(event.url.pathname);
      if (allow.length > 0) {
        const headers = {
          allow: allow.join(", "),
          "x-request-id": trace,
          ...(cors ? { vary: "Origin", ...corsHeaders(origins, request, allow) } : {}),
        };
        return new Response(null, { status: 204, headers });
      }
    }
    const corsAdded = cors ? { vary: "Origin", ...corsHeaders(origins, request, []) } : undefined;
    const staged = stageHeaders(event, corsAdded ? { "x-request-id": trace, ...corsAdded } : { "x-request-id": trace });
    let answer: unknown;
    try {
      answer = await route(event);
      const accept = request.headers.get("accept-encoding");
      const encoding = accept && request.method !== "HEAD" ? chooseEncoding(accept) : undefined;
      // Inside the try: a compression that fails is an error answer with its request id like any other.
      if (encoding) answer = await compressJson(answer, encoding);
    } catch (error) {
      event.res.errHeaders.set("x-request-id", trace);
      for (const [k, v] of Object.entries(corsAdded ?? {})) event.res.errHeaders.set(k, v);
      observed(metrics, log, event, trace, unlessGone(request, (error as { status?: number }).status ?? 500), started);
      throw error;
    }
    observed(
      metrics,
      log,
      event,
      trace,
      unlessGone(
        request,
        answer instanceof Response || answer instanceof HTTPResponse
          ? (answer.status ?? 200)
          : (event.res.status ?? 200),
      ),
      started,
    );
    // The route put the staged headers into its answer's record: nothing to add (a compressed copy keeps them).
    if (staged.taken && (answer instanceof Response || answer instanceof HTTPResponse)) return answer;
    return withHeaders(event, answer, trace, corsAdded);
  });
}

/**
 * A 5xx whose client had already gone is recorded as 499 (nginx's "client closed request"): a body cut
 * mid-stream is the client's doing, and must not page anyone as a server error. The 499 is logged at info
 * like every access line, and counted under its own status in /metrics.
 */
function unlessGone(request: Request, status: number): number {
  return status >= 500 && clientGone(request) ? CLIENT_CLOSED : status;
}

/**
 * One request seen: the access log line (request id, partner id once the key was accepted, method, route
 * pattern, status, milliseconds; never a key or a query string) when `log` is given, and the request metrics.
 */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

function observed(
  metrics: Metrics,
  log: Logger | undefined,
  event: H3Event,
  trace: string,
  status: number,
  started: number,
): void {
  const ms = performance.now() - started;
  const route = (event.context.matchedRoute as { route?: string } | undefined)?.route ?? "(unmatched)";
  // A label of a fixed set: a runtime that accepts any method token (Deno) must not grow the label sets.
  const method = KNOWN_METHODS.has(event.req.method) ? event.req.method : "OTHER";
  metrics.request(method, route, status, ms / 1000);
  if (!log) return;
  const requestId = requestIdOf(event);
  const partnerId = (event.context as { partnerId?: string }).partnerId ?? null;
  const duration = Math.round(ms * 10) / 10;
  // A client's own X-Request-Id is logged too: it is the id their support request will quote. (Two literals
  // rather than a spread: an object literal with a spread is built property by property at run time.)
  const entry: AccessEntry =
    trace === requestId
      ? { request_id: requestId, partner_id: partnerId, method, route, status, duration_ms: duration }
      : {
          request_id: requestId,
          client_request_id: trace,
          partner_id: partnerId,
          method,
          route,
          status,
          duration_ms: duration,
        };
  if (log.access) log.access(entry);
  else log.info("request", entry);
}

/** The answer with its X-Request-Id (and CORS headers): set on it when it is a Response or h3's HTTPResponse. */
function withHeaders(
  event: H3Event,
  answer: unknown,
  trace: string,
  cors: Record<string, string> | undefined,
): unknown {
  if (answer instanceof Response || answer instanceof HTTPResponse) {
    try {
      answer.headers.set("x-request-id", trace);
      if (cors)
        for (const [k, v] of Object.entries(cors))
          k === "vary" ? answer.headers.append(k, v) : answer.headers.set(k, v);
      return answer;
    } catch {
      // Immutable headers (a Response from fetch): copy once.
      const copy = new Response(answer.body as BodyInit | null, {
        status: answer.status ?? 200,
        statusText: answer.statusText,
        headers: answer.headers,
      });
      copy.headers.set("x-request-id", trace);
      for (const [k, v] of Object.entries(cors ?? {}))
        k === "vary" ? copy.headers.append(k, v) : copy.headers.set(k, v);
      return copy;
    }
  }
  event.res.headers.set("x-request-id", trace);
  for (const [k, v] of Object.entries(cors ?? {})) event.res.headers.set(k, v);
  return answer;
}

export function createHttpApp(kernel: Kernel, options: HttpAppOptions): RoutedH3 {
  const app = new RoutedH3();
  if (options.conventions !== false) mountConventions(app, kernel);
  // One door for the admin API and /metrics: a guess at either counts against the same address.
  const door = adminDoor(options.adminToken, kernel.limiter, kernel.log);
  mountProbes(app, kernel, door);
  mountPartnerApi(app, kernel);
  mountDocs(
    app,
    kernel,
    options.admin === false
      ? adminRouteDocs(kernel.registry)
      : mountAdminApi(app, kernel.registry, options.adminToken, () => kernel, door),
  );
  mountMedia(app, kernel.blobs, { secret: kernel.config.upstreamCallbackSecret, clock: kernel.clock });
  mountUpstreamCallbacks(app, kernel);
  mountConsole(app, kernel);
  const graphql = options.graphql ?? createGraphql(kernel);
  app.on("GET", GRAPHQL_PATH, (event) => graphql.yoga.fetch(event.req as Request));
  app.withoutHead(GRAPHQL_PATH);
  app.on("POST", GRAPHQL_PATH, (event) => graphql.fetch(event.req as Request));
  mountUnmatched(app);
  return app;
}

export interface ServeHttpOptions {
  adminToken: string;
  /** See HttpAppOptions.conventions. */
  conventions?: boolean;
  /** See HttpAppOptions.admin: false when `serveAdmin` serves the admin API on a port of its own. */
  admin?: boolean;
  port: number;
  hostname: string;
}

export interface HttpServer {
  /** `http://<host>:<port>/` as the server listens (the port is the real one when 0 was asked for). */
  url: string;
  /** Whether GraphQL subscriptions are also served over WebSocket (Node); over SSE they always are. */
  websocket: boolean;
  /**
   * Ends every open subscription with a final "shutting down" error (endSubscriptions), closes the WebSocket
   * server, then waits for open requests; after `graceMs` (default: none) the connections still open are cut.
   */
  close(graceMs?: number): Promise<void>;
}

export async function serveHttp(kernel: Kernel, options: ServeHttpOptions): Promise<HttpServer> {
  const graphql = createGraphql(kernel);
  // gracefulShutdown off: srvx would add its own SIGINT/SIGTERM handler that closes the raw server, racing
  // main.ts's shutdown (which first ends the open subscriptions with their final message). srvx turns it off
  // by itself only when it sees a test or CI environment, which is why the tests never showed the race.
  const app = createHttpApp(kernel, {
    adminToken: options.adminToken,
    graphql,
    conventions: options.conventions,
    admin: options.admin,
  });
  const server = serve(app, { port: options.port, hostname: options.hostname, silent: true, gracefulShutdown: false });
  // Time-outs and connection caps (connection-limits.ts), set before the server's first connection.
  if (server.node?.server)
    guardConnections(server.node.server, kernel.config.connections, { owner: kernel, listener: "public" });
  await server.ready();
  // GraphQL over WebSocket needs the node:http server, which srvx exposes under Node only. Under Deno,
  // subscriptions are served over SSE (the same /graphql endpoint), and `ws` is never loaded.
  let socket: GraphqlWebSocket | undefined;
  const nodeServer = server.node?.server;
  if (nodeServer) {
    const { attachGraphqlWebSocket } = await import("./graphql/websocket.ts");
    socket = attachGraphqlWebSocket(nodeServer, graphql);
    mountSocketConventions(nodeServer as NodeServerEvents, socketHost(kernel, app));
  }
  return {
    url: server.url!,
    websocket: socket !== undefined,
    async close(graceMs = 0) {
      // Every open subscription (SSE and WebSocket) gets a final "shutting down" error before its connection goes.
      await endSubscriptions(kernel);
      await socket?.close();
      if (graceMs <= 0) return void (await server.close(true));
      const force = setTimeout(() => void server.close(true), graceMs);
      await server.close();
      clearTimeout(force);
    },
  };
}

/** What the socket conventions (http-conventions.ts) record of an answer Node's parser made them give. */
function socketHost(kernel: Kernel, app: RoutedH3): SocketConventionsHost {
  const metrics = metricsOf(kernel);
  const log = kernel.config.accessLog ? kernel.log : undefined;
  return {
    allowedMethods: (pathname) => app.allowedMethods(pathname),
    observe({ requestId, method, status, ms }) {
      metrics.request(method, "(unmatched)", status, ms / 1000);
      if (!log) return;
      const entry: AccessEntry = {
        request_id: requestId,
        partner_id: null,
        method,
        route: "(unmatched)",
        status,
        duration_ms: ms,
      };
      if (log.access) log.access(entry);
      else log.info("request", entry);
    },
  };
}

/**
 * The admin API alone on a port (and address) of its own (ADMIN_PORT / ADMIN_HOST), off the public one, which
 * then answers its paths 404: an operator binds it to a private interface or a port the firewall keeps in.
 * The same conventions (X-Request-Id, the access log, metrics) and the same door (transports/admin/door.ts).
 */
export async function serveAdmin(
  kernel: Kernel,
  options: { adminToken: string; port: number; hostname: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = new RoutedH3();
  mountConventions(app, kernel);
  mountAdminApi(app, kernel.registry, options.adminToken, () => kernel);
  mountUnmatched(app);
  const server = serve(app, { port: options.port, hostname: options.hostname, silent: true, gracefulShutdown: false });
  if (server.node?.server)
    guardConnections(server.node.server, kernel.config.connections, { owner: kernel, listener: "admin" });
  await server.ready();
  if (server.node?.server) mountSocketConventions(server.node.server as NodeServerEvents, socketHost(kernel, app));
  return { url: server.url!, close: () => server.close(true) };
}

/**
 * `/healthz` and `/readyz` alone on a port of their own (HEALTH_PORT): the probe of a ROLE=worker process,
 * which serves no API, and, in the other roles, probes kept off the public port. Anything else is a 404.
 */
export async function serveHealth(
  kernel: Kernel,
  options: { port: number; hostname: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = new RoutedH3();
  mountProbes(app, kernel);
  app.all("/**", () => json(404, { error: KERNEL_ERRORS.notFound }));
  const server = serve(app, { port: options.port, hostname: options.hostname, silent: true, gracefulShutdown: false });
  if (server.node?.server)
    guardConnections(server.node.server, kernel.config.connections, { owner: kernel, listener: "health" });
  await server.ready();
  return { url: server.url!, close: () => server.close(true) };
}

/** Last route of both apps: a known path with another method is 405 with `Allow`, anything else 404. */
function mountUnmatched(app: RoutedH3): void {
  app.all("/**", (event) => {
    const allow = app.allowedMethods(event.url.pathname);
    if (allow.length > 0)
      return json(
        405,
        { error: KERNEL_ERRORS.methodNotAllowed, request_id: requestIdOf(event) },
        { allow: allow.join(", ") },
      );
    return json(404, { error: KERNEL_ERRORS.notFound, request_id: requestIdOf(event) });
  });
}
