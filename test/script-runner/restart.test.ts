// A Script Runner run survives its server being SIGKILLed while scenes render, on every database backend: after
// a restart on the same database and DATA_DIR every scene ends complete or error, the run ends `partial` (one
// scene fails by its text), it was charged once, and exactly the failed scene's part was refunded, once; the
// account's ledger still sums to its balance (DESIGN invariant 1). The dead attempt is found by pg-boss's
// heartbeat expiry, so recovery takes 10-20 s.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openDatabase } from "../../storage/db.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { api, call, sleep, until } from "../helpers/restart.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";
import { encodePng } from "../../plugins/images/png.ts";

const png = (rgb: [number, number, number]) => {
  const px = new Uint8Array(64 * 96 * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return Buffer.from(encodePng(64, 96, px, 3)).toString("base64");
};

const ADMIN_TOKEN = "adm_umNcAhJzLVGmsSqIA0kfWhYEbiYwnvy0wFM48KTw";

for (const backend of await databaseBackends()) {
  const t = suite(`script runner: server killed mid-run on ${backend.name}`);
  const servers: ServerProcess[] = [];
  let dataDir = "";
  let env: Record<string, string> = {};
  const logs = () => servers.map((s, i) => `--- server ${i + 1} ---\n${s.output()}`).join("\n");

  t.before.each(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "mediagate-runner-restart-"));
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    // Every frame and clip waits 1.5 s before rendering: the kill finds scenes in flight.
    env = { DATA_DIR: dataDir, ADMIN_TOKEN, SANDBOX_LATENCY_MS: "1500", LOG_LEVEL: "warn", ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
  });
  t.after.each(async () => {
    for (const s of servers.splice(0)) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  t("the run ends partial, charged once, the failed scene's part refunded exactly once", async () => {
    const first = await startServer(env);
    servers.push(first);
    const created = await call(first, "POST", "/api/v1/admin/partners", { adminToken: ADMIN_TOKEN, body: { name: "Runner restart", credits: 2000 } });
    assert.is(created.status, 201, JSON.stringify(created.body));
    const { partner_id: partnerId, api_key: key } = created.body;
    // Limits are set with PATCH (creation takes none): the polling below must not meet 429s.
    const limited = await call(first, "PATCH", `/api/v1/admin/partners/${partnerId}`, { adminToken: ADMIN_TOKEN, body: { limits: { rate_limits: { "GET /script-runner/<job_id>": 100_000 } } } });
    assert.is(limited.status, 200, JSON.stringify(limited.body));
    const prompt = ["Dawn.", "Storm [sandbox:fail]", "Noon.", "Dusk.", "Night.", "Stars."].map((s, i) => `=== SCENE: S${i + 1} ===\n${s}\n=== DIALOGUE ${i + 1} ===\nLine.`).join("\n");
    const res = await call(first, "POST", api("/script-runner"), { key, body: { prompt, character_image_base64: png([30, 120, 220]) } });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const jobId: string = res.body.job_id;
    assert.is(res.body.credits_used, 363); // ceil(6 x 55 x 1.1)

    await sleep(2500);
    await first.kill();

    const second = await startServer(env);
    servers.push(second);
    const final = await until(() => call(second, "GET", api(`/script-runner/${jobId}`), { key }), (r) => r.status === 200 && r.body.status !== "processing", `recovery\n${logs()}`, 300_000);
    assert.is(final.body.status, "partial", JSON.stringify(final.body));
    assert.equal(final.body.scenes.map((s: any) => s.status), ["complete", "error", "complete", "complete", "complete", "complete"]);
    await second.stop();

    const database = await openDatabase(backend.name === "postgres" ? { url: env.DATABASE_URL } : { dataDir });
    try {
      const db = database.kysely;
      const ledger = await db.selectFrom("ledger").selectAll().where("partner_id", "=", partnerId).execute();
      const forJob = ledger.filter((e) => e.job_id === jobId);
      assert.equal(forJob.filter((e) => e.type === "usage").map((e) => Number(e.amount)), [-363], "charged once");
      assert.equal(forJob.filter((e) => e.type === "refund").map((e) => Number(e.amount)), [final.body.credits_refunded], "one refund, the failed scene's part");
      assert.is(final.body.credits_refunded, 55, "the failed scene's standard-basis share"); // spec part 3
      const partner = await db.selectFrom("partners").select("credits_remaining").where("id", "=", partnerId).executeTakeFirstOrThrow();
      assert.is(Number(partner.credits_remaining), ledger.reduce((n, e) => n + Number(e.amount), 0), "the balance is the ledger's sum");
    } finally {
      await database.close();
    }
  });

  t.run();
}
