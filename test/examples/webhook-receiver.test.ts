// examples/webhook-receiver.ts on its own: the signature check over the raw body (HMAC-SHA256 of
// "<t>.<body>", 300 s either way), duplicate event ids acknowledged but processed once, and a real HTTP
// round trip on 127.0.0.1. (test/webhooks/webhooks.test.ts runs it against the server's real sender.)
import { createHmac } from "node:crypto";
import type { IncomingHttpHeaders, Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  createReceiver,
  type ReceivedEvent,
  type ReceiverOptions,
  signPayload,
  verifySignature,
} from "../../examples/webhook-receiver.ts";

const SECRET = "whsec_test_0123456789abcdef";
const NOW = 1_790_000_000;
const BODY = JSON.stringify({
  id: "evt_0123456789abcdef",
  event: "video.completed",
  created_at: NOW,
  data: { job_id: "job_1", status: "completed" },
});

const v = suite("examples/webhook-receiver: verifySignature");

v("signPayload is t=<t>,v1=<lowercase hex HMAC-SHA256 over '<t>.<raw body>'>", () => {
  const mac = createHmac("sha256", SECRET).update(`${NOW}.${BODY}`).digest("hex");
  assert.is(signPayload(BODY, SECRET, NOW), `t=${NOW},v1=${mac}`);
  assert.is(
    signPayload(new TextEncoder().encode(BODY), SECRET, NOW),
    `t=${NOW},v1=${mac}`,
    "bytes and string sign alike",
  );
});

v("a valid signature is accepted, over a string or the raw bytes", () => {
  const header = signPayload(BODY, SECRET, NOW);
  assert.equal(verifySignature(BODY, header, SECRET, NOW), { ok: true, t: NOW });
  assert.equal(verifySignature(new TextEncoder().encode(BODY), header, SECRET, NOW + 10), { ok: true, t: NOW });
  assert.equal(
    verifySignature(Buffer.from(BODY), header, SECRET, NOW - 300),
    { ok: true, t: NOW },
    "300 s is inside the window",
  );
});

v("non-ASCII bodies are verified over their UTF-8 bytes", () => {
  const body = JSON.stringify({
    id: "evt_00000000000000e1",
    event: "webhook.test",
    created_at: NOW,
    data: { note: "café ☕" },
  });
  assert.equal(verifySignature(Buffer.from(body, "utf8"), signPayload(body, SECRET, NOW), SECRET, NOW), {
    ok: true,
    t: NOW,
  });
});

v("a tampered body is rejected, even one that parses to the same JSON", () => {
  const header = signPayload(BODY, SECRET, NOW);
  assert.equal(verifySignature(BODY.replace("completed", "failed"), header, SECRET, NOW), {
    ok: false,
    reason: "signature mismatch",
  });
  assert.equal(verifySignature(`${BODY}\n`, header, SECRET, NOW), { ok: false, reason: "signature mismatch" });
  const reserialized = JSON.stringify(JSON.parse(BODY), null, 2);
  assert.equal(verifySignature(reserialized, header, SECRET, NOW), { ok: false, reason: "signature mismatch" });
});

v("a signature made with another secret is rejected", () => {
  assert.equal(verifySignature(BODY, signPayload(BODY, "whsec_other", NOW), SECRET, NOW), {
    ok: false,
    reason: "signature mismatch",
  });
});

v("a signature whose timestamp differs from the signed one is rejected", () => {
  const v1 = signPayload(BODY, SECRET, NOW).split("v1=")[1];
  assert.equal(verifySignature(BODY, `t=${NOW + 1},v1=${v1}`, SECRET, NOW), {
    ok: false,
    reason: "signature mismatch",
  });
});

v("malformed headers are rejected without throwing", () => {
  const good = signPayload(BODY, SECRET, NOW);
  const v1 = good.split("v1=")[1]!;
  for (const header of [
    "garbage",
    `t=${NOW}`,
    `v1=${v1}`,
    `t=abc,v1=${v1}`,
    `t=${NOW},v1=zz`,
    `t=${NOW},v1=${v1.slice(0, 62)}`, // short MAC: timingSafeEqual would throw on the length
    `t=${NOW},v1=${v1}00`,
    `t=${NOW},t=${NOW},v1=${v1}`,
    `t=-${NOW},v1=${v1}`,
    `t=${NOW};v1=${v1}`,
  ]) {
    assert.equal(verifySignature(BODY, header, SECRET, NOW), { ok: false, reason: "malformed signature" }, header);
  }
});

