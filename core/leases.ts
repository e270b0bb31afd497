// Leases: "a live process is working on this" (the kernel's `leases` table). Work that only one request or
// one process finishes (a synchronous job, an Idempotency-Key's first answer, a captions finalize) holds a
// lease named for it, taken in the transaction that starts the work. The process renews every lease it owns
// with one statement every third of the lease (the heartbeat), so a lease outlives its owner by at most
// LEASE_SECONDS; past that the work is orphaned and whoever looks after it takes over (core/jobs.ts
// recoverOrphans, core/idempotency.ts replay, the captions finalize).
//
// The owner is this process: a random id made at boot, never reused, so a restarted process does not mistake
// its predecessor's leases for its own. On the embedded database (PGlite) only one process can ever run, so
// at start every lease of another owner is dead already: `start` expires them at once, and a restart recovers
// its predecessor's work without waiting for the lease to run out.
import { randomUUID } from "node:crypto";
import { type Compilable, type Kysely, type QueryExecutorProvider, sql } from "kysely";
import type { KernelTables } from "../storage/tables.ts";
import type { Logger } from "./log.ts";

const DEFAULT_LEASE_SECONDS = 15;

/** The lease a synchronous job's owner holds from its charge to its end (core/job-transactions.ts). */
export const jobLeaseKey = (jobId: string) => `job:${jobId}`;

/**
 * The handle a lease statement runs through: the kernel's, or any transaction, whatever tables its own type
 * declares (a plugin's `Kysely<UploadTables>` alike). The statements are built against the kernel's `leases`
 * table and only executed through it.
 */
export type LeaseDb = QueryExecutorProvider;

export interface Leases {
  /** This process's id, the `owner` of its leases. */
  readonly owner: string;
  readonly seconds: number;
  /**
   * Takes `key` for this process (usually inside the transaction that starts the work): true when taken,
   * false when another live owner holds it. An expired lease, or one of ours, is taken over.
   */
  take(db: LeaseDb, key: string): Promise<boolean>;
  /** Gives `key` up (in the transaction that ends the work, or on its own). Does nothing when it is not held. */
  release(db: LeaseDb, key: string): Promise<void>;
  /** Whether a live owner (this process or another) holds `key`; read through `db` inside a transaction. */
  isHeld(key: string, db?: LeaseDb): Promise<boolean>;
  /** Renews every lease this process owns: one statement. */
  renew(): Promise<void>;
  /** Runs on every heartbeat after the renewal (e.g. the kernel's recovery of orphaned jobs). */
  onBeat(task: () => Promise<unknown>): void;
  /** Starts the heartbeat (and, on PGlite, expires every other owner's lease first). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface LeasesOptions {
  db: Kysely<KernelTables>;
  log: Logger;
  /** Lease duration (LEASE_SECONDS). */
  seconds?: number;
  /** The database is embedded: no other process can hold a lease once this one starts. */
  embedded: boolean;
}

/** The rows `query` (built on the kernel's handle) returns, run through `through` (a transaction, say). */
const rowsThrough = async <R>(through: LeaseDb, query: Compilable<R>): Promise<R[]> =>
  (await through.getExecutor().executeQuery(query.compile())).rows;

export function createLeases(options: LeasesOptions): Leases {
  const { db, log } = options;
  const seconds = Math.max(2, options.seconds ?? DEFAULT_LEASE_SECONDS);
  const owner = `lease-${randomUUID()}`;
  const until = () => sql<Date>`now() + ${seconds} * interval '1 second'`;
  const tasks: Array<() => Promise<unknown>> = [];
  let timer: NodeJS.Timeout | null = null;
  // The renewal and the tasks each run one at a time, but apart: a slow task (recovering many orphans, a slow
  // database) must never hold back the renewal, or this live process's own leases would run out under it.
  let renewing: Promise<void> | null = null;
  let working: Promise<void> | null = null;

  const renewOnce = async () => {
    try {
      await leases.renew();
    } catch (err) {
      // A database blip: the next beat tries again; the lease outlives a few missed beats.
      log.warn(`leases: renewal failed (${err instanceof Error ? err.message : String(err)})`);
    }
  };
  const runTasks = async () => {
    for (const task of tasks)
      await task().catch((err) =>
        log.warn(`leases: a heartbeat task failed (${err instanceof Error ? err.message : String(err)})`),
      );
  };
  const beat = () => {
    if (!renewing) renewing = renewOnce().finally(() => (renewing = null));
    if (!working) working = renewing.then(runTasks).finally(() => (working = null));
  };

  const leases: Leases = {
    owner,
    seconds,
    async take(trx, key) {
      const taken = await rowsThrough(
        trx,
        db
          .insertInto("leases")
          .values({ key, owner, expires_at: until() })
          .onConflict((oc) =>
            oc
              .column("key")
              .doUpdateSet({ owner, expires_at: until() })
              .where((eb) => eb.or([eb("leases.expires_at", "<=", sql<Date>`now()`), eb("leases.owner", "=", owner)])),
          )
          .returning("key"),
      );
      return taken.length > 0;
    },
    async release(trx, key) {
      await rowsThrough(trx, db.deleteFrom("leases").where("key", "=", key));
    },
    async isHeld(key, through = db) {
      const held = await rowsThrough(
        through,
        db.selectFrom("leases").select("key").where("key", "=", key).where("expires_at", ">", sql<Date>`now()`),
      );
      return held.length > 0;
    },
    async renew() {
      await db.updateTable("leases").set({ expires_at: until() }).where("owner", "=", owner).execute();
    },
    onBeat(task) {
      tasks.push(task);
    },
    async start() {
      if (timer) return;
      if (options.embedded)
        await db
          .updateTable("leases")
          .set({ expires_at: sql<Date>`now() - interval '1 second'` })
          .where("owner", "<>", owner)
          .execute();
      // A third of the lease: two beats may be missed (a slow database) before a live owner's lease runs out.
      const every = Math.max(500, Math.floor((seconds * 1000) / 3));
      timer = setInterval(beat, every);
      timer.unref();
      // At once too: work orphaned before this start (a restart) is recovered now, not a beat later.
      beat();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await Promise.all([renewing, working]);
    },
  };
  return leases;
}
