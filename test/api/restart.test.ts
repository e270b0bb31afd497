// A restart loses nothing: accounts, balances, ledgers and keys survive, on PGlite in DATA_DIR and on
// Postgres. Each "server" here is a whole kernel opened from configuration and then stopped.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createDemoPartnerIfEmpty } from "../../core/bootstrap.ts";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { plugins } from "../../plugins/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

async function boot(env: Record<string, string>) {
  const kernel = await createKernel({ config: loadConfig({ LOG_LEVEL: "silent", ...env }), plugins });
  const app = createHttpApp(kernel, { adminToken: "t" });
  const call = async (path: string, key: string) => {
    const res = await app.fetch(
      new Request(`http://x/api/v1/partner${path}`, {
        headers: { authorization: `Bearer ${key}`, "user-agent": "restart-test/1" },
      }),
    );
    return { status: res.status, body: (await res.json()) as any };
  };
  return { kernel, call };
}

for (const backend of await databaseBackends()) {
  const t = suite(`restart on ${backend.name}`);

  t("accounts, balances, ledger and keys survive a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mediagate-restart-"));
    const env: Record<string, string> = { DATA_DIR: dataDir };
    if (backend.name === "postgres") env.DATABASE_URL = await isolatedPostgresDatabase();
    try {
      const first = await boot(env);
      await first.kernel.start();
      const { partner, apiKey } = await first.kernel.accounts.create({ name: "Durable", credits: 300 });
      const job = await first.kernel.chargeAndCreateJob({
        partnerId: partner.id,
        plugin: "t",
        kind: "k",
        endpoint: "POST /t",
        state: "queued",
        credits: 40,
        inflight: true,
      });
      await first.kernel.finishJob(job.jobId, { state: "error", refund: true });
      await first.kernel.chargeAndCreateJob({
        partnerId: partner.id,
        plugin: "t",
        kind: "k",
        endpoint: "POST /t",
        state: "queued",
        credits: 25,
        inflight: false,
      });
      assert.is((await first.call("/me", apiKey)).status, 200);
      await first.kernel.stop();

      const second = await boot(env);
      await second.kernel.start();
      const me = await second.call("/me", apiKey);
      assert.is(me.status, 200);
      assert.is(me.body.name, "Durable");
      assert.is(me.body.credits_remaining, 275);
      assert.ok(me.body.last_active, "the usage flushed on stop");
      const tx = await second.call("/transactions", apiKey);
      assert.equal(
        tx.body.transactions.map((e: any) => [e.amount, e.type]),
        [
          [-25, "usage"],
          [40, "refund"],
          [-40, "usage"],
          [300, "purchase"],
        ],
      );
      const usage = await second.call("/usage", apiKey);
      assert.is(usage.body.per_endpoint.find((e: any) => e.endpoint === "GET /me").calls, 2);
      await second.kernel.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  if (backend.name === "pglite") {
    t("the demo partner is created once, on the first start of an empty embedded database", async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "mediagate-demo-"));
      try {
        const first = await boot({ DATA_DIR: dataDir });
        const key = await createDemoPartnerIfEmpty(first.kernel);
        assert.ok(key?.startsWith("svc_partner_"));
        assert.is((await first.call("/me", key!)).body.credits_remaining, 10_000);
        await first.kernel.stop();
        const second = await boot({ DATA_DIR: dataDir });
        assert.is(await createDemoPartnerIfEmpty(second.kernel), undefined);
        assert.is((await second.call("/me", key!)).body.credits_remaining, 10_000);
        await second.kernel.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }

  t.run();
}
