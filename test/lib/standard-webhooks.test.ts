// Standard Webhooks signatures (lib/standard-webhooks.ts): the specification's own example signs to its published
// value, and verification refuses every way a request can be forged, replayed or altered.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  newStandardWebhookSecret,
  signStandardWebhook,
  standardWebhookHeaders,
  standardWebhookKey,
  verifyStandardWebhook,
} from "../../lib/standard-webhooks.ts";

const t = suite("standard webhooks");

// The example of the Standard Webhooks reference libraries' tests.
const SPEC = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const at = (seconds: number) => () => seconds * 1000;

t("the specification's example signs to its published signature and verifies", () => {
  assert.is(signStandardWebhook(SPEC.secret, SPEC), SPEC.signature);
  const headers = new Headers(standardWebhookHeaders(SPEC.secret, SPEC));
  assert.ok(verifyStandardWebhook(SPEC.secret, { headers, body: SPEC.body }, { now: at(SPEC.timestamp) }));
  assert.ok(
    verifyStandardWebhook(
      SPEC.secret,
      { headers, body: new TextEncoder().encode(SPEC.body) },
      { now: at(SPEC.timestamp) },
    ),
  );
});

t("stale or future timestamps beyond five minutes are refused, within them accepted", () => {
  const headers = new Headers(standardWebhookHeaders(SPEC.secret, SPEC));
  const check = (now: number) => verifyStandardWebhook(SPEC.secret, { headers, body: SPEC.body }, { now: at(now) });
  assert.ok(check(SPEC.timestamp + 300));
  assert.ok(check(SPEC.timestamp - 300));
  assert.not.ok(check(SPEC.timestamp + 301));
  assert.not.ok(check(SPEC.timestamp - 301));
});

t("a tampered body, another id or timestamp, another secret or a missing header is refused", () => {
  const now = { now: at(SPEC.timestamp) };
  const good = standardWebhookHeaders(SPEC.secret, SPEC);
  const verify = (headers: Record<string, string>, body = SPEC.body, secret = SPEC.secret) =>
    verifyStandardWebhook(secret, { headers: new Headers(headers), body }, now);
  assert.ok(verify(good));
  assert.not.ok(verify(good, '{"test": 2432232315}'));
  assert.not.ok(verify({ ...good, "webhook-id": "msg_other" }));
  assert.not.ok(verify({ ...good, "webhook-timestamp": String(SPEC.timestamp + 1) }));
  assert.not.ok(verify(good, SPEC.body, newStandardWebhookSecret()));
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const { [name]: _, ...without } = good;
    assert.not.ok(verify(without), `without ${name}`);
  }
  assert.not.ok(verify({ ...good, "webhook-timestamp": "1614265330.5" }));
  assert.not.ok(verify(good, SPEC.body, "whsec_not base64!"));
});

t("any one of several space-separated v1 signatures may match; other versions are skipped", () => {
  const now = { now: at(SPEC.timestamp) };
  const good = standardWebhookHeaders(SPEC.secret, SPEC);
  const forged = signStandardWebhook(newStandardWebhookSecret(), SPEC);
  const withSignatures = (value: string) =>
    verifyStandardWebhook(
      SPEC.secret,
      { headers: new Headers({ ...good, "webhook-signature": value }), body: SPEC.body },
      now,
    );
  assert.ok(withSignatures(`${forged} ${SPEC.signature}`));
  assert.ok(withSignatures(`v1a,${SPEC.signature.slice(3)} ${SPEC.signature}`));
  assert.not.ok(withSignatures(forged));
  assert.not.ok(withSignatures(`v2,${SPEC.signature.slice(3)}`));
  assert.not.ok(withSignatures(SPEC.signature.slice(3)));
});

t("secrets: fresh ones are whsec_ base64 of 24 bytes; the prefix is optional", () => {
  const secret = newStandardWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  assert.is(standardWebhookKey(secret)!.length, 24);
  assert.equal(standardWebhookKey(SPEC.secret), standardWebhookKey(SPEC.secret.slice(6)));
  assert.is(standardWebhookKey("whsec_"), null);
  assert.throws(() => signStandardWebhook("whsec_%%%", SPEC));
});

t.run();
