// Standard Webhooks (standardwebhooks.com; Replicate signs its webhooks this way, and issue 40 wants our own
// webhooks signed the same way): three headers, `webhook-id`, `webhook-timestamp` (seconds since the epoch)
// and `webhook-signature` (space-separated `v1,<base64>` entries, any of which may match, so a sender can
// rotate its secret); the signed content is `<id>.<timestamp>.<raw body>`, HMAC-SHA256 keyed with the
// base64 part of a `whsec_...` secret. A receiver refuses a timestamp more than five minutes away from its
// clock (replays) and compares in constant time. Only the symmetric `v1` scheme is implemented; other
// versions' entries are skipped, as the specification asks.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const STANDARD_WEBHOOK_HEADERS = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature",
} as const;

/** How far a timestamp may be from the receiver's clock, either way, in seconds. */
export const STANDARD_WEBHOOK_TOLERANCE_S = 5 * 60;

const SECRET_PREFIX = "whsec_";
/** A webhook id and a signature header are short; anything longer is not worth hashing. */
const MAX_ID_CHARS = 256;
const MAX_SIGNATURE_HEADER_CHARS = 4096;

/** A fresh `whsec_...` secret (24 random bytes, as the reference libraries make them). */
export function newStandardWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString("base64");
}

/** The HMAC key of a `whsec_...` secret (the prefix is optional), or null when it is not base64. */
export function standardWebhookKey(secret: string): Buffer | null {
  const text = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null;
  const key = Buffer.from(text, "base64");
  return key.length === 0 ? null : key;
}

export interface StandardWebhookMessage {
  id: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** The raw body, exactly as sent. */
  body: string | Uint8Array;
}

function mac(key: Buffer, message: StandardWebhookMessage): Buffer {
  return createHmac("sha256", key)
    .update(`${message.id}.${message.timestamp}.`)
    .update(typeof message.body === "string" ? Buffer.from(message.body) : message.body)
    .digest();
}

/** One `v1,<base64>` signature entry. Throws when the secret is not a valid `whsec_...` value. */
export function signStandardWebhook(secret: string, message: StandardWebhookMessage): string {
  const key = standardWebhookKey(secret);
  if (!key) throw new Error("the webhook signing secret is not a whsec_ base64 value");
  return `v1,${mac(key, message).toString("base64")}`;
}

/** The three headers a sender adds (lowercase names). */
export function standardWebhookHeaders(secret: string, message: StandardWebhookMessage): Record<string, string> {
  return {
    [STANDARD_WEBHOOK_HEADERS.id]: message.id,
    [STANDARD_WEBHOOK_HEADERS.timestamp]: String(message.timestamp),
    [STANDARD_WEBHOOK_HEADERS.signature]: signStandardWebhook(secret, message),
  };
}

export interface VerifyStandardWebhookOptions {
  /** The receiver's clock in ms (tests inject one); default Date.now. */
  now?: () => number;
  /** Default STANDARD_WEBHOOK_TOLERANCE_S. */
  toleranceS?: number;
}

/**
 * Whether a request carries a genuine, fresh signature of its body under `secret`. False for a missing or
 * malformed header, a stale or future timestamp, a tampered body, another secret, or a secret that is not
 * `whsec_` base64. Never throws.
 */
export function verifyStandardWebhook(
  secret: string,
  request: { headers: { get(name: string): string | null }; body: string | Uint8Array },
  options: VerifyStandardWebhookOptions = {},
): boolean {
  const key = standardWebhookKey(secret);
  const id = request.headers.get(STANDARD_WEBHOOK_HEADERS.id);
  const timestampText = request.headers.get(STANDARD_WEBHOOK_HEADERS.timestamp);
  const signatures = request.headers.get(STANDARD_WEBHOOK_HEADERS.signature);
  if (!key || !id || !timestampText || !signatures) return false;
  if (id.length > MAX_ID_CHARS || signatures.length > MAX_SIGNATURE_HEADER_CHARS) return false;
  if (!/^\d{1,12}$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  const nowS = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowS - timestamp) > (options.toleranceS ?? STANDARD_WEBHOOK_TOLERANCE_S)) return false;
  const expected = mac(key, { id, timestamp, body: request.body });
  let ok = false;
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const given = Buffer.from(entry.slice(comma + 1), "base64");
    // Every entry is compared (no early exit), each in constant time.
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
