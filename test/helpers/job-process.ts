// A process of its own running the job runtime with one slow job kind, for tests that kill it in the middle of
// an attempt (SIGKILL) and start another on the same database (test/core/crash-attempts.test.ts). Started with
// `node --import tsx test/helpers/job-process.ts` and this environment:
// - DATA_DIR (embedded PGlite on disk) or DATABASE_URL (Postgres);
// - SUBMIT=1: charge a new partner 10 credits for one `crashy/slow` job and print `SUBMITTED <job id>`;
// - WATCH=<job id>: print `FINISHED <state> refunded=<credits> failed_attempts=<n>` once that job has ended;
// - HOLD_MS: how long each attempt runs (it prints `RUN <job id> <attempt>` as it starts), default 0;
// - RETRIES: the kind's `retries`, default 0: a crash that counted as a failed attempt would fail the job.
import process from "node:process";
import type { Kysely } from "kysely";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin } from "../../core/plugin.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { createTestKernel } from "../../testkit/index.ts";

const env = process.env;
const holdMs = Number(env.HOLD_MS ?? 0);
const slow: JobKindDeclaration = {
  ...queuedThen("done", "failed"),
  failError: "The job failed. Credits refunded.",
  retries: Number(env.RETRIES ?? 0),
  async run(ctx) {
    console.log(`RUN ${ctx.jobId} ${ctx.attempt}`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, holdMs);
      ctx.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
    return { state: "done" };
  },
};

const tk = await createTestKernel({
  plugins: [definePlugin({ name: "crashy", jobs: { slow } })],
  start: true,
  ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : { dataDir: env.DATA_DIR! }),
  env: { LOG_LEVEL: env.LOG_LEVEL ?? "warn" },
});
const db = tk.kernel.database.kysely as Kysely<any>;
console.log("STARTED");

if (env.SUBMIT) {
  const { id } = await tk.partner({ credits: 100 });
  const { jobId } = await tk.kernel.jobs.submit({
    partnerId: id,
    plugin: "crashy",
    kind: "slow",
    endpoint: "POST /slow",
    state: "queued",
    credits: 10,
    inflight: true,
    input: {},
  });
  console.log(`SUBMITTED ${jobId}`);
}
if (env.WATCH) {
  for (;;) {
    const job = await db.selectFrom("jobs").selectAll().where("id", "=", env.WATCH).executeTakeFirstOrThrow();
    if (job.finished_at !== null) {
      console.log(
        `FINISHED ${job.state} refunded=${job.credits_refunded} failed_attempts=${job.failed_attempts ?? "-"}`,
      );
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
