// An Omni batch survives its server being SIGKILLed while a section renders and the others wait on the
// upstream, on every database backend: after a restart on the same database and DATA_DIR every section reaches
// a terminal state, the batch ends `partial` (one section fails by its prompt), the batch was charged once,
// and exactly the failed section's share was refunded, once; the account's ledger still sums to its balance
// (docs/architecture.md invariant 1). A waiting section holds no slot (ctx.awaitUpstream): its next poll is a delayed queue
// job in the database, which the new server simply runs. The rendering attempt that died is found by
// pg-boss's heartbeat expiry, so recovery takes 10-20 s.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { api, call, ledgerOf, restartRig, until } from "../helpers/restart.ts";
import { png } from "./helpers.ts";

const ADMIN_TOKEN = "adm_dj5LK6OhmzM33e3M5EFSWVAvQV8ewDhO3GZ6rpCA";

for (const backend of await databaseBackends()) {
  const t = suite(`omni batch: server killed mid-batch on ${backend.name}`);
  // Each section waits 3 s on the sandbox upstream before it renders.
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: "3000" } });
  const logs = rig.logs;

  t("the batch ends partial, charged once, the failed share refunded exactly once", async () => {
    const first = await rig.start();
    const polls = {
      "GET /omni/script-runner/<batch_id>": 100_000,
      "GET /omni/video/<job_id>": 100_000,
      "POST /omni/characters": 100,
    };
    const { partnerId, key } = await rig.partner(first, "Omni restart", 2000, { rate_limits: polls });
    const hero = await call(first, "POST", api("/omni/characters"), {
      key,
      body: { name: "Hero", image_base64: png([30, 120, 220]) },
    });
    assert.is(hero.status, 201, JSON.stringify(hero.body));

    const sections = [
      { content: 'Hero: "One."', duration: 4 },
      { content: "Two [sandbox:fail]", duration: 6 },
      { content: 'Hero: "Three."', duration: 4 },
      { content: 'Hero: "Four."', duration: 4 },
    ];
    const res = await call(first, "POST", api("/omni/script-runner"), {
      key,
      body: { character_id: hero.body.character_id, sections },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const batchId: string = res.body.batch_id;
    const shares: number[] = res.body.jobs.map((j: any) => j.credits_used);
    assert.equal(shares, [132, 143, 132, 132]);

    // Kill once a section is rendering (in a worker slot, after its 3 s wait); the others are waiting on the
    // upstream (parked, no slot), rendering, or done.
    const sectionIds: string[] = res.body.jobs.map((j: any) => j.job_id);
    const sectionsNow = () =>
      Promise.all(sectionIds.map((id) => call(first, "GET", api(`/omni/video/${id}`), { key })));
    const seen = await until(
      sectionsNow,
      (all) => all.some((r) => r.status === 200 && r.body.message === "Rendering"),
      `a section rendering\n${logs()}`,
      60_000,
      25,
    );
    await first.kill();
    assert.ok(
      seen.some((r) => r.body.status === "processing" && r.body.message !== "Rendering"),
      `a section still waiting at the kill: ${JSON.stringify(seen.map((r) => [r.body.status, r.body.message]))}`,
    );

    const second = await rig.start();
    const final = await until(
      () => call(second, "GET", api(`/omni/script-runner/${batchId}`), { key }),
      (r) => r.status === 200 && r.body.status !== "processing",
      `recovery\n${logs()}`,
      300_000,
    );
    assert.is(final.body.status, "partial", JSON.stringify(final.body));
    assert.equal(
      final.body.jobs.map((j: any) => j.status),
      ["complete", "error", "complete", "complete"],
    );
    assert.equal(
      final.body.jobs.map((j: any) => j.credits_refunded),
      [0, 143, 0, 0],
    );
    await second.stop();

    const database = await rig.openDatabase();
    try {
      const { ledger, balance, sum } = await ledgerOf(database.kysely, partnerId);
      const jobIds = new Set(res.body.jobs.map((j: any) => j.job_id));
      const batchLines = ledger.filter((e) => e.job_id !== null && jobIds.has(e.job_id));
      assert.equal(
        batchLines.filter((e) => e.type === "usage").map((e) => Number(e.amount)),
        [-539],
        "charged once, one line",
      );
      assert.equal(
        batchLines.filter((e) => e.type === "refund").map((e) => [e.job_id, Number(e.amount)]),
        [[res.body.jobs[1].job_id, 143]],
        "exactly the failed share, once",
      );
      assert.is(balance, sum, "the balance is the ledger's sum");
      assert.is(balance, 2000 - 33 - 539 + 143);
    } finally {
      await database.close();
    }
  });

  t.run();
}
