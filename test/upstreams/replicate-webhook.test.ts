// Replicate's webhooks verified as it documents them (Standard Webhooks; plugins/upstreams/replicate/webhook.ts):
// a completion the stand-in signs and delivers verifies and names its prediction; a forged, stale, tampered or
// otherwise signed call does not; several signatures with one genuine pass; the token is in no message.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { signStandardWebhook, standardWebhookHeaders } from "../../lib/standard-webhooks.ts";
import { replicateClient } from "../../plugins/upstreams/replicate/client.ts";
import { verifyReplicateWebhook } from "../../plugins/upstreams/replicate/webhook.ts";
import { startReplicateStandIn } from "../../testkit/index.ts";
import { webhookReceiver } from "../helpers/webhook-receiver.ts";

const t = suite("replicate webhooks");
const outbound = createOutboundGuard({ allowPrivate: true });
t.after(() => outbound.close());

const SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const OTHER_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NOW_S = 1_790_000_000;
const now = () => NOW_S * 1000;
const prediction = JSON.stringify({
  id: "ufawqhfynnddngldkgtslldrkq",
  status: "succeeded",
  output: "https://r.d/o.png",
});
const bytes = (text: string) => new TextEncoder().encode(text);

function signed(body = prediction, secret = SECRET, timestamp = NOW_S) {
  return new Headers(standardWebhookHeaders(secret, { id: "msg_2yN1kVZ3qRjpLm", timestamp, body }));
}

t("a genuine call verifies and answers the prediction's id", () => {
  assert.equal(verifyReplicateWebhook(SECRET, { headers: signed(), body: bytes(prediction) }, { now }), {
    id: "ufawqhfynnddngldkgtslldrkq",
  });
});

t("forged, stale, tampered and wrongly keyed calls answer null", () => {
  const verify = (headers: Headers, body = prediction) =>
    verifyReplicateWebhook(SECRET, { headers, body: bytes(body) }, { now });
  const forged = signed();
  forged.set("webhook-signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
  assert.is(verify(forged), null);
  assert.is(verify(signed(prediction, SECRET, NOW_S - 301)), null, "stale");
  assert.is(verify(signed(prediction, SECRET, NOW_S + 301)), null, "from the future");
  assert.is(verify(signed(), prediction.replace("succeeded", "failed")), null, "tampered");
  assert.is(verify(signed(prediction, OTHER_SECRET)), null, "another secret");
  assert.is(verify(new Headers()), null, "no headers");
  const notJson = "not json";
  assert.is(verify(signed(notJson), notJson), null, "a signed body that is no prediction");
  const noId = JSON.stringify({ status: "succeeded" });
  assert.is(verify(signed(noId), noId), null);
});

t("several signatures, one of them genuine, verify", () => {
  const headers = signed();
  const genuine = headers.get("webhook-signature")!;
  const other = signStandardWebhook(OTHER_SECRET, { id: "msg_2yN1kVZ3qRjpLm", timestamp: NOW_S, body: prediction });
  headers.set("webhook-signature", `${other} ${genuine}`);
  assert.equal(verifyReplicateWebhook(SECRET, { headers, body: bytes(prediction) }, { now }), {
    id: "ufawqhfynnddngldkgtslldrkq",
  });
});

t("the stand-in's completion webhook verifies through the client; without the secret nothing does", async () => {
  const receiver = webhookReceiver((_, res) => res.writeHead(204).end());
  const hook = await receiver.listen();
  const s = await startReplicateStandIn();
  try {
    const client = replicateClient({ baseUrl: s.url, key: s.token, outbound, webhookSecret: s.webhookSecret });
    const handle = await client.submit({
      model: "owner/model",
      input: { prompt: "x" },
      idempotencyKey: "k",
      webhookUrl: hook,
      signal: new AbortController().signal,
    });
    await s.finish(handle.id);
    await s.webhooksDelivered(1);
    const delivery = s.webhooks[0]!;
    const secret = await outbound.fetch(`${s.url}/webhooks/default/secret`, {
      headers: { authorization: `Bearer ${s.token}` },
      allowHttp: true,
    });
    assert.equal(JSON.parse(Buffer.from(secret.body).toString()), { key: s.webhookSecret });
    assert.is(delivery.status, 204);
    assert.equal(
      receiver.got.map((r) => r.id),
      [handle.id],
    );
    const request = { headers: new Headers(delivery.headers), body: bytes(delivery.body) };
    assert.equal(await client.verifyWebhook(request), { id: handle.id });
    const tampered = { ...request, body: bytes(delivery.body.replace("succeeded", "failed")) };
    assert.is(await client.verifyWebhook(tampered), null);
    const noSecret = replicateClient({ baseUrl: s.url, key: s.token, outbound });
    assert.is(await noSecret.verifyWebhook(request), null);
  } finally {
    await s.close();
    await receiver.close();
  }
});

t("the token is in no error message of a refused or failed call", async () => {
  const token = "r8_Tok3nThatMustNeverLeakAnywhere000000000";
  const s = await startReplicateStandIn({ token, fail: `bad input (key ${token})` });
  try {
    const messages: string[] = [];
    const wrong = replicateClient({ baseUrl: s.url, key: `${token}x`, outbound });
    await wrong
      .submit({ model: "o/m", input: {}, idempotencyKey: "k", signal: new AbortController().signal })
      .catch((e: Error) => messages.push(e.message));
    const client = replicateClient({ baseUrl: s.url, key: token, outbound });
    const handle = await client.submit({
      model: "o/m",
      input: {},
      idempotencyKey: "k",
      signal: new AbortController().signal,
    });
    await s.finish(handle.id);
    const polled = await client.poll(handle, new AbortController().signal);
    assert.is(polled.state, "failed");
    if (polled.state === "failed") messages.push(polled.error.message);
    assert.is(messages.length, 2);
    for (const m of messages) assert.not.ok(m.includes(token), m);
    assert.ok(messages[1]!.includes("[redacted]"));
  } finally {
    await s.close();
  }
});

t.run();
