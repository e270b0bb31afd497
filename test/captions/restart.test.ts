// A caption job survives its server being SIGKILLed during the burn, on every database backend: after a
// restart on the same database and DATA_DIR the job reaches a terminal state, charged once and refunded at
// most once, and the account's ledger still sums to its balance (docs/architecture.md invariant 1, core/jobs.ts "Crash
// safety"). The dead attempt is found by pg-boss's heartbeat expiry, so recovery takes 10-20 s.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { api, call, ledgerOf, restartRig, sleep, until } from "../helpers/restart.ts";
import { SPEAKING_CLIP } from "../helpers/speaking-clip.ts";
import { subscribeSse } from "../helpers/sse.ts";

const ADMIN_TOKEN = "adm_ke5wuGdkdyosm5XVtsJbqds8dERw4vmsUJH4TT2C";

for (const backend of await databaseBackends()) {
  const t = suite(`captions: server killed during the burn on ${backend.name}`);
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: "0" } });

  t("the job ends once, charged once, refunded at most once", async () => {
    const first = await rig.start();
    // Polled every 100 ms: the spec's 60 a minute would answer 429 for most of each minute, and the wait for
    // the recovered job would last until the window turned over instead of until the job ended.
    const { partnerId, key } = await rig.partner(first, "Captions restart", 1000, {
      rate_limits: { "GET /captions/<job_id>": 100_000, "GET /video-status/<job_id>": 100_000 },
    });

    // A clip with speech (5 s at 720p, the model's shortest): the kill below waits for the burn's own
    // progress, so the clip needs no length of its own to be caught mid-burn; every render of it (the clip,
    // the killed burn, the burn again) costs CPU time the whole suite shares.
    const gen = await call(first, "POST", api("/generate-video"), { key, body: SPEAKING_CLIP });
    assert.is(gen.status, 202, JSON.stringify(gen.body));
    await until(
      () => call(first, "GET", api(`/video-status/${gen.body.job_id}`), { key }),
      (r) => r.body.status === "complete",
      "video",
    );
    const sub = await call(first, "POST", api("/captions"), { key, body: { video_job_id: gen.body.job_id } });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    const jobId: string = sub.body.job_id;

    // Kill the server while the job works: once the burn has reported progress of its own (the spoken
    // record makes transcription instant; "Rendering" starts at 40 % and the burn's frames move it on, a
    // report every quarter second), so the kill lands inside the burn whatever the clip's length or the
    // machine's load. The status API shows no progress; the job's updates (GraphQL over SSE) do.
    const stream = subscribeSse(first.url, {
      key,
      query: "subscription($id: String!) { jobUpdates(id: $id) { state progress message terminal } }",
      variables: { id: jobId },
    });
    const updates = () => stream.events.map((e) => e.data?.jobUpdates).filter(Boolean);
    const burning = () => updates().find((u) => u.terminal || (u.message === "Rendering" && u.progress > 40));
    for (const end = Date.now() + 120_000; !burning(); await sleep(10)) {
      if (stream.ended() || Date.now() > end) throw new Error(`no burn progress: ${JSON.stringify(stream.events)}`);
    }
    assert.not.ok(burning().terminal, `the job ended before the kill: ${JSON.stringify(updates())}`);
    await first.kill();
    stream.close();

    const second = await rig.start();
    const final = await until(
      () => call(second, "GET", api(`/captions/${jobId}`), { key }),
      (r) => ["complete", "failed", "no_speech"].includes(r.body.status),
      `recovery\n${rig.logs()}`,
      240_000,
    );
    assert.ok(["complete", "failed"].includes(final.body.status), JSON.stringify(final.body));
    await second.stop();

    const database = await rig.openDatabase();
    try {
      const db = database.kysely;
      const { ledger, balance, sum } = await ledgerOf(db, partnerId);
      const forJob = ledger.filter((e) => e.job_id === jobId);
      assert.is(forJob.filter((e) => e.type === "usage").length, 1, "charged once");
      assert.ok(forJob.filter((e) => e.type === "refund").length <= 1, "refunded at most once");
      assert.is(forJob.filter((e) => e.type === "refund").length, final.body.status === "complete" ? 0 : 1);
      assert.is(balance, sum, "the balance is the ledger's sum");
      const job = await db.selectFrom("jobs").selectAll().where("id", "=", jobId).executeTakeFirstOrThrow();
      assert.ok(job.finished_at !== null);
    } finally {
      await database.close();
    }
  });

  t.run();
}
