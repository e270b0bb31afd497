// The kernel's identifiers and secrets: request, partner and event ids, API keys. Service ids (`svc-`) are
// lib/service-ids.ts.
import { Buffer } from "node:buffer";
import { createHash, randomBytes, randomFillSync } from "node:crypto";

export const API_KEY_PREFIX = "svc_partner_";

// Request ids come from random bytes drawn 4 KB at a time: each randomBytes call is a trip to the system's
// generator (about 6 µs on the bench machine, a tenth of a GraphQL request's CPU under load, which makes two
// ids), and an id is public, so it needs the generator's bytes, not a draw of its own.
const ID_POOL = Buffer.alloc(4096);
let idPoolOffset = ID_POOL.length;

export function requestId(): string {
  if (idPoolOffset + 12 > ID_POOL.length) {
    randomFillSync(ID_POOL);
    idPoolOffset = 0;
  }
  idPoolOffset += 12;
  return `req_${ID_POOL.toString("hex", idPoolOffset - 12, idPoolOffset)}`;
}

export function partnerId(): string {
  return `prt_${randomBytes(8).toString("hex")}`;
}

export function eventId(): string {
  return `evt_${randomBytes(8).toString("hex")}`;
}

/** A new partner key: the fixed prefix and 192 random bits (docs/architecture.md "Keys": at least 128). */
export function newApiKey(): { key: string; prefix: string; hash: string } {
  const key = API_KEY_PREFIX + randomBytes(24).toString("base64url");
  return { key, prefix: apiKeyPrefix(key), hash: hashApiKey(key) };
}

/** `svc_partner_` plus the first 8 characters after it (docs/architecture.md "Keys"). */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 8);
}

// Keys carry 192 random bits, so a fast unsalted hash is enough: there is nothing to brute-force, and the
// hash must be cheap because it runs on every request before the cache lookup.
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString("hex");
}
