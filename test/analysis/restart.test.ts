// Ad analysis survives its server being SIGKILLed mid-stage, on every database backend: two analyses are
// killed while downloading (the sandbox extractor waits 3 s first); after a restart on the same database and
// DATA_DIR the good one completes with its four texts, charged once and never refunded, and the one whose
// link fails its analyzing stage ends `error`, refunded exactly once. The ledger still sums to the balance.
// The dead attempts are found by pg-boss's heartbeat expiry, so recovery takes 10-20 s.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ANALYSIS_FAILURES as F } from "../../plugins/analysis/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { api, call, ledgerOf, restartRig, sleep, until } from "../helpers/restart.ts";

const ADMIN_TOKEN = "adm_5Go55KvHU9XIMLxbv8fdJmGllFsPUT1vV8xfDbzq";

for (const backend of await databaseBackends()) {
  const t = suite(`ad analysis: server killed mid-stage on ${backend.name}`);
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: "3000" } });

  t("after a restart one analysis completes, charged once; the failing one ends error, refunded once", async () => {
    const first = await rig.start();
    // This test polls often.
    const { partnerId, key } = await rig.partner(first, "Analysis restart", 1000, {
      rate_limits: { "GET /status/<job_id>": 100_000 },
    });
    const analyze = async (url: string) => {
      const res = await call(first, "POST", api("/analyze"), { key, body: { url } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      return res;
    };
    const good = await analyze("https://www.instagram.com/reel/Crestart1/");
    const bad = await analyze("https://www.tiktok.com/@a/video/sandbox-analyze-fail");
    await until(
      () => call(first, "GET", api(`/status/${good.body.job_id}`), { key }),
      (r) => r.body.status === "downloading",
      `downloading\n${rig.logs()}`,
      30_000,
      50,
    );
    await sleep(500);
    await first.kill();

    const second = await rig.start();
    const ended = async (id: string) =>
      (
        await until(
          () => call(second, "GET", api(`/status/${id}`), { key }),
          (r) => r.status === 200 && ["complete", "error"].includes(r.body.status),
          `recovery\n${rig.logs()}`,
          300_000,
        )
      ).body;
    const goodEnd = await ended(good.body.job_id);
    const badEnd = await ended(bad.body.job_id);
    assert.is(goodEnd.status, "complete", JSON.stringify(goodEnd));
    assert.ok(goodEnd.result.summary.includes("vertical instagram ad"), goodEnd.result.summary);
    assert.equal([badEnd.status, badEnd.error], ["error", F.analyze]);
    await sleep(500); // a second refund, if there were one, would have landed by now
    await second.stop();

    const database = await rig.openDatabase();
    try {
      const { ledger, balance, sum } = await ledgerOf(database.kysely, partnerId);
      const of = (id: string, type: string) =>
        ledger.filter((e) => e.job_id === id && e.type === type).map((e) => Number(e.amount));
      assert.equal(of(good.body.job_id, "usage"), [-55], "charged once");
      assert.equal(of(good.body.job_id, "refund"), [], "never refunded");
      assert.equal(of(bad.body.job_id, "usage"), [-55], "charged once");
      assert.equal(of(bad.body.job_id, "refund"), [55], "refunded once");
      assert.is(balance, 945);
      assert.is(balance, sum, "the balance is the ledger's sum");
    } finally {
      await database.close();
    }
  });

  t.run();
}
