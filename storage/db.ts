// The relational database: PGlite in DATA_DIR by default, Postgres when DATABASE_URL is set. One kysely
// instance either way; the handles pg-boss needs (the PGlite instance, or the connection string) ride along.
import { closeSync, openSync, readFileSync, statSync, unlinkSync, utimesSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { ConnectionGate, type Priority } from "./connection-gate.ts";
import { PGliteDialect } from "./pglite-dialect.ts";
import { PRIVATE_FILE_MODE, privateDirSync, tightenTreeSync } from "./private-fs.ts";
import type { KernelTables } from "./tables.ts";

export type DatabaseKind = "pglite" | "postgres";

export interface Database {
  kind: DatabaseKind;
  /** The requests' lane to the database (storage/connection-gate.ts). */
  kysely: Kysely<KernelTables>;
  /**
   * The same connections in the background lane: a freed connection goes to its statements first. For the
   * job runtime and the webhook delivery loop, whose statements would otherwise wait behind a burst of
   * requests'.
   */
  background: Kysely<KernelTables>;
  /** Set for kind "pglite": pg-boss shares this one connection. */
  pglite?: PGlite;
  /** Set for kind "postgres": pg-boss opens its own pool on the same database. */
  connectionString?: string;
  close(): Promise<void>;
}

// Credits are bigint columns and sums come back as numeric; both fit a JS number for any real balance,
// and integer math on numbers is what the ledger code is written in.
const INT8 = 20;
const NUMERIC = 1700;
const toNumber = (value: string) => Number(value);

/**
 * The embedded database's buffer cache. Postgres's default (128MB) made an idle embedded server hold 426 MB
 * resident; at 16MB it holds 292 MB (test/bench/idle.bench.ts), and the pages it no longer caches are read
 * from the files, through the operating system's own cache. A deployment whose working set outgrows this
 * belongs on Postgres (DATABASE_URL) anyway.
 */
export const EMBEDDED_SHARED_BUFFERS = "16MB";

export interface OpenDatabaseOptions {
  /** Postgres connection string; when absent, PGlite is used. */
  url?: string;
  /** PGlite data directory; when absent (tests), PGlite lives in memory. */
  dataDir?: string;
  /** Postgres pool size. */
  poolSize?: number;
  /**
   * In memory only: start from these files (a PGlite `dumpDataDir` tarball) instead of running initdb. The
   * test kit starts every database from one copy of initdb's result (testkit/pglite-template.ts).
   */
  template?: Blob;
  /**
   * Postgres only: told once per connection the server ended or the network lost (a terminated backend, a
   * restart, a failover), with the first error it gave. For the log; the statement in flight has failed
   * with an error of its own, where it is handled. Without it, nothing is reported.
   */
  onConnectionLost?: (err: Error) => void;
}

/**
 * The database could not be opened: unreachable, refused, or (embedded) already open in another process.
 * The message names the variable to look at and carries no password; the kernel turns it into a BootError,
 * which main.ts prints as one "mediagate cannot start: ..." line.
 */
export class DatabaseOpenError extends Error {}

/** How long opening Postgres may take before the boot gives up (a host that drops packets never refuses). */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * How long a request may wait for a new Postgres connection before it fails as an outage (503). A server that
 * is down refuses at once, whatever this is; this bounds only a host gone from the network. Far above a local
 * connection's time, so a process starved of CPU on a loaded machine (seconds between two turns of its event
 * loop) does not fail healthy requests; a pooled connection is reused without connecting at all.
 */
export const POOL_CONNECT_TIMEOUT_MS = 5_000;

/** `host:port/database` of a connection string, without user or password, for messages. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || "localhost"}:${u.port || "5432"}${u.pathname && u.pathname !== "/" ? u.pathname : ""}`;
  } catch {
    return "(a connection string that is not a URL)";
  }
}

// ---------------------------------------------------------------------------------------------------------
// Connections the server dropped. A connection ends under its holder when the server is stopped or restarted,
// an administrator terminates its backend, or the network goes: pg then emits 'error' on the client, and an
// 'error' with no listener ends the process. pg-pool listens only while a client is idle (it takes its listener
// off at checkout), so every client gets a listener of its own for its whole life, when the pool makes it. The
// statement in flight fails with its own error, which its caller handles like any other (the kernel's
// lib/transient.ts calls it transient: a job's attempt is retried, a request answers 503); the process goes on.
//
// A dead client must not go back to the pool for the next statement: kysely's driver releases without an
// error, so the lane's release below gives pg-pool the reason, and pg-pool discards the client.

/** pg's Client with the fields pg-pool itself reads to judge a client (not in its typings). */
type PgClient = pg.PoolClient & { _queryable?: boolean; _ending?: boolean; getTransactionStatus?(): string | null };

