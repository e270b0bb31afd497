// fal's webhook verification (plugins/upstreams/fal/webhook.ts): a webhook the fal stand-in delivers, signed as
// fal documents (ED25519 over "<request id>\n<user id>\n<timestamp>\n<hex SHA-256 of the body>", the key
// published as a JWKS), verifies and names its request; a forged signature, another key, a stale or future
// timestamp, a tampered body, a body naming another request, missing headers and an unreachable key set do not.
// The key set is kept, fetched again for a signature no kept key verifies (a rotation), at most once a minute.
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createOutboundGuard, type OutboundGuard } from "../../lib/outbound/index.ts";
import { falClient } from "../../plugins/upstreams/fal/client.ts";
import { falWebhookVerifier } from "../../plugins/upstreams/fal/webhook.ts";
import { type FalStandIn, startFalStandIn } from "../../testkit/standins/fal.ts";

const guard = createOutboundGuard({ allowPrivate: true });
const never = new AbortController().signal;
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

interface Received {
  headers: Headers;
  body: Uint8Array;
}

/** Our callback route's stand-in: keeps each webhook's headers and raw bytes, answers 200. */
async function receiver() {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      got.push({ headers, body: new Uint8Array(Buffer.concat(chunks)) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    got,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks/fal`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A guard that counts the calls made through it (the key set fetches). */
function counting(inner: OutboundGuard): OutboundGuard & { calls: number } {
  const wrapped = Object.create(inner) as OutboundGuard & { calls: number };
  wrapped.calls = 0;
  wrapped.fetch = (url, req) => {
    wrapped.calls++;
    return inner.fetch(url, req);
  };
  return wrapped;
}

const bytes = (text: string) => new TextEncoder().encode(text);

/** A request id and a body for it, as fal's webhook carries them. */
function okBody(id: string) {
  return JSON.stringify({ request_id: id, gateway_request_id: id, status: "OK", payload: { images: [] } });
}

const t = suite("fal webhook");

t.after(async () => {
  await guard.close();
});

t("a webhook the stand-in delivers verifies through the client and names the request", async () => {
  const hook = await receiver();
  const standIn = await startFalStandIn({ pace: "manual" });
  try {
    const client = falClient({ baseUrl: standIn.url, key: standIn.key, outbound: guard, jwksUrl: standIn.jwksUrl });
    const handle = await client.submit({
      model: "fal-ai/flux/dev",
      input: { prompt: "a lighthouse" },
      idempotencyKey: "job-9:0",
      webhookUrl: hook.url,
      signal: never,
    });
    await standIn.finish(handle.id);
    await standIn.webhooksDelivered(1);
    assert.is(standIn.webhooks[0]!.status, 200);
    const delivered = hook.got[0]!;
    const body = JSON.parse(new TextDecoder().decode(delivered.body));
    assert.is(body.status, "OK");
    assert.is(body.request_id, handle.id);
    assert.is(client.outputUrls(body.payload).length, 1);
    assert.equal(await client.verifyWebhook(delivered), { id: handle.id });

    // The same delivery with one byte of the body changed, or its signature changed, is refused.
    const tampered = new Uint8Array(delivered.body);
    const at = tampered.length - 2;
    tampered[at] = tampered[at]! ^ 1;
    assert.is(await client.verifyWebhook({ headers: delivered.headers, body: tampered }), null);
    const forged = new Headers(delivered.headers);
    const sig = forged.get("x-fal-webhook-signature")!;
    forged.set("x-fal-webhook-signature", (sig[0] === "a" ? "b" : "a") + sig.slice(1));
    assert.is(await client.verifyWebhook({ headers: forged, body: delivered.body }), null);
  } finally {
    await standIn.close();
    await hook.close();
  }
});

t("a failed request's webhook is an ERROR body, signed the same way", async () => {
  const hook = await receiver();
  const standIn = await startFalStandIn({ pace: "manual", fail: "field required" });
  try {
    const client = falClient({ baseUrl: standIn.url, key: standIn.key, outbound: guard, jwksUrl: standIn.jwksUrl });
    const handle = await client.submit({
      model: "fal-ai/flux/dev",
      input: {},
      idempotencyKey: "k",
      webhookUrl: hook.url,
      signal: never,
    });
    await standIn.finish(handle.id);
    await standIn.webhooksDelivered(1);
    const body = JSON.parse(new TextDecoder().decode(hook.got[0]!.body));
    assert.is(body.status, "ERROR");
    assert.is(body.error, "Invalid status code: 422");
    assert.equal(await client.verifyWebhook(hook.got[0]!), { id: handle.id });
  } finally {
    await standIn.close();
    await hook.close();
  }
});

t("with a latency the request ends by itself and its webhook arrives unasked", async () => {
  const hook = await receiver();
  const standIn = await startFalStandIn({ pace: { latencyMs: 0 }, output: "video" });
  try {
    const client = falClient({ baseUrl: standIn.url, key: standIn.key, outbound: guard, jwksUrl: standIn.jwksUrl });
    const handle = await client.submit({
      model: "fal-ai/some-app/text-to-video",
      input: { prompt: "rain", duration: "2" },
      idempotencyKey: "k",
      webhookUrl: hook.url,
      signal: never,
    });
    await standIn.webhooksDelivered(1);
    assert.equal(await client.verifyWebhook(hook.got[0]!), { id: handle.id });
    // Nothing polled before the webhook: the only call was the submit.
    assert.equal(
      standIn.requests.map((r) => r.method),
      ["POST"],
    );
    const look = await client.poll(handle, never);
    assert.is(look.state, "done");
    assert.is(client.outputUrls(look.state === "done" ? look.output : undefined).length, 1);
  } finally {
    await standIn.close();
    await hook.close();
  }
});

async function withVerifier(
  body: (
    s: FalStandIn,
    verify: ReturnType<typeof falWebhookVerifier>,
    clock: { ms: number },
    g: { calls: number },
  ) => Promise<void>,
) {
  const clock = { ms: T0 };
  const standIn = await startFalStandIn({ now: () => clock.ms });
  const g = counting(guard);
  try {
    await body(standIn, falWebhookVerifier({ outbound: g, jwksUrl: standIn.jwksUrl, now: () => clock.ms }), clock, g);
  } finally {
    await standIn.close();
  }
}

t("another key's signature, a stale or future timestamp, missing headers: null", async () => {
  await withVerifier(async (standIn, verify) => {
    const id = "4f1b6f5e-0000-4000-8000-000000000001";
    const body = okBody(id);
    assert.equal(await verify({ headers: standIn.signWebhook(id, body), body: bytes(body) }), { id });

    const other = generateKeyPairSync("ed25519").privateKey;
    assert.is(await verify({ headers: standIn.signWebhook(id, body, { privateKey: other }), body: bytes(body) }), null);

    const nowS = Math.floor(T0 / 1000);
    for (const timestampS of [nowS - 301, nowS + 301, nowS - 3600]) {
      assert.is(await verify({ headers: standIn.signWebhook(id, body, { timestampS }), body: bytes(body) }), null);
    }
    // At the edge of the window it is still fal's.
    assert.equal(
      await verify({ headers: standIn.signWebhook(id, body, { timestampS: nowS - 299 }), body: bytes(body) }),
      {
        id,
      },
    );

    for (const name of [
      "x-fal-webhook-request-id",
      "x-fal-webhook-user-id",
      "x-fal-webhook-timestamp",
      "x-fal-webhook-signature",
    ]) {
      const headers = standIn.signWebhook(id, body);
      headers.delete(name);
      assert.is(await verify({ headers, body: bytes(body) }), null, name);
    }
  });
});

t(
  "a signed header naming one request over a body naming another is refused; so is a body that is not JSON",
  async () => {
    await withVerifier(async (standIn, verify) => {
      const body = okBody("request-b");
      assert.is(await verify({ headers: standIn.signWebhook("request-a", body), body: bytes(body) }), null);
      const notJson = "not json";
      assert.is(await verify({ headers: standIn.signWebhook("request-a", notJson), body: bytes(notJson) }), null);
      // The user id is part of what is signed.
      const headers = standIn.signWebhook("request-b", body);
      headers.set("x-fal-webhook-user-id", "someone-else");
      assert.is(await verify({ headers, body: bytes(body) }), null);
    });
  },
);

t(
  "the key set is kept; an unknown key fetches it again, at most once a minute (a rotation verifies after)",
  async () => {
    await withVerifier(async (standIn, verify, clock, g) => {
      const id = "req-rotation";
      const body = okBody(id);
      const sign = () => ({ headers: standIn.signWebhook(id, body), body: bytes(body) });
      assert.equal(await verify(sign()), { id });
      assert.equal(await verify(sign()), { id });
      assert.is(g.calls, 1, "one fetch for two webhooks");

      standIn.rotateKey();
      clock.ms += 10_000;
      // Signed by a key the kept set does not hold, within a minute of the last fetch: refused without a fetch.
      assert.is(await verify(sign()), null);
      assert.is(g.calls, 1);
      // A minute on, the unknown key makes one fetch, which finds the new key.
      clock.ms += 60_000;
      assert.equal(await verify(sign()), { id });
      assert.is(g.calls, 2);
      // A key fal never published keeps failing, and fetches at most once a minute however many arrive.
      const stranger = generateKeyPairSync("ed25519").privateKey;
      for (let i = 0; i < 5; i++) {
        assert.is(
          await verify({ headers: standIn.signWebhook(id, body, { privateKey: stranger }), body: bytes(body) }),
          null,
        );
      }
      assert.is(g.calls, 2);
      // A stale timestamp is refused before any fetch.
      clock.ms += 2 * 60 * 60 * 1000;
      const stale = standIn.signWebhook(id, body, { timestampS: Math.floor(clock.ms / 1000) - 1000 });
      assert.is(await verify({ headers: stale, body: bytes(body) }), null);
      assert.is(g.calls, 2);
      // An hour after the last fetch the set is fetched again before verifying.
      assert.equal(await verify(sign()), { id });
      assert.is(g.calls, 3);
    });
  },
);

t("a key set out of reach verifies nothing", async () => {
  const standIn = await startFalStandIn();
  const verify = falWebhookVerifier({ outbound: guard, jwksUrl: "http://127.0.0.1:9/.well-known/jwks.json" });
  try {
    const body = okBody("r1");
    assert.is(await verify({ headers: standIn.signWebhook("r1", body), body: bytes(body) }), null);
  } finally {
    await standIn.close();
  }
});

t.run();
