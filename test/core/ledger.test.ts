// Money under concurrency, on every database backend (PGlite always, Postgres when it answers).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { sql } from "kysely";
import { ApiError } from "../../core/errors.ts";
import { addCredits, chargeAndCreateJob, finishJob } from "../../core/ledger.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { rejection } from "../helpers/assert.ts";

async function ledgerSum(tk: TestKernel, partnerId: string): Promise<number> {
  const r = await sql<{ s: number | null }>`select sum(amount) as s from ledger where partner_id = ${partnerId}`.execute(tk.kernel.database.kysely);
  return Number(r.rows[0]?.s ?? 0);
}

for (const backend of await databaseBackends()) {
  const t = suite(`ledger on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await createTestKernel({ plugins: [], databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined });
  });
  t.after.each(async () => {
    await tk.close();
  });

  const charge = (partnerId: string, credits: number, inflight = false) =>
    chargeAndCreateJob(tk.kernel.database.kysely, { partnerId, plugin: "t", kind: "k", endpoint: "POST /t", state: "queued", credits, inflight });

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
    const jobs = await tk.kernel.database.kysely.selectFrom("jobs").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
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
    const results = await Promise.all(Array.from({ length: 20 }, () => finishJob(tk.kernel.database.kysely, job.jobId, { state: "error", refund: true, error: "Generation failed." })));
    assert.is(results.filter(Boolean).length, 1);
    assert.is(await tk.kernel.accounts.balance(p.id), 100);
    assert.is(await ledgerSum(tk, p.id), 100);
    const refunds = await tk.kernel.database.kysely.selectFrom("ledger").selectAll().where("type", "=", "refund").execute();
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

  t.run();
}

