// Our queue interface, and its one implementation on pg-boss 12 (pinned 12.35.0: later 12.x need a
// dependency the registry lacks). pg-boss runs on the application's own database, so a job and the rows
// it is about live and back up together:
// - embedded: the application's PGlite through pg-boss's `fromPglite` adapter. PGlite has one connection,
//   and that adapter only calls `query()`/`exec()` (plus `listen()`), which PGlite serializes with
//   `transaction()`, so pg-boss's statements queue behind an open application transaction instead of
//   landing inside it (see pglite-dialect.ts). It never opens a transaction across two calls: it has no
//   `beginTransaction`, and on the `pglite` backend every multi-statement block is a single `exec()`
//   (which pgliteDatabase below runs through `transaction()`, so a failing block cannot leak either).
// - server: Postgres at a connection string, pg-boss owning its pool.
// Work is taken by one fetcher per queue and process, in batches, not by pg-boss's per-slot polling workers
// (storage/queue-fetcher.ts says how). A fetcher is woken by a send from this process, by a NOTIFY from
// another one (we LISTEN on pg-boss's channel ourselves: pg-boss's own listener only wakes its own
// workers; `fromPglite` exposes `pglite.listen`, and PGlite delivers a NOTIFY to its own listeners at
// commit), and by one scan of all the process's queues that finds delayed jobs and retries coming due.
// pg-boss's major-version changes stay in this file.
//
// On PGlite, never `await` a queue call inside a database transaction: the transaction holds the only
// connection, pg-boss's statement waits for it, and the transaction waits for pg-boss.
import type { PGlite } from "@electric-sql/pglite";
import { type SendOptions as BossSendOptions, type ConstructorOptions, type Db, fromPglite, PgBoss } from "pg-boss";
import { POOL_CONNECT_TIMEOUT_MS } from "./db.ts";
import { createFetcher, createScanner, type Fetcher, type HeldJob, type Scanner } from "./queue-fetcher.ts";

export interface QueueJob<T = unknown> {
  id: string;
  name: string;
  data: T;
  /** 0 on the first attempt, then 1, 2, ... */
  retryCount: number;
  /**
   * Aborted when this attempt is abandoned: it ran past `expireInSeconds` (the job has been failed and will
   * be retried), or the queue stopped before it finished (the job has been handed back, see Queue.stop).
   * Either way another attempt does the work, so a handler should stop and not write its result.
   */
  signal?: AbortSignal;
}

/**
 * How a queue treats `singletonKey`. Only a policy other than `standard` makes the key unique: on a
 * `standard` queue pg-boss accepts any number of jobs with the same key.
 * - `standard`: no limit.
 * - `short`: one job per key waiting (created or retry); any number active.
 * - `singleton`: one job per key active; any number waiting.
 * - `stately`: one job per key in each state.
 * - `exclusive`: one job per key waiting or active.
 * A queue's policy is fixed when it is first created.
 */
export type QueuePolicy = "standard" | "short" | "singleton" | "stately" | "exclusive";

export interface QueueOptions {
  /** Attempts after the first (pg-boss default 2). Integer >= 0. */
  retryLimit?: number;
  /** Seconds before a failed job is tried again (default 0). Integer >= 0. */
  retryDelaySeconds?: number;
  /** Doubles the delay on each retry (with jitter), starting from `retryDelaySeconds` (or 1). */
  retryBackoff?: boolean;
  /** With `retryBackoff`: the longest delay, in seconds (default: none, the doubling goes on). Integer >= 0. */
  retryDelayMaxSeconds?: number;
  /**
   * How long one attempt may run before it counts as failed (default 900). Integer >= 1. A hung handler
   * is failed by its own process after this long; a worker whose process died is failed by whichever
   * process's maintenance pass runs next (see `superviseIntervalSeconds`).
   */
  expireInSeconds?: number;
  /**
   * Where a job goes after its last failed attempt, with the same data; the job runtime refunds from
   * there. Created with default options when it does not exist yet.
   */
  deadLetter?: string;
  /** Only applied when the queue is first created; see {@link QueuePolicy}. */
  policy?: QueuePolicy;
  /**
   * Seconds (>= 10) within which a running handler's process must show it is alive; the worker refreshes
   * it on its own. When a process dies, its job is failed (and retried) after this long instead of after
   * the whole `expireInSeconds`. Only applied when the queue is first created.
   */
  heartbeatSeconds?: number;
}

