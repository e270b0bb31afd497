// A Script Runner run survives its server being SIGKILLed while scenes render, on every database backend: after
// a restart on the same database and DATA_DIR every scene ends complete or error, the run ends `partial` (one
// scene fails by its text), it was charged once, and exactly the failed scene's part was refunded, once; the
// account's ledger still sums to its balance (docs/architecture.md invariant 1). The dead attempt is found by pg-boss's
// heartbeat expiry, so recovery takes 10-20 s.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { api, call, ledgerOf, restartRig, sleep, until } from "../helpers/restart.ts";
import { png } from "./helpers.ts";

const ADMIN_TOKEN = "adm_umNcAhJzLVGmsSqIA0kfWhYEbiYwnvy0wFM48KTw";

for (const backend of await databaseBackends()) {
  const t = suite(`script runner: server killed mid-run on ${backend.name}`);
  // Every frame and clip waits 1.5 s before rendering: the kill finds scenes in flight.
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: "1500" } });

  t("the run ends partial, charged once, the failed scene's part refunded exactly once", async () => {
    const first = await rig.start();
    // The polling below must not meet 429s.
    const { partnerId, key } = await rig.partner(first, "Runner restart", 2000, {
      rate_limits: { "GET /script-runner/<job_id>": 100_000 },
    });
    const prompt = ["Dawn.", "Storm [sandbox:fail]", "Noon.", "Dusk.", "Night.", "Stars."]
      .map((s, i) => `=== SCENE: S${i + 1} ===\n${s}\n=== DIALOGUE ${i + 1} ===\nLine.`)
      .join("\n");
    const res = await call(first, "POST", api("/script-runner"), {
      key,
      body: { prompt, character_image_base64: png([30, 120, 220]) },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const jobId: string = res.body.job_id;
    assert.is(res.body.credits_used, 363); // ceil(6 x 55 x 1.1)

    await sleep(2500);
    await first.kill();

    const second = await rig.start();
    const final = await until(
      () => call(second, "GET", api(`/script-runner/${jobId}`), { key }),
      (r) => r.status === 200 && r.body.status !== "processing",
      `recovery\n${rig.logs()}`,
      300_000,
    );
    assert.is(final.body.status, "partial", JSON.stringify(final.body));
    assert.equal(
      final.body.scenes.map((s: any) => s.status),
      ["complete", "error", "complete", "complete", "complete", "complete"],
    );
    await second.stop();

    const database = await rig.openDatabase();
    try {
      const { ledger, balance, sum } = await ledgerOf(database.kysely, partnerId);
      const forJob = ledger.filter((e) => e.job_id === jobId);
      assert.equal(
        forJob.filter((e) => e.type === "usage").map((e) => Number(e.amount)),
        [-363],
        "charged once",
      );
      assert.equal(
        forJob.filter((e) => e.type === "refund").map((e) => Number(e.amount)),
        [final.body.credits_refunded],
        "one refund, the failed scene's part",
      );
      assert.is(final.body.credits_refunded, 55, "the failed scene's standard-basis share"); // spec part 3
      assert.is(balance, sum, "the balance is the ledger's sum");
    } finally {
      await database.close();
    }
  });

  t.run();
}
