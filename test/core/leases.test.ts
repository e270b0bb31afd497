// core/leases.ts on both dialects: a lease is taken once while its owner lives, renewed by the heartbeat in one
// statement, taken over once it expired, released with the work; on the embedded database a starting process
// expires every other owner's lease at once (only one process can run there).

import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ORPHAN_ERROR } from "../../core/jobs.ts";
import { createLeases } from "../../core/leases.ts";
import { createLogger } from "../../core/log.ts";
import { definePlugin } from "../../core/plugin.ts";
import { openDatabase } from "../../storage/db.ts";
import { migrate } from "../../storage/migrate.ts";
import { kernelMigrations } from "../../storage/migrations/kernel.ts";
import { createTestKernel } from "../../testkit/index.ts";
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
      const rows = await db
        .selectFrom("leases")
        .select(["key", sql<boolean>`expires_at > now() + interval '1500 milliseconds'`.as("renewed")])
        .orderBy("key")
        .execute();
      assert.equal(
        rows.map((r) => [r.key, r.renewed]),
        [
          ["idem:p:k", true],
          ["job:1", true],
          ["job:3", false],
        ],
      );

      // Expired: its owner is dead; anyone takes it over.
      await db
        .updateTable("leases")
        .set({ expires_at: sql`now() - interval '1 second'` })
        .where("key", "=", "job:1")
        .execute();
      assert.not.ok(await b.isHeld("job:1"));
      assert.ok(await b.take(db, "job:1"));
      assert.is(
        (await db.selectFrom("leases").select("owner").where("key", "=", "job:1").executeTakeFirstOrThrow()).owner,
        b.owner,
      );
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
      assert.is(
        await a.isHeld("idem:p:k"),
        !embedded,
        "another owner's lease survives the start only on a server database",
      );
      await c.stop();
    } finally {
      await database.close();
    }
  });

  t.run();
}

// The kernel's recovery of synchronous jobs whose process died (core/jobs.ts recoverOrphans), in process: a job
// of a kind declared without `run` holds its lease from the charge; once the lease expired, the heartbeat's
// sweep ends it through the kind's `recover` (its stored result) or failed and refunded, exactly once; a kind
// no plugin declares is failed with the kernel's sanitized text.
const syncPlugin = definePlugin({
  name: "sync-test",
  jobs: {
    work: {
      states: ["processing", "done", "failed"],
      initial: "processing",
      transitions: { processing: ["done", "failed"] },
      terminal: { done: "success", failed: "failure" },
      failState: "failed",
      failError: "Work failed. Credits refunded.",
      async recover({ input }) {
        return (input as { stored?: boolean }).stored ? { state: "done", output: { recovered: true } } : null;
      },
    },
  },
});

for (const backend of await databaseBackends()) {
  const t = suite(`orphaned synchronous jobs on ${backend.name}`);

  t("recovered once: stored result, refund, undeclared kind; a live lease is left alone", async () => {
    const tk = await createTestKernel({
      plugins: [syncPlugin],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
    try {
      const { id: partnerId } = await tk.partner({ credits: 100 });
      const submit = (kind: string, input: Record<string, unknown>) =>
        tk.kernel.jobs.submit({
          partnerId,
          plugin: "sync-test",
          kind,
          endpoint: "POST /sync-test",
          state: "processing",
          credits: 10,
          inflight: true,
          input,
        });
      const stored = await submit("work", { stored: true });
      const lost = await submit("work", {});
      const foreign = await submit("undeclared", {});
      const live = await submit("work", {});
      const db = tk.kernel.database.kysely;
      assert.is(
        Number((await db.selectFrom("leases").select(sql<number>`count(*)`.as("n")).executeTakeFirstOrThrow()).n),
        4,
        "each job holds its lease from the charge",
      );
      assert.is(await tk.kernel.jobs.recoverOrphans(), 0, "nothing while the leases live");
      // Three owners died: their leases expired (a process never recovers its own: it is alive).
      await db
        .updateTable("leases")
        .set({ expires_at: sql`now() - interval '1 second'` })
        .where("key", "=", `job:${live.jobId}`)
        .execute();
      assert.is(await tk.kernel.jobs.recoverOrphans(), 0, "not a lapsed lease of this live process");
      await db
        .updateTable("leases")
        .set({ expires_at: sql`now() + interval '1 hour'` })
        .where("key", "=", `job:${live.jobId}`)
        .execute();
      await db
        .updateTable("leases")
        .set({ owner: "a-process-that-died", expires_at: sql`now() - interval '1 second'` })
        .where(
          "key",
          "in",
          [stored.jobId, lost.jobId, foreign.jobId].map((id) => `job:${id}`),
        )
        .execute();
      assert.is(await tk.kernel.jobs.recoverOrphans(), 3);
      assert.is(await tk.kernel.jobs.recoverOrphans(), 0, "once");
      const rows = await db
        .selectFrom("jobs")
        .select(["id", "state", "error", "credits_refunded", "holds_inflight_slot", "output"])
        .where("partner_id", "=", partnerId)
        .execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.equal([byId.get(stored.jobId)!.state, byId.get(stored.jobId)!.credits_refunded], ["done", 0]);
      assert.equal(
        [byId.get(lost.jobId)!.state, byId.get(lost.jobId)!.error, byId.get(lost.jobId)!.credits_refunded],
        ["failed", "Work failed. Credits refunded.", 10],
      );
      assert.equal(
        [byId.get(foreign.jobId)!.state, byId.get(foreign.jobId)!.error, byId.get(foreign.jobId)!.credits_refunded],
        ["failed", ORPHAN_ERROR, 10],
      );
      assert.equal([byId.get(live.jobId)!.state, byId.get(live.jobId)!.holds_inflight_slot], ["processing", true]);
      for (const id of [stored.jobId, lost.jobId, foreign.jobId]) assert.is(byId.get(id)!.holds_inflight_slot, false);
      // 100 - 4 x 10 + 2 refunds; one refund row per failed job; only the live job's lease remains.
      const balance = await tk.kernel.accounts.balance(partnerId);
      assert.is(balance, 80);
      const refunds = await db
        .selectFrom("ledger")
        .select("job_id")
        .where("partner_id", "=", partnerId)
        .where("type", "=", "refund")
        .execute();
      assert.equal(refunds.map((r) => r.job_id).sort(), [lost.jobId, foreign.jobId].sort());
      assert.equal(
        (await db.selectFrom("leases").select("key").execute()).map((r) => r.key),
        [`job:${live.jobId}`],
      );
    } finally {
      await tk.close();
    }
  });

  t.run();
}