/** Runs one SQL statement on the caller's connection (an open transaction), for {@link Queue.sendWithin}. */
export type SqlExecutor = (text: string, values: unknown[]) => Promise<{ rows: any[] }>;

export interface SendOptions {
  /** Not delivered before this many seconds from now. */
  startAfterSeconds?: number;
  /** Deduplicates only on a queue whose policy is not `standard`; a refused send returns null. */
  singletonKey?: string;
  retryLimit?: number;
  expireInSeconds?: number;
}

export interface WorkOptions {
  /** Jobs of this queue run at once in this process (default 1). */
  concurrency?: number;
  /**
   * The longest this process goes without looking for due jobs it was not told about (a retry or a
   * delayed job whose time is unknown here, a send whose NOTIFY was lost), >= 0.5 (default 10). One scan
   * covers every queue, at the shortest interval any of them asks for; jobs sent with a known delay and
   * this process's own retries are looked for when they come due, whatever this says.
   */
  pollingIntervalSeconds?: number;
}

export interface Queue {
  /** Optional: any other call starts the queue, until stop(). Starting again after stop() is allowed. */
  start(): Promise<void>;
  /**
   * Graceful: fetches nothing more, waits (bounded by `stopTimeoutMs`) for running handlers, then hands
   * back whatever is still running, aborting its signal, and closes. A job handed back is waiting again as
   * it was before this attempt started, with the attempt not counted: the next start (this process's, or
   * any other worker's at once) runs it. Shutting down never fails a job, nor moves one to its dead letter.
   */
  stop(): Promise<void>;
  /**
   * Rejects unless the queue is running and pg-boss answers through its own connection (for /readyz).
   */
  check(): Promise<void>;
  /**
   * Idempotent, and declarative: creating an existing queue applies the options given (omitted ones go
   * back to their defaults), except `policy`, which is fixed at first creation.
   *
   * Names (pg-boss's rule, which keeps them safe to inline into its SQL): ASCII letters, digits, `_`,
   * `.`, `-` and `/`, at least one character. Names starting with `__pgboss__` are pg-boss's own.
   */
  createQueue(name: string, options?: QueueOptions): Promise<void>;
  /**
   * Called before `work` on a process that starts: on an embedded database (PGlite, which only this process
   * can open) every attempt of these queues still active is its predecessor's, killed with it, so each is
   * handed back at once (waiting again, its attempt not counted) instead of waiting for its heartbeat to
   * expire. On a server database, where another live process may be running them, it does nothing: the
   * heartbeat decides. Returns how many were handed back.
   */
  resumeOwnAttempts(names: string[]): Promise<number>;
  /** Readies `sendWithin(…, name, …)`: loads the queue's settings outside any transaction. Cheap once done. */
  prepare(name: string): Promise<void>;
  /** The queue must exist. Returns the job id, or null when a `singletonKey` refused the job. */
  send<T extends object>(name: string, data: T, options?: SendOptions): Promise<string | null>;
  /**
   * Sends inside the caller's transaction: the job exists exactly when the transaction commits (the
   * outbox pattern without an outbox table). Call {@link Queue.prepare} for `name` before opening the
   * transaction: on PGlite the queue's own lookup could not run while the transaction holds the connection.
   */
  sendWithin<T extends object>(
    executor: SqlExecutor,
    name: string,
    data: T,
    options?: SendOptions,
  ): Promise<string | null>;
  /**
   * Tells this process's fetcher of `name` to fetch now (once, however many jobs were sent). send() does
   * this itself; after {@link Queue.sendWithin} the caller may call it once the transaction has committed
   * (before that, the job is invisible to a fetch); the commit's NOTIFY wakes it too, a moment later. A
   * no-op when this process does not work `name`. With `afterSeconds` (a delayed send), the scan that finds
   * it due is scheduled instead.
   */
  wake(name: string, afterSeconds?: number): void;
  /**
   * Runs `handler` for each job, one job per call. A handler that throws (or outlives
   * `expireInSeconds`) fails the attempt; pg-boss retries per the queue's options, then moves the job to
   * the queue's dead-letter queue.
   */
  work<T>(name: string, handler: (job: QueueJob<T>) => Promise<void>, options?: WorkOptions): Promise<void>;
  /**
   * Jobs per queue for /metrics: ready to run now, deferred (a retry or a delay not yet due), and active. From
   * pg-boss's queue table, which its maintenance pass keeps current (seconds behind, not per job).
   */
  depths(): Promise<Array<{ name: string; ready: number; deferred: number; active: number }>>;
}

