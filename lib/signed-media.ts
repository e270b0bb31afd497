// Signed media URLs: `$PUBLIC_URL/media/<plugin>/<key>?expires=<unix seconds>&signature=<hex>`, a link to one
// file that stops working at `expires` (issue 39: references reach an upstream as short-lived links to our own
// media). Plain `/media` links are capability URLs that never expire and never serve a plugin's private
// folder; a signed link may name a private file, because the signature, not the name, is what grants it.
//
// The signature is HMAC-SHA256 over "<plugin>/<key>\n<expires>" (the full blob key, decoded), so it names
// one file and one expiry: another key, a later expiry or a changed digit is refused (transports/rest/media.ts
// answers 403). The HMAC key is derived from UPSTREAM_CALLBACK_SECRET (the secret the upstream callbacks
// already share between this service's processes), never from ADMIN_TOKEN; without it, from random bytes
// made once per process: links then verify only in the process that signed them (one `ROLE=all` process,
// or tests), which is why a deployment that hands references to upstreams sets the secret.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The label the signing key is derived under, so no other use of the secret can produce these signatures. */
const PURPOSE = "mediagate signed media url v1";

/** Made once per process: used when no secret is configured (see above). */
const PROCESS_SECRET = randomBytes(32).toString("hex");

/** The longest a signed link may live: a day (references are needed for minutes). */
export const MAX_SIGNED_MEDIA_TTL_SECONDS = 86_400;

const derived = new Map<string, Buffer>();
function signingKey(secret: string | undefined): Buffer {
  const s = secret || PROCESS_SECRET;
  let key = derived.get(s);
  if (!key) {
    key = createHmac("sha256", s).update(PURPOSE).digest();
    derived.set(s, key);
  }
  return key;
}

const mac = (secret: string | undefined, fullKey: string, expires: number) =>
  createHmac("sha256", signingKey(secret)).update(`${fullKey}\n${expires}`).digest();

/** The query (`expires=...&signature=...`) that grants `fullKey` (`<plugin>/<key>`) until now + ttl. */
export function signMediaKey(
  secret: string | undefined,
  fullKey: string,
  ttlSeconds: number,
  nowMs: number,
): { expires: number; signature: string; query: string } {
  if (!(Number.isInteger(ttlSeconds) && ttlSeconds > 0 && ttlSeconds <= MAX_SIGNED_MEDIA_TTL_SECONDS))
    throw new RangeError(`a signed media link lives 1 to ${MAX_SIGNED_MEDIA_TTL_SECONDS} whole seconds`);
  const expires = Math.floor(nowMs / 1000) + ttlSeconds;
  const signature = mac(secret, fullKey, expires).toString("hex");
  return { expires, signature, query: `expires=${expires}&signature=${signature}` };
}

/** Whether a URL's query carries a signature at all (then it is judged by it, never served as a plain link). */
export const isSignedMediaQuery = (params: URLSearchParams) => params.has("signature") || params.has("expires");

/** True when `params` grant `fullKey` now: a well-formed, unexpired signature made for exactly this key. */
export function verifyMediaKey(
  secret: string | undefined,
  fullKey: string,
  params: URLSearchParams,
  nowMs: number,
): boolean {
  const expiresText = params.get("expires") ?? "";
  const signature = params.get("signature") ?? "";
  if (!/^\d{1,12}$/.test(expiresText) || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expires = Number(expiresText);
  if (expires * 1000 <= nowMs) return false;
  return timingSafeEqual(Buffer.from(signature, "hex"), mac(secret, fullKey, expires));
}