v("a missing or empty header is rejected", () => {
  assert.equal(verifySignature(BODY, undefined, SECRET, NOW), { ok: false, reason: "missing signature" });
  assert.equal(verifySignature(BODY, "", SECRET, NOW), { ok: false, reason: "missing signature" });
});

v("a timestamp older than 300 s is rejected, even with a correct MAC", () => {
  const t = NOW - 301;
  assert.equal(verifySignature(BODY, signPayload(BODY, SECRET, t), SECRET, NOW), {
    ok: false,
    reason: "timestamp too old",
  });
});

v("a timestamp more than 300 s in the future is rejected", () => {
  const t = NOW + 301;
  assert.equal(verifySignature(BODY, signPayload(BODY, SECRET, t), SECRET, NOW), {
    ok: false,
    reason: "timestamp in the future",
  });
  assert.equal(verifySignature(BODY, signPayload(BODY, SECRET, NOW + 300), SECRET, NOW), { ok: true, t: NOW + 300 });
});

v("the default clock is the real one", () => {
  const now = Math.floor(Date.now() / 1000);
  assert.is(verifySignature(BODY, signPayload(BODY, SECRET, now), SECRET).ok, true);
  assert.is(verifySignature(BODY, signPayload(BODY, SECRET, now - 3600), SECRET).ok, false);
});

v("with several v1 values one matching is enough (secret rotation); unknown keys are ignored", () => {
  const ours = signPayload(BODY, SECRET, NOW).split("v1=")[1];
  const theirs = signPayload(BODY, "whsec_old", NOW).split("v1=")[1];
  assert.equal(verifySignature(BODY, `t=${NOW},v1=${theirs},v1=${ours}`, SECRET, NOW), { ok: true, t: NOW });
  assert.equal(verifySignature(BODY, `t=${NOW}, v1=${ours}, v0=whatever`, SECRET, NOW), { ok: true, t: NOW });
  assert.equal(verifySignature(BODY, `t=${NOW},v1=${theirs}`, SECRET, NOW), {
    ok: false,
    reason: "signature mismatch",
  });
});

v.run();

// The server: a real node:http listener on 127.0.0.1, driven with fetch.
const s = suite("examples/webhook-receiver: createReceiver");

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A receiver of SECRET and `options` listening on 127.0.0.1 while `use` runs with its URL; stopped after. */
async function withReceiver(options: Omit<ReceiverOptions, "secret">, use: (url: string) => Promise<void>) {
  const server = createReceiver({ secret: SECRET, ...options });
  try {
    await use(await listen(server));
  } finally {
    await stop(server);
  }
}

function envelope(id: string, event = "video.completed"): string {
  return JSON.stringify({ id, event, created_at: NOW, data: { job_id: `job_${id}`, status: "completed" } });
}

function post(url: string, body: string, signature: string | undefined, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { "content-type": "application/json", ...extra };
  if (signature !== undefined) headers["x-service-signature"] = signature;
  return fetch(url, { method: "POST", body, headers });
}

const unixNow = () => Math.floor(Date.now() / 1000);

/** POSTs `body` signed with SECRET at `at` (default now); the answer's status. */
async function signedPost(url: string, body: string, at = unixNow(), extra: Record<string, string> = {}) {
  return (await post(url, body, signPayload(body, SECRET, at), extra)).status;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(check(), what);
}

s("round trip: a signed event is answered 200 and handed to onEvent with the parsed envelope and headers", async () => {
  const got: Array<{ event: ReceivedEvent; headers: IncomingHttpHeaders }> = [];
  await withReceiver({ onEvent: (event, headers) => void got.push({ event, headers }) }, async (url) => {
    const body = envelope("evt_00000000000000a1");
    const status = await signedPost(url, body, unixNow(), {
      "x-service-event": "video.completed",
      "x-service-event-id": "evt_00000000000000a1",
      "x-service-delivery-attempt": "1",
    });
    assert.is(status, 200);
    await until(() => got.length === 1, "onEvent called");
    assert.equal(got[0]!.event, JSON.parse(body));
    assert.is(got[0]!.headers["x-service-event"], "video.completed");
    assert.is(got[0]!.headers["x-service-delivery-attempt"], "1");
  });
});