export type QueueTarget = { kind: "pglite"; pglite: PGlite } | { kind: "postgres"; connectionString: string };

export interface CreateQueueOptions {
  /** Postgres schema for pg-boss's tables (default `pgboss`). */
  schema?: string;
  /** pg-boss's background errors (a failed poll or maintenance pass). Default: console.error. */
  onError?: (err: unknown) => void;
  /** pg-boss's operator warnings (slow queries, backlogs, LISTEN unavailable). Default: ignored. */
  onWarning?: (warning: { message: string; data: object }) => void;
  /** How long stop() waits for running handlers before handing their jobs back (default 10 000). */
  stopTimeoutMs?: number;
  /**
   * How often maintenance runs while an attempt is running anywhere: expiring attempts whose process died
   * (default 60). At rest it runs every minute at most often, and deletes old jobs. Only processes that work
   * a queue run it, and one of them runs each pass.
   */
  superviseIntervalSeconds?: number;
  /** Server Postgres only: the size of pg-boss's pool (pg-boss default 10), plus one LISTEN connection. */
  poolSize?: number;
  /**
   * LISTEN for NOTIFY, so this process's workers wake when another process sends (default true). Turn it
   * off where LISTEN cannot work (a transaction-pooling PgBouncer): this process's own sends still wake
   * its workers at once, and other processes' jobs are found by polling. Jobs always NOTIFY.
   */
  listenNotify?: boolean;
}

const QUEUE_NAME = /^[\w.\-/]+$/;
/** At rest (no attempt running anywhere, LISTEN up): the longest time between two scans, or two maintenance passes. */
const REST_SECONDS = 60;
const POLICIES: readonly QueuePolicy[] = ["standard", "short", "singleton", "stately", "exclusive"];
// The values pg-boss gives a queue when an option is omitted; re-declaring a queue without an option
// restores these rather than leaving whatever an earlier declaration set.
const DEFAULTS = { retryLimit: 2, retryDelay: 0, retryBackoff: false, expireInSeconds: 900 };

function assertName(name: string, what = "queue name"): void {
  if (typeof name !== "string" || !QUEUE_NAME.test(name)) {
    throw new Error(`${what} "${name}" may hold only ASCII letters, digits, _ . - /`);
  }
}

// pg-boss stores these in integer columns and rejects fractions with its own option names; say it with ours.
function assertInteger(value: number | undefined, what: string, min: number): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= min)) {
    throw new Error(`${what} must be an integer >= ${min}, got ${value}`);
  }
}

// pg-boss sends each multi-statement block as one exec() of `BEGIN; ...; COMMIT;`. When a statement in it
// fails, PGlite is left inside the aborted transaction, and fromPglite's cleanup ROLLBACK is a second
// call: whatever was already queued on PGlite's mutex (an application transaction, any query) runs first,
// inside that aborted transaction, and fails with "current transaction is aborted". Running the block's
// body through pglite.transaction() keeps BEGIN, the body and COMMIT or ROLLBACK under one hold of the mutex.
const TRANSACTION_BLOCK = /^\s*BEGIN\s*;([\s\S]*)COMMIT\s*(?:;\s*)?$/i;

/** pg-boss's database adapter for a PGlite the application shares. Exported for tests. */
export function pgliteDatabase(pglite: PGlite): Db {
  return fromPglite({
    query: (text, params) => pglite.query(text, params),
    exec: (text) => {
      const block = TRANSACTION_BLOCK.exec(text);
      return block ? pglite.transaction((tx) => tx.exec(block[1]!)) : pglite.exec(text);
    },
    listen: (channel, callback) => pglite.listen(channel, callback),
  });
}

function bossSendOptions(o: SendOptions): BossSendOptions {
  assertInteger(o.retryLimit, "retryLimit", 0);
  assertInteger(o.expireInSeconds, "expireInSeconds", 1);
  if (o.startAfterSeconds !== undefined && !(o.startAfterSeconds >= 0)) {
    throw new Error(`startAfterSeconds must be >= 0, got ${o.startAfterSeconds}`);
  }
  const out: BossSendOptions = {};
  // pg-boss reads a number as seconds from the database's now(), so clocks of other hosts don't matter.
  if (o.startAfterSeconds) out.startAfter = o.startAfterSeconds;
  if (o.singletonKey !== undefined) out.singletonKey = o.singletonKey;
  if (o.retryLimit !== undefined) out.retryLimit = o.retryLimit;
  if (o.expireInSeconds !== undefined) out.expireInSeconds = o.expireInSeconds;
  return out;
}

