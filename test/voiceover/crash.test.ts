// A kill -9 in the middle of a synchronous charged request (issue 46, deliverables 1 and 2). POST
// /generate-voiceover creates its job in `processing` inside the request; the process dies while the speech is
// being made. Once the dead process's lease expires (PGlite: at the restart, the only possible owner; Postgres:
// LEASE_SECONDS after the kill, seen by a second live process) the job ends failed and refunded exactly once,
// its in-flight slot is free (the cap is 1 here, so the next voiceover proves it), and a retry with the same
// Idempotency-Key answers the job as a replay instead of 409. Merge shares this path (a kind declared without
// `run`, core/jobs.ts recoverOrphans); voiceover stands for it. (Prompt repair is a queued job now, with a kill
// test of its own: test/omni/improve-crash.test.ts.)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { VOICEOVER_ERRORS } from "../../plugins/voiceover/errors.ts";
import { VOICES } from "../../plugins/voiceover/models.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { api, call, until } from "../helpers/restart.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const ADMIN_TOKEN = "adm_crash_test_4fK9mQ2xLr7TbW1NcYp8HsGd3EjUa6Mz";
const OPENING = 500;
const BODY = { text: "A sentence the dying process never finishes saying.", voice_id: VOICES[0]!.voice_id };

async function post(server: ServerProcess, key: string, idempotencyKey: string) {
  const res = await fetch(server.url + api("/generate-voiceover"), {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "user-agent": "mediagate-crash-test/1.0",
      "idempotency-key": idempotencyKey,
    },
    body: JSON.stringify(BODY),
  });
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: (await res.json()) as any };
}

for (const backend of await databaseBackends()) {
  const t = suite(`voiceover killed mid-request on ${backend.name}`);

  t("the job ends failed and refunded once, its slot free, its key answered as a replay", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mediagate-voiceover-crash-"));
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      LOG_LEVEL: "warn",
      LEASE_SECONDS: "2",
      PUBLIC_URL: "https://media.example.test",
    };
    if (backend.name === "postgres") env.DATABASE_URL = await isolatedPostgresDatabase();
    const servers: ServerProcess[] = [];
    try {
      // The speech takes a minute in the process that will die.
      const dying = await startServer({ ...env, SANDBOX_LATENCY_MS: "60000" });
      servers.push(dying);
      // On Postgres the survivor runs alongside; on PGlite it is the restart.
      if (backend.name === "postgres") servers.push(await startServer({ ...env, SANDBOX_LATENCY_MS: "5" }));
      const created = await call(dying, "POST", "/api/v1/admin/partners", {
        adminToken: ADMIN_TOKEN,
        body: { name: "Crash", credits: OPENING },
      });
      assert.is(created.status, 201, JSON.stringify(created.body));
      const key = created.body.api_key as string;
      const limited = await call(dying, "PATCH", `/api/v1/admin/partners/${created.body.partner_id}`, {
        adminToken: ADMIN_TOKEN,
        body: {
          limits: {
            inflight_jobs: 1,
            rate_limits: { "GET /voiceovers": 100_000, "GET /credits": 1000, "GET /transactions": 1000 },
          },
        },
      });
      assert.is(limited.status, 200, JSON.stringify(limited.body));

      const pending = post(dying, key, "crash-key-1").catch(() => null);
      const listed = await until(
        () => call(dying, "GET", api("/voiceovers"), { key }),
        (r) => r.body.voiceovers?.[0]?.status === "processing",
        "the voiceover is being made",
        60_000,
      );
      const jobId = listed.body.voiceovers[0].job_id as string;
      await dying.kill();
      const killedAt = Date.now();
      assert.is(await pending, null, "the request died with its process");
      servers.shift();

      const survivor =
        backend.name === "postgres" ? servers[0]! : await startServer({ ...env, SANDBOX_LATENCY_MS: "5" });
      if (backend.name === "pglite") servers.push(survivor);
      const readyAt = Date.now();
      const failed = await until(
        () => call(survivor, "GET", api("/voiceovers"), { key }),
        (r) => r.body.voiceovers?.[0]?.status === "failed",
        "the orphaned voiceover is failed",
        60_000,
      );
      console.log(
        `  ${backend.name}: kill -> job failed in ${Date.now() - killedAt} ms (${Date.now() - readyAt} ms after the survivor was ready)`,
      );
      assert.is(failed.body.voiceovers[0].error_message, VOICEOVER_ERRORS.unavailable);

      // Refunded exactly once; the ledger sums to the balance.
      const credits = await call(survivor, "GET", api("/credits"), { key });
      assert.is(credits.body.credits_remaining, OPENING);
      const tx = await call(survivor, "GET", api("/transactions"), { key });
      assert.equal(
        tx.body.transactions.map((e: any) => e.type),
        ["refund", "usage", "purchase"],
        JSON.stringify(tx.body.transactions),
      );
      assert.ok(tx.body.transactions[0].description.includes(jobId));
      assert.is(
        tx.body.transactions.reduce((sum: number, e: any) => sum + e.amount, 0),
        OPENING,
      );

      // The key answers the job it created, as a replay (not 409), and charges nothing.
      const replay = await post(survivor, key, "crash-key-1");
      assert.is(replay.status, 200, JSON.stringify(replay.body));
      assert.is(replay.replayed, "true");
      assert.is(replay.body.job_id, jobId);
      assert.is(replay.body.status, "failed");
      assert.is(replay.body.error, VOICEOVER_ERRORS.unavailable);

      // The slot is free: with a cap of 1, the next voiceover runs.
      const next = await post(survivor, key, "crash-key-2");
      assert.is(next.status, 200, JSON.stringify(next.body));
      assert.ok(next.body.audio_url);
    } finally {
      for (const s of servers) await s.kill();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  t.run();
}
