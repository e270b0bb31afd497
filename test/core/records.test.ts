// The job-record read model (lib/records.ts), on every database backend: a plugin's record table joined to
// the kernel's `jobs` row, read typed: one record by job id and owner (another account's is missing, like a
// job that does not exist), by another key, a page newest first with filters and the total they match, and
// a record read inside the transaction that changes its job.

import type { ColumnType, Kysely } from "kysely";
import { definePlugin, type JobRecord, jobRecords } from "mediagate/plugin";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { submitJobs } from "../../core/job-transactions.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

interface ClipsTable {
  clip_id: string;
  partner_id: string;
  title: string;
  /** A record column named like a job column: the job's wins. */
  state: string;
  created_at: ColumnType<Date, Date | string, Date | string>;
}
interface ClipOutput {
  key: string;
  seconds: number;
}

const clips = jobRecords<ClipsTable, ClipOutput>("clips", { jobId: "clip_id", newestFirst: ["created_at", "clip_id"] });
type Clip = JobRecord<ClipsTable, ClipOutput>;

const plugin = definePlugin({
  name: "clips",
  migrations: [
    {
      name: "clips/0001",
      statements: [
        "create table clips (clip_id text primary key references jobs(id), partner_id text not null references partners(id), title text not null, state text not null default 'record', created_at timestamptz not null)",
      ],
    },
  ],
});

// Checked by `tsc`: rows and filters are typed against the declared columns, not `any`.
function typed(row: Clip) {
  const title: string = row.title;
  const credits: number = row.credits_used;
  const seconds: number | undefined = row.output?.seconds;
  const finished: Date | null = row.finished_at;
  // @ts-expect-error not a column of the record or the job
  void row.prompt;
  // @ts-expect-error `output` is the plugin's own type
  void row.output?.nothing;
  return [title, credits, seconds, finished];
}
void typed;
// @ts-expect-error the job id column must be one of the table's text columns
jobRecords<ClipsTable>("clips", { jobId: "created_at", newestFirst: [] });

for (const backend of await databaseBackends()) {
  const t = suite(`job records on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [plugin],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  t.after.each(async () => {
    await tk?.close();
  });

  const db = () => tk.kernel.database.kysely;
  const clipsDb = () => tk.kernel.database.kysely as unknown as Kysely<{ clips: ClipsTable }>;
  let minute = 0;
  /** A charged job and its clip record, each a minute newer than the last. */
  async function clip(partnerId: string, title: string, state = "queued") {
    const job = await submitJobs(db(), {
      partnerId,
      plugin: "clips",
      kind: "clip",
      endpoint: "POST /clip",
      state,
      credits: 3,
      inflight: false,
      partnerJobId: `pj-${title}`,
    });
    await clipsDb()
      .insertInto("clips")
      .values({
        clip_id: job.jobId,
        partner_id: partnerId,
        title,
        state: "record",
        created_at: new Date(Date.UTC(2026, 10, 1, 12, minute++)),
      })
      .execute();
    return job.jobId;
  }
  const finish = (jobId: string, output: ClipOutput) =>
    db()
      .updateTable("jobs")
      .set({ state: "complete", output: JSON.stringify(output), finished_at: new Date() })
      .where("id", "=", jobId)
      .execute();

  t(
    "find: the owner's record with its job's columns; another account's and a missing one are both undefined",
    async () => {
      const a = await tk.partner();
      const b = await tk.partner();
      const id = await clip(a.id, "one");
      await finish(id, { key: "k1", seconds: 8 });
      const row = await clips.find(db(), a.id, id);
      assert.ok(row);
      assert.is(row.clip_id, id);
      assert.is(row.partner_id, a.id);
      assert.is(row.title, "one");
      assert.is(row.state, "complete", "the job's state, not the record's column of the same name");
      assert.is(row.partner_job_id, "pj-one");
      assert.is(row.credits_used, 3);
      assert.is(row.credits_refunded, 0);
      assert.equal(row.output, { key: "k1", seconds: 8 });
      assert.ok(row.finished_at instanceof Date);
      assert.ok(row.created_at instanceof Date);
      assert.is(row.created_at.toISOString(), "2026-11-01T12:00:00.000Z", "the record's created_at, not the job's");

      assert.is(await clips.find(db(), b.id, id), undefined, "another account's record");
      assert.is(await clips.find(db(), a.id, "svc-00000000"), undefined, "a missing record");
    },
  );

  t("findBy: the owner's record by another key, and still only the owner's", async () => {
    const a = await tk.partner();
    const b = await tk.partner();
    const id = await clip(a.id, "needle");
    await clip(b.id, "needle");
    const row = await clips.findBy(db(), a.id, (q) => q.where("r.title", "=", "needle"));
    assert.is(row?.clip_id, id);
    assert.is(await clips.findBy(db(), a.id, (q) => q.where("r.title", "=", "hay")), undefined);
  });

  t("page: the owner's records newest first, ties broken by the later column; filters count in the total", async () => {
    const a = await tk.partner();
    const b = await tk.partner();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await clip(a.id, `a${i}`));
    await clip(b.id, "b0");
    await finish(ids[1]!, { key: "k", seconds: 1 });
    await finish(ids[3]!, { key: "k", seconds: 1 });

    const all = await clips.page(db(), a.id, { limit: 2, offset: 1 });
    assert.is(all.total, 5);
    assert.equal(
      all.rows.map((r) => r.title),
      ["a3", "a2"],
    );

    const done = await clips.page(db(), a.id, { limit: 10, offset: 0 }, (q) => q.where("j.state", "=", "complete"));
    assert.is(done.total, 2);
    assert.equal(
      done.rows.map((r) => r.title),
      ["a3", "a1"],
    );

    const since = await clips.page(db(), a.id, { limit: 10, offset: 0 }, (q) =>
      q.where("r.created_at", ">=", new Date(Date.UTC(2026, 10, 1, 12, minute - 3))).where("j.finished_at", "is", null),
    );
    assert.equal(
      since.rows.map((r) => r.title),
      ["a4"],
    );
    assert.is(since.total, 1);

    // Same creation time: the job id decides, descending.
    await db().updateTable("jobs").set({ state: "queued" }).execute();
    await clipsDb()
      .updateTable("clips")
      .set({ created_at: new Date(Date.UTC(2026, 10, 1)) })
      .where("partner_id", "=", a.id)
      .execute();
    const tied = await clips.page(db(), a.id, { limit: 5, offset: 0 });
    assert.equal(
      tied.rows.map((r) => r.clip_id),
      [...ids].sort().reverse(),
    );
  });

  t("inTransaction: reads through the transaction, so it sees the job's state before it commits", async () => {
    const a = await tk.partner();
    const id = await clip(a.id, "one");
    const seen = await db()
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable("jobs").set({ state: "error", error: "it broke" }).where("id", "=", id).execute();
        return clips.inTransaction(trx, id);
      });
    assert.is(seen.state, "error");
    assert.is(seen.error, "it broke");
    assert.is(seen.title, "one");
    const missing = await clips.inTransaction(db(), "svc-00000000").then(
      () => "found",
      () => "refused",
    );
    assert.is(missing, "refused", "a job without its record is an error, not undefined");
  });

  t.run();
}
