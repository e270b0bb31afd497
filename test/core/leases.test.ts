// core/leases.ts on both dialects: a lease is taken once while its owner lives, renewed by the heartbeat in one
// statement, taken over once it expired, released with the work; on the embedded database a starting process
// expires every other owner's lease at once (only one process can run there).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { sql } from "kysely";
import { createLeases } from "../../core/leases.ts";
import { createLogger } from "../../core/log.ts";
import { openDatabase } from "../../storage/db.ts";
import { migrate } from "../../storage/migrate.ts";
import { kernelMigrations } from "../../storage/migrations/kernel.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

const log = createLogger("silent");

for (const backend of await databaseBackends()) {
  const t = suite(`leases on ${backend.name}`);

  t("take, isHeld, renew, take-over after expiry, release, and the embedded start", async () => {
    const database = await openDatabase(backend.name === "postgres" ? { url: await isolatedPostgresDatabase() } : {});
    try {
      const db = database.kysely;
      await migrate(db, kernelMigrations);
      const embedded = backend.name === "pglite";
      const a = createLeases({ db, log, seconds: 2, embedded });
      const b = createLeases({ db, log, seconds: 2, embedded });
      assert.is.not(a.owner, b.owner);

      assert.ok(await db.transaction().execute((trx) => a.take(trx, "job:1")), "a takes a free key");
      assert.ok(await a.take(db, "job:1"), "its own lease is taken again");
      assert.not.ok(await b.take(db, "job:1"), "b cannot take a live lease");
      assert.ok(await b.isHeld("job:1"));
      assert.not.ok(await b.isHeld("job:2"));

      // One statement renews every lease of its owner (and only its owner's).
      await a.take(db, "idem:p:k");
      await b.take(db, "job:3");
      await db.updateTable("leases").set({ expires_at: sql`now() + interval '1 second'` }).execute();
      await a.renew();
      const rows = await db.selectFrom("leases").select(["key", sql<boolean>`expires_at > now() + interval '1500 milliseconds'`.as("renewed")]).orderBy("key").execute();
      assert.equal(
        rows.map((r) => [r.key, r.renewed]),
        [
          ["idem:p:k", true],
          ["job:1", true],
          ["job:3", false],
        ],
      );

      // Expired: its owner is dead; anyone takes it over.
      await db.updateTable("leases").set({ expires_at: sql`now() - interval '1 second'` }).where("key", "=", "job:1").execute();
      assert.not.ok(await b.isHeld("job:1"));
      assert.ok(await b.take(db, "job:1"));
      assert.is((await db.selectFrom("leases").select("owner").where("key", "=", "job:1").executeTakeFirstOrThrow()).owner, b.owner);
      assert.not.ok(await a.take(db, "job:1"));

      await b.release(db, "job:1");
      assert.not.ok(await a.isHeld("job:1"));

      // A process starting with a heartbeat task: the task runs at once; on PGlite, others' leases are dead.
      const c = createLeases({ db, log, seconds: 2, embedded });
      let beats = 0;
      c.onBeat(async () => void beats++);
      await c.start();
      const deadline = Date.now() + 5000;
      while (beats === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.ok(beats > 0, "the first beat runs at start");
      assert.is(await a.isHeld("idem:p:k"), !embedded, "another owner's lease survives the start only on a server database");
      await c.stop();
    } finally {
      await database.close();
    }
  });

  t.run();
}
