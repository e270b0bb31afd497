// Transient is not failure (issue 46, deliverable 4), on every database backend: a runner's transient error
// (lib/transient.ts: a lost connection, a time-out, an upstream's 5xx) is retried and never counts against
// the kind's `retries`, so a job that meets more of them than it has retries still ends in success, charged and
// not refunded; a runner's other errors still fail it after its retries, refunded once. The queue's back-off
// (2 s doubling to 60 s) is set to none here, through the same Queue API the runtime uses, so the test waits
// for the retries and not for their delays. Music, whose runner turned any error of its upstream wait into a
// failure, retries them too.
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MusicProviders, MusicTrack } from "../../contracts/music.ts";
import type { UpstreamProvider } from "../../contracts/upstream.ts";
import { JOB_CRASH_RETRIES, type JobKindDeclaration } from "../../core/jobs.ts";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import { queuedThen } from "../../lib/job-states.ts";
import music from "../../plugins/music/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { partnerRows } from "../helpers/partner-reads.ts";
import { until } from "../helpers/restart.ts";

const runs = new Map<string, number>();
const TRANSIENT_RUNS = 3;

/** What node-postgres throws when the server is gone, and an upstream's 503 as a contract error carries it. */
const transientErrors = [
  () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
  () => Object.assign(new Error("the database system is starting up"), { code: "57P03" }),
  () => Object.assign(new Error("upstream answered 503"), { upstreamStatus: 503 }),
];

const kind = (run: JobKindDeclaration["run"]): JobKindDeclaration => ({
  ...queuedThen("done", "failed"),
  failError: "The job failed. Credits refunded.",
  retries: 1,
  run,
});
const retrying = definePlugin({
  name: "retrying",
  jobs: {
    // More transient errors than it has attempts, then a success.
    flaky: kind(async (ctx) => {
      const n = (runs.get(ctx.jobId) ?? 0) + 1;
      runs.set(ctx.jobId, n);
      if (n <= TRANSIENT_RUNS) throw transientErrors[(n - 1) % transientErrors.length]!();
      return { state: "done" };
    }),
    // A bug: every attempt fails.
    broken: kind(async (ctx) => {
      runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
      throw new Error("a bug in the runner");
    }),
  },
});

// A music upstream whose submit cannot be reached the first TRANSIENT_RUNS times, then makes two tiny tracks.
let musicSubmits = 0;
const flakyUpstream: UpstreamProvider<unknown, MusicTrack[]> = {
  name: "music-flaky",
  async submit() {
    musicSubmits++;
    if (musicSubmits <= TRANSIENT_RUNS) throw transientErrors[(musicSubmits - 1) % transientErrors.length]!();
    return { id: `work-${musicSubmits}` };
  },
  async poll() {
    const track = (i: number): MusicTrack => ({
      audio: new Uint8Array([0xff, 0xfb, i]),
      cover: new Uint8Array([0xff, 0xd8, i]),
      coverMimeType: "image/jpeg",
      title: "Calm",
      duration: 3,
      arrangement: null,
    });
    return { state: "done", result: [track(0), track(1)] };
  },
};
const flakyMusic = definePlugin({
  name: "music-flaky-provider",
  provides: {
    "music.generate": (_host: CapabilityHost): MusicProviders => ({
      provider: () => ({ generate: flakyUpstream as any, extend: flakyUpstream as any }),
    }),
  },
});

for (const backend of await databaseBackends()) {
  const t = suite(`transient errors are not failed attempts, on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    musicSubmits = 0;
    tk = await createTestKernel({
      plugins: [retrying, flakyMusic, music],
      start: true,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      env: { PUBLIC_URL: "https://media.example.test" },
    });
    // The runtime's settings but the delay (kernel.start made the queues).
    for (const queue of ["retrying.flaky", "retrying.broken", "music.music"]) {
      await tk.kernel.queue.createQueue(queue, {
        retryLimit: 1 + JOB_CRASH_RETRIES,
        expireInSeconds: 900,
        heartbeatSeconds: 10,
        deadLetter: `${queue}.dead`,
      });
    }
  });
  t.after(async () => {
    await tk.close();
  });

  const db = () => tk.kernel.database.kysely as Kysely<any>;
  const submit = async (partnerId: string, k: string) =>
    (
      await tk.kernel.jobs.submit({
        partnerId,
        plugin: "retrying",
        kind: k,
        endpoint: `POST /${k}`,
        state: "queued",
        credits: 10,
        inflight: true,
        input: {},
      })
    ).jobId;
  const finished = async (jobId: string) => {
    const read = () =>
      db()
        .selectFrom("jobs")
        .select(["state", "finished_at", "credits_refunded", "failed_attempts", "error"])
        .where("id", "=", jobId)
        .executeTakeFirstOrThrow();
    return until(read, (j) => j.finished_at !== null, `job ${jobId} unfinished`, 60_000);
  };
  const balance = async (partnerId: string) =>
    (
      await db()
        .selectFrom("partners")
        .select("credits_remaining")
        .where("id", "=", partnerId)
        .executeTakeFirstOrThrow()
    ).credits_remaining;
  const refunds = (partnerId: string) => partnerRows(tk, "ledger", partnerId, "refund");

  t("transient errors, more than the kind's retries, then a success: done, charged, nothing refunded", async () => {
    const { id } = await tk.partner({ credits: 100 });
    const jobId = await submit(id, "flaky");
    const job = await finished(jobId);
    assert.is(job.state, "done", `error: ${job.error}`);
    assert.is(runs.get(jobId), TRANSIENT_RUNS + 1);
    assert.is(job.failed_attempts, 0);
    assert.is(job.credits_refunded, 0);
    assert.is(await balance(id), 90);
    assert.is(await refunds(id), 0);
  });

  t("a runner's own error still fails the job after its retries, refunded once", async () => {
    const { id } = await tk.partner({ credits: 100 });
    const jobId = await submit(id, "broken");
    const job = await finished(jobId);
    assert.is(job.state, "failed");
    assert.is(job.error, "The job failed. Credits refunded.");
    assert.is(runs.get(jobId), 2, "the first attempt and its one retry");
    assert.is(job.failed_attempts, 2);
    assert.is(job.credits_refunded, 10);
    assert.is(await balance(id), 100);
    assert.is(await refunds(id), 1);
  });

  t(
    "music: an upstream out of reach (connection refused, the database starting up, a 503) is retried, not failed",
    async () => {
      const { id, key } = await tk.partner({ credits: 100 });
      const res = await tk.request("POST", "/generate-music", { key, body: { prompt: "calm piano" } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      const job = await finished(res.body.job_id);
      assert.is(job.state, "complete", `error: ${job.error}`);
      assert.is(musicSubmits, TRANSIENT_RUNS + 1);
      assert.is(job.failed_attempts, 0);
      assert.is(job.credits_refunded, 0);
      assert.is(await refunds(id), 0);
      const status = await tk.request("GET", `/music-status/${res.body.job_id}`, { key });
      assert.is(status.body.status, "complete");
      assert.is(status.body.tracks.length, 2);
    },
  );

  t.run();
}