/** Why each dead client died (its first error); a client not in here is alive as far as we know. */
const lost = new WeakMap<pg.Client, Error>();

/**
 * Whether `err`, which `client` gave, means the connection is over. Judged by the connection, not by a list
 * of codes: the client emitted 'error' or is no longer queryable (the socket failed or ended), or the server
 * sent a FATAL error (57P01 from pg_terminate_backend or a fast stop, 57P02, ...), after which it always
 * closes the session.
 */
function connectionOver(client: pg.Client, err: unknown): boolean {
  const c = client as PgClient;
  if (lost.has(client) || c._queryable === false) return true;
  const severity = (err as { severity?: string } | null)?.severity;
  return severity === "FATAL" || severity === "PANIC";
}

// A statement the requests lane may send a second time, on a fresh connection, when its connection was lost
// before it answered: a plain SELECT outside any transaction (kysely compiles every selectFrom to "select ...";
// "with ..." may hold a writing CTE and is never retried), that takes no row locks and calls none of the
// functions that change something. Run twice, such a statement changes nothing; inside a transaction nothing is
// retried (the transaction fails as a whole, and its caller decides). The job runtime's statements (the
// background lane) are not retried here: the attempt they belong to is retried as a whole.
const READ_ONLY = /^\s*select\b/i;
const NOT_READ_ONLY =
  /\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b|\b(into|pg_advisory\w*|pg_try_advisory\w*|pg_notify|nextval|setval|set_config|txid_current|pg_current_xact_id)\b/i;

/**
 * Clients checked out by the requests lane right now (their SELECTs are retried, see READ_ONLY), each with
 * the function that gives the client back to the pool without giving back its connection of the gate.
 */
const retrying = new WeakMap<pg.Client, (err: Error) => void>();

/**
 * Readies a client the pool has just made: its listener for the rest of its life, and its query() recording a
 * lost connection (a FATAL answer comes before the socket's end) and retrying what READ_ONLY allows.
 */
function watchClient(pool: pg.Pool, client: pg.Client, onLost: (err: Error) => void): void {
  const markLost = (err: Error) => {
    if (lost.has(client)) return;
    lost.set(client, err);
    onLost(err);
  };
  client.on("error", markLost);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  // kysely calls query(text, values) and awaits the promise; any other form (a callback, a cursor) goes to pg as is.
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const [text, values] = args;
    if (typeof text !== "string" || args.length > 2 || (values !== undefined && !Array.isArray(values)))
      return query(...args);
    const giveBackDead = retrying.get(client);
    const retryable =
      giveBackDead !== undefined &&
      (client as PgClient).getTransactionStatus?.() === "I" &&
      READ_ONLY.test(text) &&
      !NOT_READ_ONLY.test(text);
    return (query(text, values) as Promise<pg.QueryResult>).catch(async (err: unknown) => {
      if (!connectionOver(client, err)) throw err;
      markLost(err as Error);
      if (!retryable || !giveBackDead) throw err;
      // The dead client goes back now (discarded), so the pool has room for the fresh one; the gate's connection
      // stays held until kysely releases this connection. One retry only: the fresh client's own query() is
      // not the requests lane's, so a second loss fails the statement.
      giveBackDead(err as Error);
      const fresh = await pool.connect();
      try {
        const result = await fresh.query(text, values as unknown[]);
        fresh.release();
        return result;
      } catch (again) {
        fresh.release(connectionOver(fresh, again) ? (again as Error) : undefined);
        throw again;
      }
    });
  };
}

