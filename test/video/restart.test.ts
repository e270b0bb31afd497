// A video whose render is killed twice (the real server, main.ts, SIGKILLed while it renders): an attempt
// that dies with its process is not a failed attempt (issue 46: crashes spend a separate, larger budget than
// the kind's `retries`), so the job survives both kills, completes, is charged once and never refunded. Before,
// two kills spent the kind's attempts and the job was dead-lettered, ended `error` and refunded. The wait on
// the upstream holds no attempt (core/upstream-waits.ts), so the kills land in the render, the part of the job
// that is work: a 4K clip of 8 s gives them a window of several seconds. On every database backend.
//
// A killed attempt is taken back at once by the restarted embedded process (Queue.resumeOwnAttempts), and on
// Postgres found by pg-boss's heartbeat expiry (heartbeatSeconds 10).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { api, call, restartRig, sleep, until } from "../helpers/restart.ts";

const ADMIN_TOKEN = "adm_wsChgH9SW5ATZaAsXezAnugGpJYUjNTGiswQornu";
const CREDITS = 10_000;

for (const backend of await databaseBackends()) {
  const t = suite(`video: render killed on every attempt on ${backend.name}`);
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: "1000" } });

  t("the job survives its crashes: it completes, charged once, nothing refunded", async () => {
    const logs = rig.logs;
    let server = await rig.start();
    const { partnerId, key } = await rig.partner(server, "Video restart", CREDITS, {
      rate_limits: { "GET /video-status/<job_id>": 100_000 },
    });
    const submitted = await call(server, "POST", api("/generate-video"), {
      key,
      body: { prompt: "A storm over a lighthouse, waves breaking", model: "beta-2-direct", quality: "4K", duration: 8 },
    });
    assert.is(submitted.status, 202, JSON.stringify(submitted.body));
    const jobId = submitted.body.job_id as string;
    const charged = submitted.body.credits_used as number;

    // The render reports 22-90 %: each attempt is killed a step further than the last one reached (progress
    // never goes backwards, so the second kill needs the second render past the first's mark).
    for (const mark of [30, 40]) {
      await until(
        async () => (await call(server, "GET", api(`/video-status/${jobId}`), { key })).body,
        (s) => {
          if (s.status !== "queued" && s.status !== "processing")
            throw new Error(`the job ended before its render could be killed: ${JSON.stringify(s)}\n${logs()}`);
          return (s.progress ?? 0) >= mark;
        },
        `render past ${mark} %`,
        120_000,
      );
      await server.kill();
      server = await rig.start();
    }

    const final = await until(
      async () => (await call(server, "GET", api(`/video-status/${jobId}`), { key })).body,
      (s) => s.status === "complete" || s.status === "error",
      "ended",
      120_000,
      250,
    );
    assert.is(final.status, "complete", `${JSON.stringify(final)}\n${logs()}`);
    const credits = await call(server, "GET", api("/credits"), { key });
    assert.is(credits.body.credits_remaining, CREDITS - charged, "charged once, nothing came back");
    await server.stop();
    assert.is((await server.exited).code, 0, `the last server did not shut down cleanly:\n${logs()}`);

    const database = await rig.openDatabase();
    try {
      const db = database.kysely;
      const ledger = await db
        .selectFrom("ledger")
        .select(["type", "amount", "job_id"])
        .where("partner_id", "=", partnerId)
        .orderBy("id")
        .execute();
      assert.equal(
        ledger.filter((e) => e.job_id === jobId).map((e) => [e.type, Number(e.amount)]),
        [["usage", -charged]],
        "charged once, never refunded",
      );
      assert.is(
        (await db.selectFrom("job_waits").select("job_id").where("job_id", "=", jobId).execute()).length,
        0,
        "the wait went with the job",
      );
      // The two kills were crashes, not failed attempts of the runner.
      const job = await db
        .selectFrom("jobs")
        .select(["failed_attempts", "state"])
        .where("id", "=", jobId)
        .executeTakeFirstOrThrow();
      assert.is(Number(job.failed_attempts), 0, "no crash counted as a failed attempt");
    } finally {
      await database.close();
    }
    await sleep(0);
  });

  t.run();
}
