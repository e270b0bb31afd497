// Shared counters with expiry: in process by default, on Redis when REDIS_URL is set, so every API process
// counts against the same budget. The rate limiter is written against this interface only, which is what
// lets one algorithm serve both stores.
import { Redis, type RedisOptions } from "ioredis";
import type { Counters } from "../contracts/counters.ts";

// Redis takes whole milliseconds and treats 0 as "expire now"; both stores round the same way so a caller
// sees the same expiry whichever it runs on.
function wholeTtl(ttlMs: number): number {
  if (!Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be a finite number, got ${ttlMs}`);
  return Math.max(1, Math.ceil(ttlMs));
}

function checkStep(by: number): void {
  // INCRBY accepts only integers; refusing the same values in memory keeps the stores interchangeable.
  if (!Number.isSafeInteger(by)) throw new RangeError(`by must be a safe integer, got ${by}`);
}

// Node timers have unref(); Deno's are numbers released through Deno.unrefTimer. Either way the sweep must not
// keep a finished process (a CLI run, a test) alive.
function unrefTimer(timer: unknown): void {
  if (typeof timer === "number") (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(timer);
  else (timer as { unref?: () => void }).unref?.();
}

export function memoryCounters(now: () => number = Date.now): Counters {
  const entries = new Map<string, { value: number; expiresAt: number }>();
  const live = (key: string, t: number) => {
    const e = entries.get(key);
    if (e && e.expiresAt <= t) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };
  // Rate-limit keys are written once per partner, endpoint and window and never read again after their
  // window, so lazy expiry alone would let them pile up for the life of the process.
  const sweep = setInterval(() => {
    const t = now();
    for (const [k, e] of entries) if (e.expiresAt <= t) entries.delete(k);
  }, 60_000);
  unrefTimer(sweep);
  return {
    async increment(key, ttlMs, by = 1) {
      checkStep(by);
      const ttl = wholeTtl(ttlMs);
      // No await between the read and the write: atomic, since the event loop is the whole process.
      const t = now();
      let e = live(key, t);
      if (!e) {
        e = { value: 0, expiresAt: t + ttl };
        entries.set(key, e);
      }
      e.value += by;
      return { value: e.value, ttlMs: e.expiresAt - t };
    },
    async get(key) {
      return live(key, now())?.value ?? 0;
    },
    async ping() {},
    async close() {
      clearInterval(sweep);
      entries.clear();
    },
  };
}

// INCRBY and the first expiry in one script, so concurrent callers and a crash between the two steps can
// neither leave a key without an expiry nor push an existing expiry back (PEXPIRE NX semantics, which
// works before Redis 7 too). Returns the new value and PTTL.
const INCREMENT = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {v, ttl}`;

type ScriptedRedis = Redis & {
  mgIncrement(key: string, by: number, ttlMs: number): Promise<[number, number]>;
};

/**
 * QUIT when connected; otherwise drop the connection at once. QUIT on a connection that is still trying to
 * reach its server waits for it (a boot that failed to reach Redis would then hang on its way out).
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === "ready") await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
}

// While Redis is out of reach a request must fail at once, as a 503 (core/errors.ts outageError), and serve
// again as soon as Redis is back. ioredis by default queues a command while it reconnects and gives up only
// after three failed reconnects (2.6-7.2 s per request in an outage). Here a command fails on the first
// failed reconnect (maxRetriesPerRequest 0), at once while the connection is known lost (whileReachable),
// and after REDIS_COMMAND_TIMEOUT_MS when a server stops answering without closing (a host gone from the
// network); reconnects go on in the background, at most REDIS_RECONNECT_MAX_MS apart.

/**
 * How long a command may wait for its answer. A Redis that is down or restarting closes or refuses the
 * connection, which fails a command at once whatever this is; this bounds only a server that stopped answering
 * without closing (a host gone from the network). Far above a real command's time (well under a millisecond):
 * a process starved of CPU on a loaded machine can go seconds between two turns of its event loop, and its
 * timers then fire before the answers waiting on its sockets are read.
 */
const REDIS_COMMAND_TIMEOUT_MS = 5_000;
/** The longest pause between reconnect attempts (ioredis's default grows to 2 s). */
const REDIS_RECONNECT_MAX_MS = 1_000;

/** The connection options of every long-lived Redis client (counters, pub/sub). */
export function redisClientOptions(extra: RedisOptions = {}): RedisOptions {
  return {
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    retryStrategy: (times: number) => Math.min(times * 50, REDIS_RECONNECT_MAX_MS),
    ...extra,
  };
}

/** Redis is known to be out of reach (lib/transient.ts classifies it by name: a 503, not a 500). */
export class RedisUnreachableError extends Error {
  override name = "RedisUnreachableError";
  constructor(url: string) {
    super(`Redis at ${describeRedisUrl(url)} is out of reach (reconnecting)`);
  }
}

/**
 * Throws at once while `redis` has lost its connection and waits to reconnect, instead of queueing the
 * command until the next attempt. A connection still being made (at boot, or an attempt under way) queues
 * as usual.
 */
export function whileReachable(redis: Redis, url: string): void {
  if (redis.status === "reconnecting" || redis.status === "close") throw new RedisUnreachableError(url);
}

/** `host:port` of a Redis URL, without user or password, for messages. */
export function describeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || "localhost"}:${u.port || "6379"}`;
  } catch {
    return "(a value that is not a URL)";
  }
}

/**
 * Connects to `url` once, on a connection of its own, and PINGs; rejects with the connection's own error
 * (refused, unknown host, wrong password) or after `timeoutMs`. The stores' connections retry for ever, which
 * is right once running and wrong at boot: an unreachable REDIS_URL must stop the boot, by name, at once.
 */
export async function probeRedis(url: string, timeoutMs: number): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The connection's own error (ECONNREFUSED, ENOTFOUND) comes as an event; connect() then rejects with a
  // bare "Connection is closed.", so the event's is the one reported.
  let cause: Error | undefined;
  redis.on("error", (err: Error) => (cause ??= err));
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      (async () => {
        try {
          await redis.connect();
          await redis.ping();
        } catch (err) {
          throw cause ?? err;
        }
      })(),
      new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}

export function redisCounters(options: { url: string; prefix?: string }): Counters {
  const prefix = options.prefix ?? "";
  // Auto-pipelining batches the many small scripts a burst of requests sends into few round trips.
  const redis = new Redis(options.url, redisClientOptions({ enableAutoPipelining: true })) as ScriptedRedis;
  const reachable = () => whileReachable(redis, options.url);
  // Failures surface on the command that hit them; an idle reconnect must not crash the process.
  redis.on("error", () => {});
  // defineCommand sends EVALSHA and falls back to EVAL once per connection, instead of the script each time.
  redis.defineCommand("mgIncrement", { numberOfKeys: 1, lua: INCREMENT });
  return {
    async increment(key, ttlMs, by = 1) {
      checkStep(by);
      reachable();
      const [value, ttl] = await redis.mgIncrement(prefix + key, by, wholeTtl(ttlMs));
      return { value: Number(value), ttlMs: Number(ttl) };
    },
    async get(key) {
      reachable();
      return Number((await redis.get(prefix + key)) ?? 0);
    },
    async ping() {
      reachable();
      await redis.ping();
    },
    close: () => closeRedis(redis),
  };
}
