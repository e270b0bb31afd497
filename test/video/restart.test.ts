// A video whose render is killed twice (the real server, main.ts, SIGKILLed while it renders): an attempt
// that dies with its process is not a failed attempt (issue 46: crashes spend a separate, larger budget than
// the kind's `retries`), so the job survives both kills, completes, is charged once and never refunded. Before,
// two kills spent the kind's attempts and the job was dead-lettered, ended `error` and refunded. The wait on
// the upstream holds no attempt (core/upstream-waits.ts), so the kills land in the render, the part of the job
// that is work: a 4K clip of 8 s gives them a window of several seconds. On every database backend.
//
// A killed attempt is taken back at once by the restarted embedded process (Queue.resumeOwnAttempts), and on
// Postgres found by pg-boss's heartbeat expiry (heartbeatSeconds 10).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openDatabase } from "../../storage/db.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { api, call, sleep, until } from "../helpers/restart.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const ADMIN_TOKEN = "adm_wsChgH9SW5ATZaAsXezAnugGpJYUjNTGiswQornu";
const CREDITS = 10_000;

for (const backend of await databaseBackends()) {
  const t = suite(`video: render killed on every attempt on ${backend.name}`);
  const servers: ServerProcess[] = [];
  let dataDir: string | undefined;

  t.after.each(async () => {
    for (const s of servers.splice(0)) await s.kill();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    dataDir = undefined;
  });

  t("the job survives its crashes: it completes, charged once, nothing refunded", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "mediagate-video-restart-"));
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    const env = { DATA_DIR: dataDir, ADMIN_TOKEN, SANDBOX_LATENCY_MS: "1000", LOG_LEVEL: "warn", ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
    const start = async () => {
      const s = await startServer(env);
      servers.push(s);
      return s;
    };
    const logs = () => servers.map((s, i) => `--- server ${i + 1} ---\n${s.output()}`).join("\n");

    let server = await start();
    const made = await call(server, "POST", "/api/v1/admin/partners", { adminToken: ADMIN_TOKEN, body: { name: "Video restart", credits: CREDITS } });
    assert.is(made.status, 201, JSON.stringify(made.body));
    const { partner_id: partnerId, api_key: key } = made.body as { partner_id: string; api_key: string };
    await call(server, "PATCH", `/api/v1/admin/partners/${partnerId}`, { adminToken: ADMIN_TOKEN, body: { limits: { rate_limits: { "GET /video-status/<job_id>": 100_000 } } } });
    const submitted = await call(server, "POST", api("/generate-video"), { key, body: { prompt: "A storm over a lighthouse, waves breaking", model: "beta-2-direct", quality: "4K", duration: 8 } });
    assert.is(submitted.status, 202, JSON.stringify(submitted.body));
    const jobId = submitted.body.job_id as string;
    const charged = submitted.body.credits_used as number;

    // The render reports 22-90 %: each attempt is killed a step further than the last one reached (progress
    // never goes backwards, so the second kill needs the second render past the first's mark).
    for (const mark of [30, 40]) {
      await until(
        async () => (await call(server, "GET", api(`/video-status/${jobId}`), { key })).body,
        (s) => {
          if (s.status !== "queued" && s.status !== "processing") throw new Error(`the job ended before its render could be killed: ${JSON.stringify(s)}\n${logs()}`);
          return (s.progress ?? 0) >= mark;
        },
        `render past ${mark} %`,
        120_000,
      );
      await server.kill();
      server = await start();
    }

    const final = await until(async () => (await call(server, "GET", api(`/video-status/${jobId}`), { key })).body, (s) => s.status === "complete" || s.status === "error", "ended", 120_000, 250);
    assert.is(final.status, "complete", `${JSON.stringify(final)}\n${logs()}`);
    const credits = await call(server, "GET", api("/credits"), { key });
    assert.is(credits.body.credits_remaining, CREDITS - charged, "charged once, nothing came back");
    await server.stop();
    assert.is((await server.exited).code, 0, `the last server did not shut down cleanly:\n${logs()}`);

    const database = await openDatabase(databaseUrl ? { url: databaseUrl } : { dataDir });
    try {
      const db = database.kysely;
      const ledger = await db.selectFrom("ledger").select(["type", "amount", "job_id"]).where("partner_id", "=", partnerId).orderBy("id").execute();
      assert.equal(ledger.filter((e) => e.job_id === jobId).map((e) => [e.type, Number(e.amount)]), [["usage", -charged]], "charged once, never refunded");
      assert.is((await db.selectFrom("job_waits").select("job_id").where("job_id", "=", jobId).execute()).length, 0, "the wait went with the job");
      // The two kills were crashes, not failed attempts of the runner.
      const job = await db.selectFrom("jobs").select(["failed_attempts", "state"]).where("id", "=", jobId).executeTakeFirstOrThrow();
      assert.is(Number(job.failed_attempts), 0, "no crash counted as a failed attempt");
    } finally {
      await database.close();
    }
    await sleep(0);
  });

  t.run();
}
