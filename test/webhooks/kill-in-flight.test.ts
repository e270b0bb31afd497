// A webhook attempt is counted before it is sent (issue 46, deliverable 6), on every database backend: the real
// server (main.ts) sends an event's first attempt to a receiver that holds its response, and is SIGKILLed while
// the receiver holds it, so no outcome can have been recorded. At every reading the record counts at least the
// requests received; after the restart the delivery ends with the record counting exactly the requests sent,
// every copy the same event id and the same bytes, attempt numbers 1, 2, ... with no number sent twice.
import type { ServerResponse } from "node:http";
import pg from "pg";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { call, until } from "../helpers/restart.ts";
import { webhookReceiver } from "../helpers/webhook-receiver.ts";
import { deliveriesOf, partnerWithWebhook, webhookKillRig } from "./kill-rig.ts";

const ADMIN_TOKEN = "adm_Kq3vW8mZr1TnY6pLx0cHd4sJf9gBu2eA7oNiR5tE";

/** Counts every request; holds the response of the first one until `release()`, answers the others 200. */
function receiver() {
  const held: ServerResponse[] = [];
  let firstArrived!: () => void;
  const first = new Promise<void>((r) => (firstArrived = r));
  const endpoint = webhookReceiver((_receipt, res) => {
    if (endpoint.got.length === 1) {
      held.push(res);
      res.on("error", () => {});
      firstArrived();
    } else res.writeHead(200).end("ok");
  });
  return { ...endpoint, first };
}

for (const backend of await databaseBackends()) {
  const t = suite(`webhooks: killed while a receiver holds an attempt, on ${backend.name}`);
  const rig = webhookKillRig(t, backend, ADMIN_TOKEN, "1,1,1,1,1");
  const logs = rig.logs;

  t(
    "the record counts every request sent: at least as many at any time, exactly as many once delivered; the same bytes",
    async () => {
      const databaseUrl = rig.databaseUrl;
      const rcv = receiver();
      const url = await rcv.listen();
      try {
        const first = await rig.start();
        const key = await partnerWithWebhook(rig, first, url, { name: "Webhook kill", credits: 1_000 });
        const job = await call(first, "POST", "/api/v1/partner/generate-video", {
          key,
          body: { prompt: "A lighthouse at dusk" },
        });
        assert.is(job.status, 202, JSON.stringify(job.body));

        // The first attempt reached the receiver, which holds its answer: no outcome exists when the kill lands.
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          rcv.first,
          new Promise((_, no) => (timer = setTimeout(() => no(new Error(`no first attempt\n${logs()}`)), 120_000))),
        ]).finally(() => clearTimeout(timer));
        await first.kill();
        assert.is(rcv.got.length, 1);

        if (databaseUrl) {
          // Read straight from the database, before any restart: the attempt the kill cut short is counted.
          const client = new pg.Client({ connectionString: databaseUrl });
          await client.connect();
          try {
            const { rows } = await client.query("select attempt from webhook_deliveries");
            assert.is(rows.length, 1);
            assert.ok(rows[0].attempt >= 1, `1 request received, the record counts ${rows[0].attempt} attempts`);
            // The lease (30 s) runs out now rather than in this test's time: what a later start would find.
            await client.query(
              "update webhook_deliveries set claimed_until = now() - interval '1 second' where claimed_until is not null",
            );
          } finally {
            await client.end();
          }
        }

        const second = await rig.start();
        // At every reading: the requests received first, then the record (an attempt is counted before it is sent).
        const final = await until(
          async () => {
            const received = rcv.got.length;
            const d = await deliveriesOf(second, key);
            assert.is(d.length, 1);
            assert.ok(
              d[0]!.attempt >= received,
              `${received} requests received, the record counts ${d[0]!.attempt} attempts`,
            );
            return d[0]!;
          },
          (d) => d.status === "delivered",
          `delivered after the restart\n${logs()}`,
          120_000,
        );

        assert.is(
          final.attempt,
          rcv.got.length,
          `the record counts ${final.attempt} attempts, ${rcv.got.length} requests were received`,
        );
        assert.equal(
          rcv.got.map((g) => g.attempt),
          rcv.got.map((_, i) => i + 1),
          "attempt numbers 1, 2, ...: none sent twice",
        );
        assert.is(new Set(rcv.got.map((g) => g.id)).size, 1, "one event id");
        assert.is(new Set(rcv.got.map((g) => g.body)).size, 1, "every copy has the same bytes");
        assert.is(final.event_id, rcv.got[0]!.id);
      } finally {
        await rcv.close();
      }
    },
  );

  t.run();
}
