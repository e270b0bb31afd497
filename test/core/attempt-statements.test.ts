// What an attempt costs the database, counted (a test never asserts a duration, but a count it can): with a
// kind's few slots, each statement of an attempt is a share of how many jobs a second the kind can start, and
// one more read at every start made burst dispatch 20-50x slower on Postgres (2cb39f2, found by bisecting
// dispatch.bench). On both backends.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { pingPlugin } from "../helpers/ping-plugin.ts";

const pinger = pingPlugin("pinger", { limitPerMinute: 1000 });

/** The statements that read or write a job's own rows (the queue's and the usage counters' are not counted). */
const ON_JOBS = /\b(from|into|update) "(jobs|job_waits)"/i;
/** The test's own look at whether the job has ended. */
const OUR_POLL = /^select "finished_at" from "jobs"/;
/** The statements on the job's rows an attempt that does not wait, and succeeds, may make. */
const PER_ATTEMPT = 2;

for (const backend of await databaseBackends()) {
  const t = suite(`a job attempt's statements on ${backend.name}`);

  t("an attempt that does not wait reads the job's row, ends it, and never touches job_waits on its own", async () => {
    const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
    const tk = await createTestKernel({
      plugins: [account, pinger],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      onStatement: (sql, parameters) =>
        void (ON_JOBS.test(sql) && !OUR_POLL.test(sql) && statements.push({ sql, parameters })),
    });
    try {
      const { key } = await tk.partner({ credits: 100 });
      const JOBS = 5;
      for (let i = 0; i < JOBS; i++) {
        const res = await tk.request("POST", "/ping", { key, body: {} });
        assert.is(res.status, 202, JSON.stringify(res.body));
        const jobId = (res.body as { job_id: string }).job_id;
        const end = Date.now() + 30_000;
        for (;;) {
          const row = await tk.kernel.database.kysely
            .selectFrom("jobs")
            .select("finished_at")
            .where("id", "=", jobId)
            .executeTakeFirstOrThrow();
          if (row.finished_at !== null) break;
          if (Date.now() > end) throw new Error(`job ${jobId} did not end`);
          await new Promise((r) => setTimeout(r, 10));
        }
        // The attempt's statements: those on this job's rows, but for the submit's insert.
        const attempt = statements
          .filter((s) => s.parameters.includes(jobId) && !/^insert /i.test(s.sql))
          .map((s) => s.sql);
        // The wait row's seq is read with the job's row, as a scalar subquery; a job that never waited has no
        // wait row to end either.
        const ownWaitStatements = attempt.filter((s) => /"job_waits"/.test(s) && !/^select .* from "jobs"/is.test(s));
        assert.equal(ownWaitStatements, [], "statements on job_waits of their own");
        // The job's row read at the start, and updated at the end, the update returning what the job's update
        // event is made of (a success refunds nothing, so nothing is read under a lock first). Raise this
        // knowingly: each statement more is fewer starts a second per slot.
        assert.ok(
          attempt.length <= PER_ATTEMPT,
          `${attempt.length} statements on the job's rows in its attempt (at most ${PER_ATTEMPT}):\n${attempt.join("\n")}`,
        );
        assert.ok(attempt.length > 0, "the statements were counted");
      }
    } finally {
      await tk.close();
    }
  });

  t.run();
}
