// fal's webhook verification, as its documentation gives it: four headers (X-Fal-Webhook-Request-Id, -User-Id,
// -Timestamp, -Signature); the signed message is the request id, the user id, the timestamp and the hex SHA-256
// of the raw body, joined by newlines; the signature (hex) is ED25519 over that message by one of the keys fal
// publishes as a JWKS (OKP / Ed25519, `x` base64url); the timestamp must be within five minutes of our clock.
//
// fal's webhooks name no key id, so a signature is tried against every key of the set. The set is fetched
// through the outbound guard and kept for an hour; a signature no kept key verifies fetches it once more
// (fal rotated its keys), at most once a minute, so forged requests cannot make us hammer the key URL. A
// failed fetch keeps the old set. The answer is the request id from the signed header, and only when the
// body, if it names one, names the same.
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto";
import type { OutboundGuard } from "mediagate/plugin";
import { isObject, parseJson } from "./answers.ts";
import { FAL_JWKS_URL, WEBHOOK_HEADERS, WEBHOOK_TOLERANCE_S } from "./wire.ts";

const KEYS_FRESH_MS = 60 * 60 * 1000;
const REFETCH_AT_MOST_EVERY_MS = 60 * 1000;
const JWKS_TIMEOUT_MS = 10_000;
const JWKS_MAX_BYTES = 256 * 1024;

export interface FalWebhookVerifierOptions {
  outbound: OutboundGuard;
  /** Where the key set is published (default fal's own). */
  jwksUrl?: string;
  /** The clock, in ms (tests). Default Date.now. */
  now?: () => number;
}

export type FalWebhookVerifier = (request: { headers: Headers; body: Uint8Array }) => Promise<{ id: string } | null>;

/** The ED25519 public keys of a JWKS document (keys that are not OKP/Ed25519 or do not parse are skipped). */
export function jwksKeys(doc: unknown): KeyObject[] {
  if (!isObject(doc) || !Array.isArray(doc.keys)) return [];
  const keys: KeyObject[] = [];
  for (const jwk of doc.keys) {
    if (!isObject(jwk) || jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") continue;
    try {
      // fal's set has been seen padding `x`; a JWK's base64url has none.
      keys.push(
        createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x.replace(/(?<!=)=+$/, "") }, format: "jwk" }),
      );
    } catch {
      // not a key: skipped
    }
  }
  return keys;
}

/** The message fal signs: request id, user id, timestamp and the body's hex SHA-256, one per line. */
export function falSignedMessage(requestId: string, userId: string, timestamp: string, body: Uint8Array): Buffer {
  const digest = createHash("sha256").update(body).digest("hex");
  return Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${digest}`, "utf8");
}

export function falWebhookVerifier(options: FalWebhookVerifierOptions): FalWebhookVerifier {
  const jwksUrl = options.jwksUrl ?? FAL_JWKS_URL;
  const now = options.now ?? Date.now;
  let keys: KeyObject[] = [];
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<void> | undefined;

  /** Fetches the set once (concurrent callers share the fetch); a failure keeps what was kept. */
  function refresh(): Promise<void> {
    inFlight ??= (async () => {
      attemptedAt = now();
      try {
        const res = await options.outbound.fetch(jwksUrl, {
          headers: { accept: "application/json" },
          timeoutMs: JWKS_TIMEOUT_MS,
          maxBytes: JWKS_MAX_BYTES,
          allowHttp: options.outbound.allowPrivate,
        });
        const fresh = jwksKeys(parseJson(res.body));
        if (fresh.length) {
          keys = fresh;
          fetchedAt = now();
        }
      } catch {
        // unreachable or not 2xx: the kept set stays, and the next miss tries again after a minute
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  }

  const verifiedBy = (list: KeyObject[], message: Buffer, signature: Buffer) =>
    list.some((key) => {
      try {
        return verify(null, message, key, signature);
      } catch {
        return false;
      }
    });

  return async ({ headers, body }) => {
    const requestId = headers.get(WEBHOOK_HEADERS.requestId);
    const userId = headers.get(WEBHOOK_HEADERS.userId);
    const timestamp = headers.get(WEBHOOK_HEADERS.timestamp);
    const signatureHex = headers.get(WEBHOOK_HEADERS.signature);
    if (!requestId || !userId || !timestamp || !signatureHex) return null;
    if (!/^\d{1,12}$/.test(timestamp)) return null;
    if (Math.abs(now() / 1000 - Number(timestamp)) > WEBHOOK_TOLERANCE_S) return null;
    if (!/^[0-9a-f]{128}$/i.test(signatureHex)) return null;
    const parsed = parseJson(body);
    if (!isObject(parsed)) return null;
    if (parsed.request_id !== undefined && parsed.request_id !== requestId) return null;

    const message = falSignedMessage(requestId, userId, timestamp, body);
    const signature = Buffer.from(signatureHex, "hex");
    const mayFetch = () => now() - attemptedAt >= REFETCH_AT_MOST_EVERY_MS;
    if (now() - fetchedAt >= KEYS_FRESH_MS && mayFetch()) await refresh();
    if (verifiedBy(keys, message, signature)) return { id: requestId };
    // No kept key verifies it: fal may have rotated its keys since the set was fetched.
    if (!mayFetch()) return null;
    await refresh();
    return verifiedBy(keys, message, signature) ? { id: requestId } : null;
  };
}