s("a duplicate event id is acknowledged with 200 but onEvent runs once", async () => {
  const ids: string[] = [];
  await withReceiver({ onEvent: (e) => void ids.push(e.id) }, async (url) => {
    const body = envelope("evt_00000000000000d1");
    const now = unixNow();
    assert.is(await signedPost(url, body, now, { "x-service-delivery-attempt": "1" }), 200);
    // The retry: same body byte for byte, fresh timestamp and attempt number.
    assert.is(await signedPost(url, body, now + 1, { "x-service-delivery-attempt": "2" }), 200);
    assert.is(await signedPost(url, envelope("evt_00000000000000d2"), now), 200);
    await until(() => ids.length >= 2, "both events processed");
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(ids, ["evt_00000000000000d1", "evt_00000000000000d2"]);
  });
});

s("forged, stale, future, malformed and unsigned requests get 400 and never reach onEvent", async () => {
  const ids: string[] = [];
  await withReceiver({ onEvent: (e) => void ids.push(e.id) }, async (url) => {
    const body = envelope("evt_00000000000000f1");
    const now = unixNow();
    const cases: Array<[string, string, string | undefined, string]> = [
      ["tampered body", body.replace("completed", "failed"), signPayload(body, SECRET, now), "signature mismatch"],
      ["wrong secret", body, signPayload(body, "whsec_other", now), "signature mismatch"],
      ["old timestamp", body, signPayload(body, SECRET, now - 400), "timestamp too old"],
      ["future timestamp", body, signPayload(body, SECRET, now + 400), "timestamp in the future"],
      ["malformed header", body, "t=1,v1=zz", "malformed signature"],
      ["missing header", body, undefined, "missing signature"],
    ];
    for (const [what, sent, signature, reason] of cases) {
      const res = await post(url, sent, signature);
      assert.is(res.status, 400, what);
      assert.is(await res.text(), reason, what);
    }
    // A signed body that is not an event envelope.
    assert.is(await signedPost(url, "not json", now), 400);
    assert.is(await signedPost(url, JSON.stringify({ event: "video.completed", data: {} }), now), 400);
    // The id is taken from the signed body, so a rejected forgery did not burn it: the genuine event still lands.
    assert.is(await signedPost(url, body, now), 200);
    await until(() => ids.length === 1, "the genuine event processed");
    assert.equal(ids, ["evt_00000000000000f1"]);
  });
});

s("only POST is accepted; oversized bodies are refused; a failing handler does not change the answer", async () => {
  let calls = 0;
  const errors: unknown[] = [];
  const originalError = console.error;
  console.error = (...args: unknown[]) => void errors.push(args);
  const onEvent = () => {
    calls++;
    throw new Error("handler down");
  };
  try {
    await withReceiver({ onEvent }, async (url) => {
      const get = await fetch(url);
      assert.is(get.status, 405);
      assert.is(get.headers.get("allow"), "POST");
      assert.is(await signedPost(url, "x".repeat(1024 * 1024 + 1)), 413);
      assert.is(await signedPost(url, envelope("evt_00000000000000e2")), 200);
      await until(() => errors.length === 1, "handler error logged");
      assert.is(calls, 1);
    });
  } finally {
    console.error = originalError;
  }
});

s("the duplicate memory is bounded: the oldest id is forgotten first", async () => {
  const ids: string[] = [];
  await withReceiver({ remember: 2, onEvent: (e) => void ids.push(e.id) }, async (url) => {
    const now = unixNow();
    for (const n of [1, 2, 3, 3, 1]) assert.is(await signedPost(url, envelope(`evt_000000000000000${n}`), now), 200);
    await until(() => ids.length === 4, "four events processed");
    assert.equal(ids, ["evt_0000000000000001", "evt_0000000000000002", "evt_0000000000000003", "evt_0000000000000001"]);
  });
});

s.run();
