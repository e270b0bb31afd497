// One answer, for the whole kernel, to "did this fail because something was briefly out of reach?". The job
// runtime retries such an attempt with back-off instead of failing and refunding it; the transports answer
// it with 503 and Retry-After instead of 500; a plugin that waits on an upstream asks the same question.
// A full disk is its own kind: nothing retried soon will fix it, and the partner is told 507.
//
// Errors arrive wrapped (kysely, pg-boss, fetch and AggregateError put the cause under `cause` or
// `errors`), so every check walks the whole chain, a few levels deep at most.

/** What was out of reach: a connection (database, Redis, an upstream's socket), a time-out, an upstream's own 5xx/429, the disk. */
export type TransientKind = "connection" | "timeout" | "upstream" | "disk";

/** Postgres SQLSTATEs that say the server or the connection went away, or asked us to try again. */
const PG_TRANSIENT_CODES = new Set([
  "57P01", // admin_shutdown (pg_terminate_backend, a fast stop)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down)
  "53300", // too_many_connections
  "40001", // serialization_failure
  "40P01", // deadlock_detected
]);
/** Class 08: connection exceptions. */
const PG_CONNECTION_CLASS = "08";
/** disk_full, and the two Node codes for a full disk or quota. */
const DISK_FULL_CODES = new Set(["53100", "ENOSPC", "EDQUOT"]);

const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ENOTCONN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);
const TIMEOUT_CODES = new Set([
  "ETIMEDOUT",
  "ESOCKETTIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/** Messages of node-postgres, pg-pool and ioredis that carry no code of their own. */
const CONNECTION_MESSAGES = [
  /^Connection terminated/i, // pg: "Connection terminated unexpectedly", "... due to connection timeout"
  /timeout exceeded when trying to connect/i, // pg-pool's connectionTimeoutMillis
  /Client has encountered a connection error and is not queryable/i,
  /^Connection is closed\.?$/, // ioredis
  /Stream isn't writeable/i, // ioredis with the offline queue off
  /Reached the max retries per request limit/i, // ioredis MaxRetriesPerRequestError
  /the database system is (starting up|shutting down|in recovery mode)/i,
];
/** Messages that say a time limit of ours ran out. */
const TIMEOUT_MESSAGES = [
  /^Command timed out$/, // ioredis commandTimeout (storage/counters.ts)
];

/** Error classes by name, so this module imports no driver and no contract. */
const NAMES: Record<string, TransientKind> = {
  MaxRetriesPerRequestError: "connection",
  RedisUnreachableError: "connection", // storage/counters.ts: a command refused while Redis reconnects
  TimeoutError: "timeout", // AbortSignal.timeout
};

const MAX_DEPTH = 6;

function* chain(err: unknown, depth = 0): Generator<any> {
  if (err === null || err === undefined || depth > MAX_DEPTH) return;
  yield err;
  if (typeof err !== "object") return;
  const e = err as { cause?: unknown; errors?: unknown };
  if (e.cause !== undefined && e.cause !== err) yield* chain(e.cause, depth + 1);
  if (Array.isArray(e.errors)) for (const inner of e.errors.slice(0, 8)) yield* chain(inner, depth + 1);
}

/** An HTTP status an upstream answered that is worth asking again later: 408, 425, 429 and 5xx except 501. */
function isTransientStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599 && status !== 501);
}

/** What was out of reach, or null when the error is not a transient one (a bug, a refusal, bad media). */
export function transientKind(err: unknown): TransientKind | null {
  for (const e of chain(err)) {
    if (typeof e !== "object") continue;
    const code = typeof e.code === "string" ? e.code : undefined;
    if (code && DISK_FULL_CODES.has(code)) return "disk";
  }
  for (const e of chain(err)) {
    if (typeof e !== "object") continue;
    const code = typeof e.code === "string" ? e.code : undefined;
    if (code) {
      if (PG_TRANSIENT_CODES.has(code) || (code.length === 5 && code.startsWith(PG_CONNECTION_CLASS)))
        return "connection";
      if (SOCKET_CODES.has(code)) return "connection";
      if (TIMEOUT_CODES.has(code)) return "timeout";
    }
    const byName = typeof e.name === "string" ? NAMES[e.name] : undefined;
    if (byName) return byName;
    // An upstream's HTTP failure that carries its status as `upstreamStatus` (an adapter of a real service sets
    // it). The sandbox contracts' errors carry none: a model's provider chain moves on to its next provider on
    // TransientProviderError by itself, and what the chain finally throws is the job's sanitized failure.
    if (typeof e.upstreamStatus === "number" && isTransientStatus(e.upstreamStatus)) return "upstream";
    const message = typeof e.message === "string" ? e.message : "";
    if (message && CONNECTION_MESSAGES.some((re) => re.test(message))) return "connection";
    if (message && TIMEOUT_MESSAGES.some((re) => re.test(message))) return "timeout";
  }
  return null;
}

/** True when trying again later may well succeed (a full disk is not: its kind is "disk"). */
export function isTransient(err: unknown): boolean {
  const kind = transientKind(err);
  return kind !== null && kind !== "disk";
}