// The pool as one lane's kysely sees it: a connection is taken through ConnectionGate (storage/connection-gate.ts), so a
// job's statements take turns with a burst of requests' instead of queueing behind all of them. As many
// connections as the pool has, so pg's own queue stays empty. The requests' lane owns the pool (its
// kysely's destroy ends it); the background lane's leaves it to that.
function byPriority(pool: pg.Pool, gate: ConnectionGate, priority: Priority) {
  return {
    async connect() {
      const giveBack = await gate.acquire(priority);
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        giveBack();
        throw err;
      }
      // pg sets `release` on each checkout, so wrapping this one leaves the next checkout's alone. Once: a
      // retry (watchClient) may have given a dead client back already, and pg-pool throws on a second release.
      const release = client.release.bind(client);
      let released = false;
      const releaseOnce = (err?: Error | boolean) => {
        if (released) return;
        released = true;
        retrying.delete(client);
        // A client whose connection is over is discarded, whether or not its holder says so.
        release(
          err ||
            lost.get(client) ||
            ((client as PgClient)._queryable === false ? new Error("the connection was lost") : undefined),
        );
      };
      client.release = (err?: Error | boolean) => {
        try {
          releaseOnce(err);
        } finally {
          giveBack();
        }
      };
      if (priority === "requests") retrying.set(client, releaseOnce);
      else retrying.delete(client);
      return client;
    },
    end: async () => {
      if (priority === "requests") await pool.end();
    },
  };
}

// One connection, made and dropped before the pool exists: the pool connects lazily and without a time limit,
// so an unreachable server would otherwise surface as a stack from the first query (or, for a host that
// drops packets, never). Its own client, so the pool keeps pg's defaults for the life of the process.
async function probePostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A server that goes away after connecting emits 'error' on the client; the query's rejection reports it.
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("select 1");
  } catch (err) {
    const e = err as { code?: string; message?: string };
    const reason =
      e.code && !String(e.message).includes(e.code) ? `${e.code}: ${e.message}` : (e.message ?? String(err));
    throw new DatabaseOpenError(
      `DATABASE_URL: cannot connect to Postgres at ${describePostgresUrl(url)} (${reason || "no answer"})`,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.url) {
    await probePostgres(options.url);
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      // A server that is down refuses at once; one gone from the network never answers, and without a limit a
      // request would wait for the operating system's TCP time-out. Past this, the request is a 503.
      connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
      types: {
        getTypeParser: ((oid: number, format?: "text" | "binary") =>
          oid === INT8 || oid === NUMERIC ? toNumber : pg.types.getTypeParser(oid, format as any)) as any,
      },
    });
    // An idle connection that the server ends (a restart, a failover, an administrator's terminate) is an
    // 'error' event on the pool, which with no listener ends the process. pg has already dropped that
    // connection; the next query opens a new one, or fails with an error of its own where it is handled. The
    // client's own listener (watchClient) has reported it.
    pool.on("error", () => {});
    // Emitted as the pool makes each client, before anyone holds it.
    const onLost = options.onConnectionLost ?? (() => {});
    pool.on("connect", (client) => watchClient(pool, client, onLost));
    const gate = new ConnectionGate(options.poolSize ?? 10);
    const kysely = new Kysely<KernelTables>({
      dialect: new PostgresDialect({ pool: byPriority(pool, gate, "requests") }),
    });
    const background = new Kysely<KernelTables>({
      dialect: new PostgresDialect({ pool: byPriority(pool, gate, "background") }),
    });
    return {
      kind: "postgres",
      kysely,
      background,
      connectionString: options.url,
      close: async () => {
        await background.destroy();
        await kysely.destroy();
      },
    };
  }
  let dataPath: string | undefined;
  let lock: EmbeddedLock | undefined;
  if (options.dataDir) {
    privateDirSync(options.dataDir);
    dataPath = join(options.dataDir, "pgdata");
    // Before PGlite touches the files: two processes on one embedded database corrupt it, silently.
    lock = lockEmbeddedDatabase(options.dataDir);
    privateDirSync(dataPath, { tighten: true });
  }
  let pglite: PGlite;
  try {
    // One options object: PGlite reads its second argument only when the first is a path, so
    // `new PGlite(undefined, {...})` (in memory) would drop these.
    pglite = new PGlite({
      dataDir: dataPath,
      parsers: { [INT8]: toNumber, [NUMERIC]: toNumber },
      loadDataDir: dataPath ? undefined : options.template,
      startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
    });
    await pglite.waitReady;
    // PGlite's initdb writes the cluster's files world-readable and -writable (0666, whatever the umask);
    // files Postgres creates later are 0600. All of it lives in the 0700 pgdata, and is made 0600 here too.
    if (dataPath) tightenTreeSync(dataPath);
  } catch (err) {
    lock?.release();
    throw err;
  }
  const gate = new ConnectionGate(1);
  const kysely = new Kysely<KernelTables>({ dialect: new PGliteDialect(pglite, gate, "requests") });
  const background = new Kysely<KernelTables>({ dialect: new PGliteDialect(pglite, gate, "background") });
  return {
    kind: "pglite",
    kysely,
    background,
    pglite,
    close: async () => {
      try {
        await background.destroy();
        await kysely.destroy();
        await pglite.close();
      } finally {
        lock?.release();
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// The embedded database's lock. PGlite runs Postgres inside this process and takes no lock of its own, so a
// second process on the same DATA_DIR would open the same files and both would write them. The lock is a file
// made with O_CREAT|O_EXCL (one process wins, atomically) holding the owner's pid and host. A lock whose
// process is gone is stale and taken over: on this host, when its pid is dead; from another host (a volume
// shared between machines), when its owner has stopped refreshing it, since a pid there means nothing here.

export const LOCK_FILE = "pgdata.lock";
/** How often the owner refreshes its lock's time; a lock from another host unrefreshed for LOCK_STALE_MS is stale. */
const LOCK_REFRESH_MS = 10_000;
const LOCK_STALE_MS = 60_000;

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

interface EmbeddedLock {
  release(): void;
}

// Locks this process holds, by file: the same pid in a lock file is ours only if it is listed here (a
// container restarted after a crash often gets the same pid as before).
const held = new Set<string>();

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, as another user's process.
    return (err as { code?: string }).code === "EPERM";
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, "utf8")) as LockOwner;
    return Number.isInteger(owner.pid) && typeof owner.host === "string" ? owner : undefined;
  } catch {
    return undefined; // unreadable or half-written: judged by its age below
  }
}

