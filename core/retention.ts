// Retention (spec part 1 convention 9): files kept for a window (cleaned copies and social
// downloads 7 days, merged clips about 7 days) are put with `expiresAt`; this module remembers the expiry in
// one kernel table and one sweeper removes the files once it has passed. Plugins answer their own 410s from
// their records' `expires_at`; the sweeper is what makes that answer true of the storage too.
//
// Why a table rather than blob metadata: the blob store may be S3-like, where listing every file to find the
// old ones costs a scan; the table answers "what has expired" with one indexed query, on every backend.
import type { Kysely } from "kysely";
import type { BlobStore } from "../contracts/blobs.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import type { Logger } from "./log.ts";

const RETAINED_TABLE = "retained_blobs";

/**
 * A blob store that records `expiresAt` of every put in the retention table under the file's full key, so
 * scoped stores (a plugin's) and the root store agree on what a key names.
 */
export function retainingBlobStore(inner: BlobStore, db: Kysely<KernelTables>, prefix = ""): BlobStore {
  return {
    async put(key, data, meta) {
      const full = prefix + key;
      if (meta?.expiresAt) {
        // The row first: a crash between the two leaves a row whose file never came (harmless to sweep),
        // never a file nobody will remove.
        await db
          .insertInto(RETAINED_TABLE)
          .values({ key: full, expires_at: meta.expiresAt })
          .onConflict((oc) => oc.column("key").doUpdateSet({ expires_at: meta.expiresAt! }))
          .execute();
        await inner.put(key, data, meta);
      } else {
        // Rewritten without a window: kept from now on.
        await inner.put(key, data, meta);
        await db.deleteFrom(RETAINED_TABLE).where("key", "=", full).execute();
      }
    },
    get: (key) => inner.get(key),
    has: (key) => inner.has(key),
    keys: () => inner.keys(),
    open: (key) => inner.open(key),
    async remove(key) {
      await inner.remove(key);
      await db
        .deleteFrom(RETAINED_TABLE)
        .where("key", "=", prefix + key)
        .execute();
    },
    scoped: (p) => retainingBlobStore(inner.scoped(p), db, `${prefix}${p}/`),
  };
}

export interface RetentionSweeper {
  /** Removes every file whose window has passed; resolves with how many. Safe to run from many processes. */
  sweep(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

const BATCH = 200;

export function createRetentionSweeper(options: {
  db: Kysely<KernelTables>;
  blobs: BlobStore;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  /** Other rows with a window, forgotten on the same pass (idempotency keys). */
  alsoSweep?: () => Promise<unknown>;
}): RetentionSweeper {
  const { db, blobs, clock, log } = options;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<number> | undefined;

  async function sweepOnce(): Promise<number> {
    let removed = 0;
    for (;;) {
      const due = await db
        .selectFrom(RETAINED_TABLE)
        .select(["key", "expires_at"])
        .where("expires_at", "<=", new Date(clock.now()))
        .orderBy("expires_at")
        .limit(BATCH)
        .execute();
      for (const row of due) {
        try {
          await blobs.remove(row.key);
        } catch (err) {
          // Kept, and tried again a sweep later, rather than forgotten with the file still there.
          log.warn(`retention: could not remove ${row.key}: ${(err as Error).message}`);
          await db
            .updateTable(RETAINED_TABLE)
            .set({ expires_at: new Date(clock.now() + options.intervalMs) })
            .where("key", "=", row.key)
            .execute();
          continue;
        }
        // Only if the window was not extended meanwhile (a rewrite with a new expiry).
        await db
          .deleteFrom(RETAINED_TABLE)
          .where("key", "=", row.key)
          .where("expires_at", "<=", new Date(clock.now()))
          .execute();
        removed++;
      }
      if (due.length < BATCH) {
        await options.alsoSweep?.();
        return removed;
      }
    }
  }

  const sweeper: RetentionSweeper = {
    sweep() {
      // One sweep at a time per process; a tick that finds one running waits for it instead.
      running ??= sweepOnce().finally(() => (running = undefined));
      return running;
    },
    start() {
      timer ??= setInterval(
        () => void sweeper.sweep().catch((err) => log.error("retention sweep failed", err)),
        options.intervalMs,
      );
      timer.unref?.();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
  };
  return sweeper;
}
