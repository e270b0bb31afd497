// Money under concurrency, on every database backend (PGlite always, Postgres when it answers).

import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { finishJob, submitJobs } from "../../core/job-transactions.ts";
import { addCredits, refundShare } from "../../core/ledger.ts";
import { ApiError } from "../../lib/api-error.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { rejection } from "../helpers/assert.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

async function ledgerSum(tk: TestKernel, partnerId: string): Promise<number> {
  const r = await sql<{
    s: number | null;
  }>`select sum(amount) as s from ledger where partner_id = ${partnerId}`.execute(tk.kernel.database.kysely);
  return Number(r.rows[0]?.s ?? 0);
}

for (const backend of await databaseBackends()) {
  const t = suite(`ledger on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  t.after.each(async () => {
    await tk.close();
  });

  /** The amounts of the job's refund lines in the ledger, oldest first. */
  const refundsOf = async (jobId: string) => {
    const lines = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .select("amount")
      .where("job_id", "=", jobId)
      .where("type", "=", "refund")
      .orderBy("id")
      .execute();
    return lines.map((line) => Number(line.amount));
  };

  /** One column of the job rows `ids`, in the order of `ids`. */
  const jobColumn = async <C extends "credits_used" | "input" | "group_id">(ids: string[], column: C) => {
    const rows = await tk.kernel.database.kysely
      .selectFrom("jobs")
      .select(["id", column])
      .where("id", "in", ids)
      .execute();
    return ids.map((id) => (rows.find((r) => r.id === id) as Record<C, unknown>)[column]);
  };

  const charge = (partnerId: string, credits: number, inflight = false) =>
    submitJobs(tk.kernel.database.kysely, {
      partnerId,
      plugin: "t",
      kind: "k",
      endpoint: "POST /t",
      state: "queued",
      credits,
      inflight,
    });

  t("200 concurrent charges against an account that affords 100 succeed exactly 100 times", async () => {
    const p = await tk.partner({ credits: 1000 });
    const results = await Promise.allSettled(Array.from({ length: 200 }, () => charge(p.id, 10)));
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    assert.is(ok.length, 100);
    assert.is(refused.length, 100);
    for (const r of refused) {
      assert.instance(r.reason, ApiError);
      assert.is(r.reason.status, 402);
      assert.is(r.reason.message, "Insufficient credits. Need 10 credits.");
    }
    const balance = await tk.kernel.accounts.balance(p.id);
    assert.is(balance, 0);
    assert.is(await ledgerSum(tk, p.id), balance);
    const jobs = await tk.kernel.database.kysely
      .selectFrom("jobs")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    assert.is(Number(jobs.n), 100, "a refused charge leaves no job row");
  });

  t("a 402 carries credits_remaining and changes nothing", async () => {
    const p = await tk.partner({ credits: 5 });
    try {
      await charge(p.id, 6);
      assert.unreachable();
    } catch (err) {
      assert.is((err as ApiError).status, 402);
      assert.equal((err as ApiError).body(), { error: "Insufficient credits. Need 6 credits.", credits_remaining: 5 });
    }
    assert.is(await tk.kernel.accounts.balance(p.id), 5);
    assert.is(await ledgerSum(tk, p.id), 5);
  });

  t("a refund happens exactly once, however many callers race to finish the job", async () => {
    const p = await tk.partner({ credits: 100 });
    const job = await charge(p.id, 30);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        finishJob(tk.kernel.database.kysely, job.jobId, { state: "error", refund: true, error: "Generation failed." }),
      ),
    );
    assert.is(results.filter(Boolean).length, 1);
    assert.is(await tk.kernel.accounts.balance(p.id), 100);
    assert.is(await ledgerSum(tk, p.id), 100);
    const refunds = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .selectAll()
      .where("type", "=", "refund")
      .execute();
    assert.is(refunds.length, 1);
    assert.is(Number(refunds[0]!.amount), 30);
  });

  t("the in-flight cap holds exactly under concurrency, and a finished job frees its slot", async () => {
    const p = await tk.partner({ credits: 1000 });
    const results = await Promise.allSettled(Array.from({ length: 25 }, () => charge(p.id, 1, true)));
    const ok = results.filter((r) => r.status === "fulfilled") as PromiseFulfilledResult<{ jobId: string }>[];
    assert.is(ok.length, 10);
    for (const r of results) {
      if (r.status === "rejected") {
        assert.is(r.reason.status, 429);
        assert.is(r.reason.message, "Too many in-flight jobs for this partner. Wait for some to finish and retry.");
      }
    }
    assert.is(await tk.kernel.accounts.balance(p.id), 990, "a refused job is not charged");
    await finishJob(tk.kernel.database.kysely, ok[0]!.value.jobId, { state: "complete", refund: false });
    await charge(p.id, 1, true);
    assert.is((await rejection(charge(p.id, 1, true))).status, 429);
  });

  t("purchases and adjustments are ledger rows; the balance never goes negative", async () => {
    const p = await tk.partner({ credits: 10 });
    assert.is(await addCredits(tk.kernel.database.kysely, p.id, 90, "purchase", "Top-up"), 100);
    assert.is(await addCredits(tk.kernel.database.kysely, p.id, -100, "adjustment", "Correction"), 0);
    assert.is(await addCredits(tk.kernel.database.kysely, p.id, -1, "adjustment", "Too far"), null);
    assert.is(await ledgerSum(tk, p.id), 0);
  });

  t(
    "unequal shares: one ledger line, each job holds its share and refunds exactly it, once, even when ended concurrently",
    async () => {
      const p = await tk.partner({ credits: 1000 });
      const job = await submitJobs(tk.kernel.database.kysely, {
        partnerId: p.id,
        plugin: "t",
        kind: "k",
        endpoint: "POST /t",
        state: "queued",
        credits: 417,
        shares: [132, 143, 142],
        inflight: false,
      });
      assert.is(job.jobIds.length, 3);
      const usage = await tk.kernel.database.kysely
        .selectFrom("ledger")
        .select(["amount"])
        .where("partner_id", "=", p.id)
        .where("type", "=", "usage")
        .execute();
      assert.equal(
        usage.map((r) => Number(r.amount)),
        [-417],
      );
      assert.equal(await jobColumn(job.jobIds, "credits_used"), [132, 143, 142]);
      // The second share refunded by three racing finishers: once.
      const ends = await Promise.all(
        [1, 2, 3].map(() => finishJob(tk.kernel.database.kysely, job.jobIds[1]!, { state: "error", refund: true })),
      );
      assert.is(ends.filter(Boolean).length, 1);
      assert.is(await tk.kernel.accounts.balance(p.id), 1000 - 417 + 143);
      assert.is(await ledgerSum(tk, p.id), 1000 - 417 + 143);
      // Shares that do not sum to the charge are a plugin's bug, refused before anything is written.
      await rejection(
        submitJobs(tk.kernel.database.kysely, {
          partnerId: p.id,
          plugin: "t",
          kind: "k",
          endpoint: "POST /t",
          state: "queued",
          credits: 10,
          shares: [5, 4],
          inflight: false,
        }),
      );
      assert.is(await ledgerSum(tk, p.id), 1000 - 417 + 143);
    },
  );

  t("a group holds one in-flight slot until its last job ends", async () => {
    const p = await tk.partner({ credits: 10_000, limits: { inflight_jobs: 2 } });
    let seenGroup: string | null = null;
    const batch = await submitJobs(tk.kernel.database.kysely, {
      partnerId: p.id,
      plugin: "t",
      kind: "k",
      endpoint: "POST /t",
      state: "queued",
      credits: 30,
      shares: [10, 10, 10],
      group: true,
      inflight: true,
      inputs: [{ n: 1 }, { n: 2 }, { n: 3 }],
      insertRecords: async (_trx, _ids, groupId) => void (seenGroup = groupId),
    });
    assert.match(batch.groupId ?? "", /^svc-[0-9a-f]{8}$/);
    assert.is(seenGroup, batch.groupId, "the submit's own rows see the group id in its transaction");
    assert.equal(await jobColumn(batch.jobIds, "input"), [{ n: 1 }, { n: 2 }, { n: 3 }], "one input per job, in order");
    assert.ok((await jobColumn(batch.jobIds, "group_id")).every((g) => g === batch.groupId));
    await charge(p.id, 1, true); // the second slot: the batch took one, not three
    assert.is((await rejection(charge(p.id, 1, true))).status, 429);
    // Two of the three sections end: the group still holds its slot.
    for (const id of batch.jobIds.slice(0, 2))
      await finishJob(tk.kernel.database.kysely, id, { state: "done", refund: false });
    assert.is((await rejection(charge(p.id, 1, true))).status, 429);
    await finishJob(tk.kernel.database.kysely, batch.jobIds[2]!, { state: "done", refund: false });
    await charge(p.id, 1, true);
  });

  t(
    "refundable shares of one job: each returned once, even when asked concurrently; the ending returns only the rest",
    async () => {
      const p = await tk.partner({ credits: 1000 });
      const db = tk.kernel.database.kysely;
      /** A charge of `credits` (the shares' sum unless given) in refundable `shares`. */
      const charge = (shares: number[], credits = shares.reduce((a, b) => a + b, 0)) =>
        submitJobs(db, {
          partnerId: p.id,
          plugin: "t",
          kind: "run",
          endpoint: "POST /t",
          state: "processing",
          credits,
          refundableShares: shares,
          inflight: false,
        });
      const run = await charge([61, 60, 14]);
      assert.is(run.jobIds.length, 1, "one job");
      const got = await Promise.all([0, 0, 0, 1].map((i) => refundShare(db, run.jobId, i)));
      assert.equal(
        got.map((g) => g.credits).sort((a, b) => a - b),
        [0, 0, 60, 61],
      );
      assert.is((await refundShare(db, run.jobId, 7)).credits, 0, "no such part");
      // A success keeps what the shares returned.
      await finishJob(db, run.jobId, { state: "partial", refund: false });
      const ended = await db
        .selectFrom("jobs")
        .select(["credits_used", "credits_refunded"])
        .where("id", "=", run.jobId)
        .executeTakeFirstOrThrow();
      assert.equal([ended.credits_used, ended.credits_refunded], [135, 121]);
      assert.is((await refundShare(db, run.jobId, 2)).credits, 0, "nothing once the job has ended");
      assert.is(await tk.kernel.accounts.balance(p.id), 1000 - 135 + 121);

      // A failure after one share came back returns exactly the rest.
      const failed = await charge([55, 55]);
      await refundShare(db, failed.jobId, 0);
      const done = await finishJob(db, failed.jobId, { state: "error", refund: true });
      assert.is(done?.creditsRefunded, 55);
      assert.equal(await refundsOf(failed.jobId), [55, 55]);
      assert.is(await tk.kernel.accounts.balance(p.id), await ledgerSum(tk, p.id));
      assert.is(await tk.kernel.accounts.balance(p.id), 1000 - 135 + 121);
      // Shares that do not sum to the charge are a plugin's bug, refused before anything is written.
      await rejection(charge([4, 5], 10));
      assert.is(await tk.kernel.accounts.balance(p.id), await ledgerSum(tk, p.id));
    },
  );

  t(
    "shares returned while the job ends, with and without a refund: one ending wins, and the money adds up either way",
    async () => {
      const p = await tk.partner({ credits: 10_000 });
      const db = tk.kernel.database.kysely;
      // A success's ending reads nothing under a lock first (its update takes the lock): what a share returned at
      // the same moment must stay returned, and a failure's ending must return only the rest.
      for (let round = 0; round < 10; round++) {
        const run = await submitJobs(db, {
          partnerId: p.id,
          plugin: "t",
          kind: "run",
          endpoint: "POST /t",
          state: "processing",
          credits: 90,
          refundableShares: [30, 30, 30],
          inflight: false,
        });
        const endings = round % 2 ? [true, false] : [false, true];
        const [, , first, second] = await Promise.all([
          refundShare(db, run.jobId, 0),
          refundShare(db, run.jobId, 1),
          finishJob(db, run.jobId, { state: endings[0] ? "error" : "done", refund: endings[0]! }),
          finishJob(db, run.jobId, { state: endings[1] ? "error" : "done", refund: endings[1]! }),
        ]);
        assert.is([first, second].filter(Boolean).length, 1, "one ending");
        const ended = await db.selectFrom("jobs").selectAll().where("id", "=", run.jobId).executeTakeFirstOrThrow();
        assert.is(
          Number(ended.credits_refunded),
          (await refundsOf(run.jobId)).reduce((sum, amount) => sum + amount, 0),
          "the job's refunded sum is its refund rows",
        );
        if (ended.state === "error")
          assert.is(Number(ended.credits_refunded), 90, "a failure returns everything, once");
        // The row the ending returned is the row as it is now (the job's update event is made of it).
        const winner = (first ?? second)!;
        assert.equal(
          { state: winner.row.state, error: winner.row.error, finished: String(winner.row.finished_at) },
          { state: ended.state, error: ended.error, finished: String(ended.finished_at) },
        );
        assert.is(await tk.kernel.accounts.balance(p.id), await ledgerSum(tk, p.id));
      }
    },
  );

  t.run();
}
