// Ad analysis survives its server being SIGKILLed mid-stage, on every database backend: two analyses are
// killed while downloading (the sandbox extractor waits 3 s first); after a restart on the same database and
// DATA_DIR the good one completes with its four texts, charged once and never refunded, and the one whose
// link fails its analyzing stage ends `error`, refunded exactly once. The ledger still sums to the balance.
// The dead attempts are found by pg-boss's heartbeat expiry, so recovery takes 10-20 s.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openDatabase } from "../../storage/db.ts";
import { ANALYSIS_FAILURES as F } from "../../plugins/analysis/errors.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { api, call, sleep, until } from "../helpers/restart.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const ADMIN_TOKEN = "adm_5Go55KvHU9XIMLxbv8fdJmGllFsPUT1vV8xfDbzq";

for (const backend of await databaseBackends()) {
  const t = suite(`ad analysis: server killed mid-stage on ${backend.name}`);
  const servers: ServerProcess[] = [];
  let dataDir = "";
  let env: Record<string, string> = {};
  const logs = () => servers.map((s, i) => `--- server ${i + 1} ---\n${s.output()}`).join("\n");

  t.before.each(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "mediagate-analysis-restart-"));
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    env = { DATA_DIR: dataDir, ADMIN_TOKEN, SANDBOX_LATENCY_MS: "3000", LOG_LEVEL: "warn", ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  });
  t.after.each(async () => {
    for (const s of servers.splice(0)) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  t("after a restart one analysis completes, charged once; the failing one ends error, refunded once", async () => {
    const first = await startServer(env);
    servers.push(first);
    const created = await call(first, "POST", "/api/v1/admin/partners", { adminToken: ADMIN_TOKEN, body: { name: "Analysis restart", credits: 1000 } });
    assert.is(created.status, 201, JSON.stringify(created.body));
    const { partner_id: partnerId, api_key: key } = created.body;
    // Limits are set by PATCH (creating a partner takes none): this test polls often.
    const limited = await call(first, "PATCH", `/api/v1/admin/partners/${partnerId}`, { adminToken: ADMIN_TOKEN, body: { limits: { rate_limits: { "GET /status/<job_id>": 100_000 } } } });
    assert.is(limited.status, 200, JSON.stringify(limited.body));
    const good = await call(first, "POST", api("/analyze"), { key, body: { url: "https://www.instagram.com/reel/Crestart1/" } });
    const bad = await call(first, "POST", api("/analyze"), { key, body: { url: "https://www.tiktok.com/@a/video/sandbox-analyze-fail" } });
    assert.is(good.status, 202, JSON.stringify(good.body));
    assert.is(bad.status, 202, JSON.stringify(bad.body));
    await until(() => call(first, "GET", api(`/status/${good.body.job_id}`), { key }), (r) => r.body.status === "downloading", `downloading\n${logs()}`, 30_000, 50);
    await sleep(500);
    await first.kill();

    const second = await startServer(env);
    servers.push(second);
    const ended = async (id: string) => (await until(() => call(second, "GET", api(`/status/${id}`), { key }), (r) => r.status === 200 && ["complete", "error"].includes(r.body.status), `recovery\n${logs()}`, 300_000)).body;
    const goodEnd = await ended(good.body.job_id);
    const badEnd = await ended(bad.body.job_id);
    assert.is(goodEnd.status, "complete", JSON.stringify(goodEnd));
    assert.ok(goodEnd.result.summary.includes("vertical instagram ad"), goodEnd.result.summary);
    assert.equal([badEnd.status, badEnd.error], ["error", F.analyze]);
    await sleep(500); // a second refund, if there were one, would have landed by now
    await second.stop();

    const database = await openDatabase(backend.name === "postgres" ? { url: env.DATABASE_URL } : { dataDir });
    try {
      const ledger = await database.kysely.selectFrom("ledger").selectAll().where("partner_id", "=", partnerId).execute();
      const of = (id: string, type: string) => ledger.filter((e) => e.job_id === id && e.type === type).map((e) => Number(e.amount));
      assert.equal(of(good.body.job_id, "usage"), [-55], "charged once");
      assert.equal(of(good.body.job_id, "refund"), [], "never refunded");
      assert.equal(of(bad.body.job_id, "usage"), [-55], "charged once");
      assert.equal(of(bad.body.job_id, "refund"), [55], "refunded once");
      const partner = await database.kysely.selectFrom("partners").select("credits_remaining").where("id", "=", partnerId).executeTakeFirstOrThrow();
      assert.is(Number(partner.credits_remaining), 945);
      assert.is(Number(partner.credits_remaining), ledger.reduce((n, e) => n + Number(e.amount), 0), "the balance is the ledger's sum");
    } finally {
      await database.close();
    }
  });

  t.run();
}
