// A burst of submits flows (issue 21): its jobs start while the burst is still arriving, instead of waiting
// until its last request has been answered, because job attempts run in the database's background lane
// (storage/connection-gate.ts). On both backends. Order is asserted, never a duration.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { pingPlugin } from "../helpers/ping-plugin.ts";

const BURST = 80;

const started = new Map<string, number>();
const burster = pingPlugin("burster", {
  limitPerMinute: 100_000,
  onRun: (jobId) => void started.set(jobId, performance.now()),
});

for (const backend of await databaseBackends()) {
  const t = suite(`a burst of submits on ${backend.name}`);

  t("most of its jobs start before its last request is answered", async () => {
    const tk = await createTestKernel({
      plugins: [account, burster],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
    });
    try {
      const { key } = await tk.partner({ credits: 10_000 });
      const answered: number[] = [];
      const ids = await Promise.all(
        Array.from({ length: BURST }, async () => {
          const res = await tk.request("POST", "/ping", { key, body: {} });
          answered.push(performance.now());
          assert.is(res.status, 202, JSON.stringify(res.body));
          return (res.body as { job_id: string }).job_id;
        }),
      );
      const lastAnswer = Math.max(...answered);
      const end = Date.now() + 60_000;
      while (ids.some((id) => !started.has(id)) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      assert.ok(
        ids.every((id) => started.has(id)),
        "every job started",
      );
      const early = ids.filter((id) => started.get(id)! < lastAnswer).length;
      // First come, first served, none of them did on PGlite: every job's first statement queued behind the
      // whole burst.
      assert.ok(early >= BURST / 2, `${early} of ${BURST} jobs started before the last 202`);
    } finally {
      await tk.close();
    }
  });

  t.run();
}