export function createQueue(target: QueueTarget, options: CreateQueueOptions = {}): Queue {
  const schema = options.schema ?? "pgboss";
  const onError = options.onError ?? ((err: unknown) => console.error("queue:", err));
  const config: ConstructorOptions = {
    schema,
    // We LISTEN ourselves (see the file's header): pg-boss's listener would only wake pg-boss's workers,
    // which we do not run. Its sends NOTIFY either way.
    useListenNotify: false,
    // We use neither cron schedules nor flows. Left on, each polls the database every few seconds, and
    // on PGlite every poll takes the one connection from the application.
    schedule: false,
    flowIntervalSeconds: 3600,
  };
  // Maintenance is paced by the scan (see `work`), not by pg-boss's timer, which would run a pass of about
  // nine transactions every interval whether or not anything runs.
  config.supervise = false;
  const activeSupervise = options.superviseIntervalSeconds ?? 60;
  const restSupervise = Math.max(REST_SECONDS, activeSupervise);
  // Expiry runs inside the monitor pass, which has an interval claim of its own; both must be short.
  config.superviseIntervalSeconds = activeSupervise;
  config.monitorIntervalSeconds = activeSupervise;
  // pg-boss checks its LISTEN session every 10 s by default; TCP keepalive already finds a dead connection,
  // so once a minute is enough to find a lost registration.
  config.notifyHeartbeatIntervalMs = REST_SECONDS * 1000;
  const boss =
    target.kind === "pglite"
      ? new PgBoss({ ...config, db: pgliteDatabase(target.pglite), backend: "pglite" })
      : new PgBoss({
          ...config,
          connectionString: target.connectionString,
          // As the application's pool (storage/db.ts): a send or a fetch while the server is gone from the
          // network fails as an outage in seconds, not after pg-boss's 10 s.
          connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
          ...(options.poolSize ? { max: options.poolSize } : {}),
        });
  // Always listened to: an `error` event with no listener throws out of pg-boss's timers. pg-boss guards its
  // own clients: its pool's 'error' comes here, a pooled statement whose connection drops is released with
  // the error, and its transactions and LISTEN client have listeners of their own (pg-boss 12.35's db.js).
  boss.on("error", (err) => onError(err));
  boss.on("warning", (warning) => options.onWarning?.(warning));

  let started: Promise<unknown> | undefined;
  // Queues whose settings pg-boss has cached in this process. A send looks its queue up first, through
  // pg-boss's own connection; on PGlite, inside the caller's transaction, that lookup would wait for the
  // one connection the transaction holds. Warming the cache beforehand (a harmless read by a nil id)
  // keeps sendWithin's only statement on the caller's connection.
  const warmed = new Set<string>();
  const warm = async (name: string) => {
    if (warmed.has(name)) return;
    await boss.getJobById(name, "00000000-0000-0000-0000-000000000000");
    warmed.add(name);
  };
  let stopped = false;

  // Jobs held by this process's slots, by id; `idle` is resolved when the last one is let go, for stop().
  const held = new Map<string, HeldJob>();
  let idle: (() => void) | undefined;
  const fetchers = new Map<string, Fetcher>();
  const intervals: number[] = [];
  let scanner: Scanner | undefined;
  let listening: Promise<{ close(): Promise<void> } | undefined> | undefined;
  /** LISTEN is up: other processes' sends reach this one without a scan. */
  let notified = false;
  let lastSupervise = 0;
  const activeScanSeconds = () => Math.min(...intervals, activeSupervise);

  // What pg-boss's own restore() does (not public in 12.35): the job waits again as before this attempt, and,
  // started_on being cleared, its next claim does not count an attempt. Only jobs still active, so a job
  // whose handler finished meanwhile keeps its outcome.
  const handBack = async (jobs: Array<{ name: string; id: string }>) => {
    const byQueue = new Map<string, string[]>();
    for (const j of jobs) byQueue.set(j.name, [...(byQueue.get(j.name) ?? []), j.id]);
    for (const [name, ids] of byQueue) {
      await boss
        .getDb()
        .executeSql(
          `UPDATE ${schema}.job SET state = 'created', started_on = NULL, heartbeat_on = NULL WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'active'`,
          [name, ids],
        );
    }
  };

  // pg-boss's channel (its plans.notifyChannelSql); the payload of a NOTIFY is the queue's name.
  const listen = async () => {
    const db = boss.getDb();
    if (!db.listen) return undefined;
    const literal = schema.replace(/^"(.*)"$/, "$1").replace(/'/g, "''");
    const { rows } = await db.executeSql(
      `SELECT ('pgboss_' || left(encode(sha224('${literal}'::bytea), 'hex'), 24)) AS channel`,
    );
    return db.listen(
      rows[0].channel,
      // Work somewhere in the deployment: whoever takes it, an attempt may now run, and the scan keeps the pace
      // that finds a dead one.
      (name) => {
        fetchers.get(name)?.pump();
        scanner?.soon(activeScanSeconds());
      },
      // (Re)connected: NOTIFYs sent meanwhile were missed.
      () => scanner?.soon(0),
    );
  };

  // Any call starts pg-boss, except after stop(): a late send during shutdown must not quietly restart
  // a queue nobody will stop again (on PGlite, one whose database is about to close).
  const ensureStarted = () => {
    if (stopped) throw new Error("the queue is stopped");
    return (started ??= boss.start());
  };

  return {
    async start() {
      stopped = false;
      await ensureStarted();
    },

    async stop() {
      stopped = true;
      if (!started) return;
      const starting = started;
      await starting.catch(() => {});
      // Nothing is fetched again; the handlers running go on, and may finish within the time given.
      scanner?.stop();
      scanner = undefined;
      const listener = listening;
      listening = undefined;
      notified = false;
      await Promise.all([...fetchers.values()].map((f) => f.close()));
      await listener?.then((l) => l?.close()).catch(onError);
      if (held.size > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          new Promise<void>((r) => (idle = r)),
          new Promise<void>((r) => (timer = setTimeout(r, options.stopTimeoutMs ?? 10_000))),
        ]);
        clearTimeout(timer);
        idle = undefined;
      }
      // Failing the jobs still running would spend an attempt, or the last attempt and the job with it:
      // hand them back instead, then tell their handlers to stop (they settle nothing after that).
      const left = [...held].map(([id, h]) => ({ id, name: h.name, h }));
      if (left.length > 0) {
        await handBack(left).catch(onError);
        for (const { h } of left) h.release(new Error("the queue stopped; the job was handed back"));
      }
      await boss.stop({ graceful: true, timeout: options.stopTimeoutMs ?? 10_000, close: true });
      // A restart's work() registers new fetchers.
      fetchers.clear();
      intervals.length = 0;
      // Only now, so a second stop() waits for the first instead of returning early.
      if (started === starting) started = undefined;
    },

    async createQueue(name, q = {}) {
      assertName(name);
      if (q.deadLetter !== undefined) assertName(q.deadLetter, "dead-letter queue name");
      assertInteger(q.retryLimit, "retryLimit", 0);
      assertInteger(q.retryDelaySeconds, "retryDelaySeconds", 0);
      assertInteger(q.expireInSeconds, "expireInSeconds", 1);
      assertInteger(q.retryDelayMaxSeconds, "retryDelayMaxSeconds", 0);
      if (q.policy !== undefined && !POLICIES.includes(q.policy)) throw new Error(`unknown queue policy "${q.policy}"`);
      if (q.heartbeatSeconds !== undefined) assertInteger(q.heartbeatSeconds, "heartbeatSeconds", 10);
      await ensureStarted();
      warmed.delete(name);
      // pg-boss refuses a dead letter that does not exist yet; creating it here frees callers from
      // declaring queues in dependency order. An existing one keeps its own options.
      if (q.deadLetter) await boss.createQueue(q.deadLetter, { notify: true });
      const policy = q.policy ?? "standard";
      const settings = {
        retryLimit: q.retryLimit ?? DEFAULTS.retryLimit,
        retryDelay: q.retryDelaySeconds ?? DEFAULTS.retryDelay,
        retryBackoff: q.retryBackoff ?? DEFAULTS.retryBackoff,
        // pg-boss only accepts a maximum with back-off on (one set earlier stays, unused, when it is off).
        ...(q.retryBackoff && q.retryDelayMaxSeconds !== undefined ? { retryDelayMax: q.retryDelayMaxSeconds } : {}),
        expireInSeconds: q.expireInSeconds ?? DEFAULTS.expireInSeconds,
        // A NOTIFY per runnable insert; harmless where nothing listens.
        notify: true,
      };
      // create_queue is INSERT ... ON CONFLICT DO NOTHING, so on an existing queue it changes nothing;
      // the update is what makes a changed declaration take effect after a deploy.
      const first = { ...settings, policy, ...(q.heartbeatSeconds ? { heartbeatSeconds: q.heartbeatSeconds } : {}) };
      await boss.createQueue(name, q.deadLetter ? { ...first, deadLetter: q.deadLetter } : first);
      await boss.updateQueue(name, { ...settings, deadLetter: q.deadLetter ?? null });
      await warm(name);
    },

    async resumeOwnAttempts(names) {
      names.forEach((n) => assertName(n));
      await ensureStarted();
      if (target.kind !== "pglite" || names.length === 0) return 0;
      // handBack's statement for every active job of these queues (none can be running: see the interface).
      const { rows } = await boss
        .getDb()
        .executeSql(
          `UPDATE ${schema}.job SET state = 'created', started_on = NULL, heartbeat_on = NULL WHERE name = ANY($1::text[]) AND state = 'active' RETURNING id`,
          [names],
        );
      return rows.length;
    },

    async prepare(name) {
      await ensureStarted();
      await warm(name);
    },

    async sendWithin(executor, name, data, o = {}) {
      await ensureStarted();
      // Warming here would deadlock on PGlite (see `warmed`), so an unprepared send is a caller's bug.
      if (!warmed.has(name)) throw new Error(`queue "${name}": call prepare() before sendWithin()`);
      return boss.send(name, data, {
        ...bossSendOptions(o),
        db: { executeSql: (text: string, values?: unknown[]) => executor(text, values ?? []) } as Db,
      });
    },

    async send(name, data, o = {}) {
      await ensureStarted();
      const id = await boss.send(name, data, bossSendOptions(o));
      // Committed (send runs in its own statement), so a fetch will see it; a delayed one, when it is due.
      if (id !== null) {
        if (o.startAfterSeconds) scanner?.soon(o.startAfterSeconds);
        else fetchers.get(name)?.pump();
      }
      return id;
    },

    async depths() {
      await ensureStarted();
      const queues = await boss.getQueues();
      return queues.map((q) => ({
        name: q.name,
        ready: q.readyCount ?? Math.max(0, q.queuedCount - q.deferredCount),
        deferred: q.deferredCount,
        active: q.activeCount,
      }));
    },

    wake(name, afterSeconds) {
      if (stopped) return;
      if (afterSeconds) scanner?.soon(afterSeconds);
      else fetchers.get(name)?.pump();
    },

    async check() {
      if (stopped || !started) throw new Error("the queue is not running");
      await started;
      if (!(await boss.isInstalled())) throw new Error("the queue's tables are missing");
    },

    async work<T>(name: string, handler: (job: QueueJob<T>) => Promise<void>, o: WorkOptions = {}) {
      assertName(name);
      await ensureStarted();
      if (fetchers.has(name)) throw new Error(`queue "${name}" is already worked by this process`);
      const polling = o.pollingIntervalSeconds ?? 10;
      if (!(polling >= 0.5)) throw new Error(`pollingIntervalSeconds must be >= 0.5, got ${polling}`);
      intervals.push(polling);
      scanner ??= createScanner({
        query: (text, values) => boss.getDb().executeSql(text, values),
        schema,
        fetchers,
        // While attempts run, maintenance must come round at its pace to expire those of a dead process.
        activeSeconds: activeScanSeconds,
        // At rest, only a NOTIFY that could not reach us is missed by waiting longer, so the scan polls at the
        // workers' own pace when LISTEN is off or failed, and once a minute when it is up.
        restSeconds: () => (notified ? REST_SECONDS : Math.min(...intervals)),
        onScanned: (active) => {
          if (Date.now() - lastSupervise < (active ? activeSupervise : restSupervise) * 1000) return;
          lastSupervise = Date.now();
          // The attempts it expires (a dead process's) come back as retries due within seconds: scan again at
          // once, which schedules the fetch for when they are due, rather than a whole interval later.
          boss.supervise().then(() => scanner?.soon(0), onError);
        },
        onError,
      });
      if (options.listenNotify !== false) {
        listening ??= listen().then(
          (l) => ((notified = l !== undefined), l),
          (err) => void onError(err),
        );
      }
      const fetcher = createFetcher<T>({
        name,
        concurrency: o.concurrency ?? 1,
        handler,
        boss,
        held,
        onEmpty: () => idle?.(),
        onFailed: () => scanner?.soon(1),
        onStarted: () => scanner?.soon(activeScanSeconds()),
        handBack,
        onError,
      });
      fetchers.set(name, fetcher);
      // Whatever is already waiting.
      fetcher.pump();
      scanner.soon(polling);
    },
  };
}