function isStale(file: string, owner: LockOwner | undefined): boolean {
  if (owner && owner.host === hostname()) {
    if (owner.pid === process.pid) return !held.has(file);
    return !pidAlive(owner.pid);
  }
  let age: number;
  try {
    age = Date.now() - statSync(file).mtimeMs;
  } catch {
    return true; // removed meanwhile
  }
  return age > LOCK_STALE_MS;
}

function lockEmbeddedDatabase(dataDir: string): EmbeddedLock {
  const file = join(dataDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, "wx", PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
      const owner = readOwner(file);
      if (attempt < 3 && isStale(file, owner)) {
        // Another process may be judging the same stale lock: whoever unlinks first wins the next O_EXCL.
        try {
          unlinkSync(file);
        } catch {
          // already removed by that other process
        }
        continue;
      }
      const who = owner
        ? `process ${owner.pid} on ${owner.host === me.host ? "this host" : `host ${owner.host}`}, since ${owner.since}`
        : "another process";
      throw new DatabaseOpenError(
        `DATA_DIR ${dataDir}: the embedded database is already open in ${who}. Stop that process, or give this one its own DATA_DIR (or a DATABASE_URL for several processes). If no process uses it, remove ${file}.`,
      );
    }
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    held.add(file);
    const refresh = setInterval(() => {
      try {
        const now = new Date();
        utimesSync(file, now, now);
      } catch {
        // removed under us; release() below still clears our state
      }
    }, LOCK_REFRESH_MS);
    refresh.unref?.();
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        clearInterval(refresh);
        held.delete(file);
        // Only our own lock: a process that judged it stale and took over must keep its file.
        const owner = readOwner(file);
        if (owner && owner.pid === me.pid && owner.host === me.host && owner.since === me.since) {
          try {
            unlinkSync(file);
          } catch {
            // gone already
          }
        }
      },
    };
  }
}
