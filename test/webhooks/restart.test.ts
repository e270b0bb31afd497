// The delivery loop (core/webhook-delivery.ts) killed in the middle of a delivery burst, on every database
// backend: the real server (main.ts) makes video events (short 480p clips: the events are the subject, not
// the pictures) whose first attempts the receiver refuses, so every delivery waits for its retry (10 s, longer
// than the six clips take to end even on a loaded machine); retries are answered slowly, and the server is
// SIGKILLed while the receiver holds one. A new server on the same database must deliver every event: none lost, each delivery record
// marked delivered once, every copy received byte for byte the same, and the schedule continued (attempt
// numbers go on from where they were, the killed claims taken back once their lease runs out).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { databaseBackends } from "../helpers/backends.ts";
import { call, sleep, until } from "../helpers/restart.ts";
import { webhookReceiver } from "../helpers/webhook-receiver.ts";
import { deliveriesOf, partnerWithWebhook, webhookKillRig } from "./kill-rig.ts";

const ADMIN_TOKEN = "adm_6GecipIEk8yKLkEa265pt6ZYiPP8IzEOPWSMXKob";
const JOBS = 6;

function receiver() {
  let holding = 0;
  const endpoint = webhookReceiver(({ attempt }, res) => {
    // Every first attempt refused; every retry answered 2xx, slowly, so a kill can land while one is in flight.
    if (attempt === 1) res.writeHead(500).end();
    else {
      holding++;
      setTimeout(() => (holding--, res.writeHead(200).end("ok")), 400);
    }
  });
  return {
    ...endpoint,
    /** Retries received and not yet answered. */
    holding: () => holding,
  };
}

for (const backend of await databaseBackends()) {
  const t = suite(`webhooks: server killed mid-delivery on ${backend.name}`);
  const rig = webhookKillRig(t, backend, ADMIN_TOKEN, "10,3,3,3,3");
  const logs = rig.logs;

  t(
    "every event is delivered after a SIGKILL during the burst; one record each, the same bytes, the schedule continued",
    async () => {
      const rcv = receiver();
      const url = await rcv.listen();
      try {
        const first = await rig.start();
        const key = await partnerWithWebhook(rig, first, url, {
          name: "Webhook restart",
          credits: 10_000,
          limits: {
            inflight_jobs: 100,
            rate_limits: { "POST /generate-video": 1000, "GET /webhook/deliveries": 100_000 },
          },
        });
        for (let i = 0; i < JOBS; i++) {
          const res = await call(first, "POST", "/api/v1/partner/generate-video", {
            key,
            body: {
              prompt: `Clip ${i}: waves on a pier`,
              model: "beta-2-direct",
              quality: "480p",
              duration: 2,
              aspect_ratio: "16:9",
            },
          });
          assert.is(res.status, 202, JSON.stringify(res.body));
        }
        // Every event made, and its first attempt refused: all of them wait for their retry.
        await until(
          () => deliveriesOf(first, key),
          (d) => d.length === JOBS && d.every((x) => x.attempt >= 1),
          `all ${JOBS} first attempts\n${logs()}`,
        );
        // Kill while a retry is in flight (the receiver holds each for 400 ms).
        await until(
          async () => rcv.holding(),
          (n) => n >= 1,
          `a retry in flight\n${logs()}`,
          120_000,
          10,
        );
        await first.kill();
        const atKill = rcv.got.length;

        const second = await rig.start();
        const final = await until(
          () => deliveriesOf(second, key),
          (d) => d.length === JOBS && d.every((x) => x.status === "delivered"),
          `all delivered after the restart\n${logs()}`,
          120_000,
        );
        await sleep(500);

        const events = new Set(final.map((d) => d.event_id));
        assert.is(events.size, JOBS, "one delivery record per event");
        for (const id of events) {
          const copies = rcv.got.filter((g) => g.id === id);
          assert.ok(
            copies.some((g) => g.attempt >= 2),
            `event ${id} was retried and answered 2xx`,
          );
          assert.is(new Set(copies.map((g) => g.body)).size, 1, `event ${id}: every copy has the same bytes`);
          const record = final.find((d) => d.event_id === id)!;
          assert.ok(record.attempt >= 2, `event ${id}: the schedule went on (attempt ${record.attempt})`);
          // Each attempt is counted before it is sent: the attempt the kill cut short (received, its outcome
          // never recorded) is in the record too, so the record never counts fewer attempts than requests made.
          assert.ok(
            record.attempt >= copies.length,
            `event ${id}: ${copies.length} requests received, the record counts ${record.attempt} attempts`,
          );
          assert.is(
            record.attempt,
            Math.max(...copies.map((g) => g.attempt)),
            `event ${id}: the record's count is the last request's attempt number`,
          );
        }
        assert.ok(rcv.got.length > atKill, "the second server delivered");
        assert.is(rcv.got.filter((g) => g.attempt === 1).length, JOBS, "no first attempt was made again");
      } finally {
        await rcv.close();
      }
    },
  );

  t.run();
}
