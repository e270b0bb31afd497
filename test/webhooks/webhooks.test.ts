// Webhooks end to end on every database backend: settings, events made when a job ends, signed delivery
// with retries to a receiver on 127.0.0.1 (ALLOW_PRIVATE_URLS=1, retry delays of 1 s), the test send, the
// delivery records; and the guard refusing private URLs when the switch is off.
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { JobFailure, type JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { createReceiver, signPayload, verifySignature } from "../../examples/webhook-receiver.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import account from "../../plugins/account/index.ts";
import { WEBHOOK_ERRORS } from "../../plugins/webhooks/errors.ts";
import webhooks from "../../plugins/webhooks/index.ts";
import { createTestKernel, type TestKernel, type TestKernelOptions } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

// A job kind that emits video-like events; its status fields are the event's `data`.
const clip: JobKindDeclaration<{ fail: boolean }> = {
  ...queuedThen("completed", "failed"),
  failError: "Video generation failed.",
  retries: 0,
  events: {
    success: "video.completed",
    failure: "video.failed",
    async data(trx, job) {
      const row = await trx
        .selectFrom("jobs")
        .select(["id", "partner_job_id", "state", "credits_used", "credits_refunded", "error"])
        .where("id", "=", job.jobId)
        .executeTakeFirstOrThrow();
      return {
        job_id: row.id,
        partner_job_id: row.partner_job_id,
        status: row.state,
        credits_used: Number(row.credits_used),
        credits_refunded: Number(row.credits_refunded),
        error: row.error,
      };
    },
  },
  async run(ctx) {
    if (ctx.input.fail) throw new JobFailure("Video generation failed.");
    return { state: "completed" };
  },
};

const clips = definePlugin({
  name: "clips",
  rateLimits: { "POST /clip": [{ limit: 1000, windowSeconds: 60 }] },
  jobs: { clip },
  requires: ["outbound"],
  operations: [
    operation({
      method: "POST",
      path: "/clip",
      status: 202,
      input: z.object({ fail: z.boolean().optional(), callback_url: z.string().optional() }),
      async handle(ctx) {
        const job = await ctx.submitJob({
          kind: "clip",
          credits: 10,
          state: "queued",
          input: { fail: ctx.input.fail === true },
          callbackUrl: ctx.input.callback_url ?? null,
        });
        return { job_id: job.jobId };
      },
    }),
  ],
});

/** A started kernel of the account, webhooks and clips plugins (`options`); `env` over retry delays of 1 s. */
const hookKernel = (options: Partial<TestKernelOptions> = {}, env: Record<string, string> = {}) =>
  createTestKernel({
    plugins: [account, webhooks, clips],
    start: true,
    ...options,
    env: { WEBHOOK_RETRY_DELAYS: "1,1,1,1,1", ...env },
  });

interface Received {
  body: string;
  headers: IncomingMessage["headers"];
}

/** A receiver answering each request with the next scripted status (the last one repeats); "hang" never answers. */
async function receiver(script: Array<number | "hang">) {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      const step = script[Math.min(got.length - 1, script.length - 1)]!;
      if (step === "hang") return;
      res.writeHead(step).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    got,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

// A ceiling for a loaded CI machine (4 test files on 2 CPUs), not an expectation: a passing wait ends at once.
const waitFor = async (check: () => Promise<boolean> | boolean, what: string, ms = 90_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

// The tests poll the delivery list far above its 30/min.
const POLLING = { limits: { rate_limits: { "GET /webhook/deliveries": 100_000 } } };

const verify = (secret: string, header: string, body: string) => {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  return !!m && createHmac("sha256", secret).update(`${m[1]}.${body}`).digest("hex") === m[2];
};

for (const backend of await databaseBackends()) {
  const t = suite(`webhooks on ${backend.name}`);
  let tk: TestKernel;
  const closers: Array<() => Promise<void>> = [];
  t.before.each(async () => {
    const databaseUrl = backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined;
    tk = await hookKernel({ databaseUrl }, { ALLOW_PRIVATE_URLS: "1" });
  });
  t.after.each(async () => {
    await tk.close();
    for (const close of closers.splice(0)) await close();
  });

  t("settings: defaults, set with a secret, omit keeps, rotate, clear", async () => {
    const { key } = await tk.partner(POLLING);
    const first = await tk.request("GET", "/webhook", { key });
    assert.equal(first.body, {
      request_id: first.body.request_id,
      url: null,
      secret: null,
      events: ["video.completed", "video.failed", "webhook.test"],
      max_attempts: 6,
      retry_delays_seconds: [1, 1, 1, 1, 1],
      signature_header: "X-Service-Signature",
    });
    const set = await tk.request("POST", "/webhook", { key, body: { url: "http://127.0.0.1:9/hook" } });
    assert.is(set.status, 200);
    assert.is(set.body.url, "http://127.0.0.1:9/hook");
    assert.match(set.body.secret, /^[0-9a-f]{64}$/);
    const kept = await tk.request("POST", "/webhook", { key, body: {} });
    assert.is(kept.body.url, set.body.url);
    assert.is(kept.body.secret, set.body.secret);
    const rotated = await tk.request("POST", "/webhook", { key, body: { rotate_secret: true } });
    assert.is(rotated.body.url, set.body.url);
    assert.is.not(rotated.body.secret, set.body.secret);
    for (const clear of [null, ""]) {
      await tk.request("POST", "/webhook", { key, body: { url: "http://127.0.0.1:9/x" } });
      const cleared = await tk.request("POST", "/webhook", { key, body: { url: clear } });
      assert.is(cleared.body.url, null);
    }
    const bad = await tk.request("POST", "/webhook", { key, body: { url: "ftp://example.com/" } });
    assert.is(bad.status, 400);
    assert.is(bad.body.error, WEBHOOK_ERRORS.notPublic);
  });

  t("500, 500, then 200: three attempts of the same bytes and id, delivered at attempt 3", async () => {
    const r = await receiver([500, 500, 200]);
    closers.push(r.close);
    const { key } = await tk.partner(POLLING);
    const { secret } = (await tk.request("POST", "/webhook", { key, body: { url: r.url } })).body;
    const sub = await tk.request("POST", "/clip", { key, body: {} });
    assert.is(sub.status, 202);
    await waitFor(() => r.got.length === 3, "three attempts");
    await waitFor(
      async () => (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.status === "delivered",
      "delivered",
    );
    const bodies = new Set(r.got.map((g) => g.body));
    assert.is(bodies.size, 1, "byte for byte");
    const envelope = JSON.parse(r.got[0]!.body);
    assert.match(envelope.id, /^evt_[0-9a-f]{16}$/);
    assert.is(envelope.event, "video.completed");
    assert.ok(Number.isInteger(envelope.created_at));
    assert.equal(envelope.data, {
      job_id: sub.body.job_id,
      partner_job_id: null,
      status: "completed",
      credits_used: 10,
      credits_refunded: 0,
      error: null,
    });
    r.got.forEach((g, i) => {
      assert.is(g.headers["x-service-event"], "video.completed");
      assert.is(g.headers["x-service-event-id"], envelope.id);
      assert.is(g.headers["x-service-delivery-attempt"], String(i + 1));
      assert.is(g.headers["content-type"], "application/json");
      assert.ok(g.headers["user-agent"]);
      assert.ok(
        verify(secret, String(g.headers["x-service-signature"]), g.body),
        "signature verifies over the raw body",
      );
    });
    const list = await tk.request("GET", `/webhook/deliveries?job_id=${sub.body.job_id}`, { key });
    const d = list.body.deliveries[0];
    assert.is(list.body.limit, 50);
    assert.is(d.status, "delivered");
    assert.is(d.attempt, 3);
    assert.is(d.max_attempts, 6);
    assert.is(d.last_status_code, 200);
    assert.is(d.event_id, envelope.id);
    assert.ok(Number.isInteger(d.delivered_at));
    assert.is(d.next_attempt_at, null);
  });

  t("a failed job sends video.failed to its callback_url, which overrides the account's URL", async () => {
    const account = await receiver([200]);
    const callback = await receiver([200]);
    closers.push(account.close, callback.close);
    const { key } = await tk.partner(POLLING);
    await tk.request("POST", "/webhook", { key, body: { url: account.url } });
    await tk.request("POST", "/clip", { key, body: { fail: true, callback_url: callback.url } });
    await waitFor(() => callback.got.length === 1, "callback delivery");
    const env = JSON.parse(callback.got[0]!.body);
    assert.is(env.event, "video.failed");
    assert.is(env.data.credits_refunded, 10);
    assert.is(env.data.error, "Video generation failed.");
    await new Promise((r) => setTimeout(r, 300));
    assert.is(account.got.length, 0);
  });

  t("six failed attempts end failed; a hanging receiver never blocks another delivery", async () => {
    const down = await receiver([503]);
    const hang = await receiver(["hang"]);
    const ok = await receiver([200]);
    closers.push(down.close, hang.close, ok.close);
    const a = await tk.partner(POLLING);
    const b = await tk.partner(POLLING);
    const c = await tk.partner(POLLING);
    await tk.request("POST", "/webhook", { key: a.key, body: { url: down.url } });
    await tk.request("POST", "/webhook", { key: b.key, body: { url: hang.url } });
    await tk.request("POST", "/webhook", { key: c.key, body: { url: ok.url } });
    await tk.request("POST", "/clip", { key: b.key, body: {} });
    await waitFor(() => hang.got.length === 1, "the hanging receiver is called");
    await tk.request("POST", "/clip", { key: c.key, body: {} });
    await tk.request("POST", "/clip", { key: a.key, body: {} });
    // Delivered while the other receiver still holds its attempt.
    await waitFor(() => ok.got.length === 1, "the healthy receiver gets its event");
    await waitFor(
      async () =>
        (await tk.request("GET", "/webhook/deliveries", { key: a.key })).body.deliveries[0]?.status === "failed",
      "failed after six attempts",
      60_000,
    );
    assert.is(down.got.length, 6);
    const d = (await tk.request("GET", "/webhook/deliveries", { key: a.key })).body.deliveries[0];
    assert.is(d.attempt, 6);
    assert.is(d.last_status_code, 503);
    assert.is(d.last_error, "Receiver answered 503");
    // The attempt is counted when it starts (its claim); its outcome comes when the 10 s are up.
    await waitFor(
      async () =>
        (await tk.request("GET", "/webhook/deliveries", { key: b.key })).body.deliveries[0]?.last_error != null,
      "the hang is a failed attempt",
      20_000,
    );
    const h = (await tk.request("GET", "/webhook/deliveries", { key: b.key })).body.deliveries[0];
    assert.is(h.last_error, "Timed out after 10 seconds");
    assert.is(h.last_status_code, null);
    assert.is(h.attempt, 1);
  });

  t("POST /webhook/test sends one signed webhook.test now and records it", async () => {
    const r = await receiver([204]);
    closers.push(r.close);
    const { key } = await tk.partner(POLLING);
    const none = await tk.request("POST", "/webhook/test", { key, body: {} });
    assert.is(none.status, 400);
    const { secret } = (await tk.request("POST", "/webhook", { key, body: { url: r.url } })).body;
    const res = await tk.request("POST", "/webhook/test", { key, body: {} });
    assert.is(res.status, 200);
    assert.equal(Object.keys(res.body).sort(), ["delivered", "error", "event_id", "request_id", "status_code", "url"]);
    assert.is(res.body.delivered, true);
    assert.is(res.body.status_code, 204);
    assert.is(res.body.error, null);
    assert.is(r.got.length, 1);
    assert.is(JSON.parse(r.got[0]!.body).event, "webhook.test");
    assert.ok(verify(secret, String(r.got[0]!.headers["x-service-signature"]), r.got[0]!.body));
    const down = await receiver([500]);
    closers.push(down.close);
    const failed = await tk.request("POST", "/webhook/test", { key, body: { url: down.url } });
    assert.equal(
      [failed.body.delivered, failed.body.status_code, failed.body.error],
      [false, 500, "Receiver answered 500"],
    );
    await new Promise((r) => setTimeout(r, 1500));
    assert.is(down.got.length, 1, "not retried");
    const list = (await tk.request("GET", "/webhook/deliveries?limit=1", { key })).body;
    assert.is(list.limit, 1);
    assert.is(list.deliveries.length, 1);
    assert.is(list.deliveries[0].event_id, failed.body.event_id);
  });

  t(
    "resend (beyond the spec): the same bytes as a new delivery, to the account's URL now; refusals change nothing",
    async () => {
      const first = await receiver([500]);
      const second = await receiver([200]);
      closers.push(first.close, second.close);
      const { key } = await tk.partner(POLLING);
      const other = await tk.partner(POLLING);
      await tk.request("POST", "/webhook", { key, body: { url: first.url } });
      const sub = await tk.request("POST", "/clip", { key, body: {} });
      await waitFor(() => first.got.length >= 1, "first attempt");
      const eventId = JSON.parse(first.got[0]!.body).id as string;
      const pending = await tk.request("POST", `/webhook/deliveries/${eventId}/resend`, { key });
      assert.equal([pending.status, pending.body.error], [409, WEBHOOK_ERRORS.stillPending]);
      await waitFor(
        async () => (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.status === "failed",
        "failed after six attempts",
        60_000,
      );
      for (const [who, id] of [
        [other.key, eventId],
        [key, "evt_0000000000000000"],
      ] as const) {
        const refused = await tk.request("POST", `/webhook/deliveries/${id}/resend`, { key: who });
        assert.equal(
          [refused.status, refused.body.error],
          [404, WEBHOOK_ERRORS.eventNotFound],
          "another account's event is not found, like a missing one",
        );
      }
      await tk.request("POST", "/webhook", { key, body: { url: second.url } });
      const res = await tk.request("POST", `/webhook/deliveries/${eventId}/resend`, { key });
      assert.is(res.status, 202);
      assert.equal(res.body, {
        request_id: res.body.request_id,
        event_id: eventId,
        event: "video.completed",
        url: second.url,
        status: "pending",
      });
      await waitFor(() => second.got.length === 1, "the resend arrives");
      assert.is(second.got[0]!.body, first.got[0]!.body, "byte for byte");
      assert.is(second.got[0]!.headers["x-service-delivery-attempt"], "1");
      await waitFor(
        async () =>
          (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.status === "delivered",
        "delivered",
      );
      const list = (await tk.request("GET", `/webhook/deliveries?job_id=${sub.body.job_id}`, { key })).body.deliveries;
      assert.equal(
        list.map((d: { status: string; url: string }) => [d.status, d.url]),
        [
          ["delivered", second.url],
          ["failed", first.url],
        ],
        "both records kept, newest first",
      );
      await tk.request("POST", "/webhook", { key, body: { url: null } });
      const again = await tk.request("POST", `/webhook/deliveries/${eventId}/resend`, { key });
      assert.is(again.status, 202, "with no account URL it goes where the event last went");
      assert.is(again.body.url, second.url);
    },
  );

  t.run();
}

// Without ALLOW_PRIVATE_URLS: a name resolving to a private address is refused when saved, and a URL
// whose DNS changed since is refused at delivery time (a failed attempt; nothing is sent).
const g = suite("webhooks: the guard on saved URLs and at delivery");
g("private answers refused at save; DNS rebinding refused at delivery", async () => {
  const answers = new Map<string, string>([
    ["hooks.example.com", "93.184.216.34"],
    ["evil.example.com", "10.0.0.7"],
  ]);
  const guard = createOutboundGuard({
    lookup: async (host) => [{ address: answers.get(host) ?? "127.0.0.1", family: 4 }],
  });
  const tk = await hookKernel({ outbound: guard });
  try {
    const { key } = await tk.partner(POLLING);
    for (const url of [
      "https://evil.example.com/hook",
      "https://127.0.0.1/hook",
      "http://hooks.example.com/hook",
      "https://user@hooks.example.com/",
    ]) {
      const res = await tk.request("POST", "/webhook", { key, body: { url } });
      assert.is(res.status, 400, url);
      assert.is(res.body.error, WEBHOOK_ERRORS.notPublic);
    }
    assert.is((await tk.request("GET", "/webhook", { key })).body.url, null, "nothing saved");
    const saved = await tk.request("POST", "/webhook", { key, body: { url: "https://hooks.example.com/hook" } });
    assert.is(saved.status, 200);
    answers.set("hooks.example.com", "192.168.1.20"); // rebinding after the save
    await tk.request("POST", "/clip", { key, body: {} });
    await waitFor(
      async () => (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.attempt >= 1,
      "first attempt",
    );
    const d = (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0];
    assert.is(d.status, "pending");
    assert.is(d.last_error, "URL is not a public https URL");
    assert.is(d.last_status_code, null);
  } finally {
    await tk.close();
  }
});
g.run();

// A restart in the middle of a retry schedule continues it: the next attempt is a delayed queue job in
// the database, not a timer in the process. (Postgres only: an in-memory PGlite does not outlive its kernel.)
const pgBackend = (await databaseBackends()).find((b) => b.name === "postgres");
if (pgBackend) {
  const r = suite("webhooks: a restart mid-schedule continues it (postgres)");
  r("attempt 1 before the restart, attempt 2 after, same id and bytes", async () => {
    const rcv = await receiver([500, 200]);
    const url = await isolatedPostgresDatabase();
    // Long enough that the second attempt cannot come before the first kernel has closed, on a loaded machine.
    const env = { ALLOW_PRIVATE_URLS: "1", WEBHOOK_RETRY_DELAYS: "6,6,6,6,6" };
    let tk = await hookKernel({ databaseUrl: url }, env);
    try {
      const { key } = await tk.partner(POLLING);
      await tk.request("POST", "/webhook", { key, body: { url: rcv.url } });
      await tk.request("POST", "/clip", { key, body: {} });
      await waitFor(() => rcv.got.length === 1, "first attempt");
      // Restart once the first attempt's outcome is recorded: a restart before that resends attempt 1 (at least
      // once), which is not the mid-schedule case this test is about.
      await waitFor(
        async () => (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.attempt === 1,
        "first attempt recorded",
      );
      await tk.close();
      assert.is(rcv.got.length, 1);
      tk = await hookKernel({ databaseUrl: url }, env);
      await waitFor(() => rcv.got.length === 2, "second attempt after the restart");
      assert.is(rcv.got[1]!.body, rcv.got[0]!.body);
      assert.is(rcv.got[1]!.headers["x-service-delivery-attempt"], "2");
      await waitFor(
        async () =>
          (await tk.request("GET", "/webhook/deliveries", { key })).body.deliveries[0]?.status === "delivered",
        "delivered",
      );
    } finally {
      await tk.close();
      await rcv.close();
    }
  });
  r.run();
}

// The example receiver against the real sender: signatures verify, stale and tampered requests are refused,
// a retried event id is acknowledged and processed once.
const ex = suite("webhooks: examples/webhook-receiver.ts");
ex("accepts the kernel's deliveries, refuses forgeries and replays, processes a duplicate once", async () => {
  const tk = await hookKernel({}, { ALLOW_PRIVATE_URLS: "1" });
  const seen: string[] = [];
  let secret = "";
  const server = createReceiver({ secret: "placeholder", onEvent: (e) => void seen.push(e.id) });
  try {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const { key } = await tk.partner(POLLING);
    secret = (await tk.request("POST", "/webhook", { key, body: { url } })).body.secret;
    server.removeAllListeners("request");
    server.on(
      "request",
      createReceiver({ secret, onEvent: (e) => void seen.push(e.id) }).listeners("request")[0] as any,
    );
    const test = await tk.request("POST", "/webhook/test", { key, body: {} });
    assert.is(test.body.delivered, true);
    const job = await tk.request("POST", "/clip", { key, body: {} });
    await waitFor(
      async () =>
        (await tk.request("GET", `/webhook/deliveries?job_id=${job.body.job_id}`, { key })).body.deliveries[0]
          ?.status === "delivered",
      "delivered",
    );
    assert.is(seen.length, 2);

    const body = JSON.stringify({ id: "evt_00000000000000aa", event: "video.completed", created_at: 1, data: {} });
    const now = Math.floor(Date.now() / 1000);
    const send = (b: string, sig: string) =>
      fetch(url, { method: "POST", body: b, headers: { "x-service-signature": sig } });
    assert.is((await send(body, signPayload(body, secret, now))).status, 200);
    assert.is((await send(body, signPayload(body, secret, now))).status, 200, "a duplicate is acknowledged");
    assert.is(seen.filter((id) => id === "evt_00000000000000aa").length, 1, "and processed once");
    assert.is((await send(`${body} `, signPayload(body, secret, now))).status, 400, "tampered body");
    assert.is((await send(body, signPayload(body, "wrong", now))).status, 400, "wrong secret");
    assert.is((await send(body, signPayload(body, secret, now - 301))).status, 400, "stale timestamp");
    assert.is((await send(body, "t=1,v1=zz")).status, 400, "malformed header");
    assert.equal(verifySignature(body, undefined, secret), { ok: false, reason: "missing signature" });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await tk.close();
  }
});
ex.run();
