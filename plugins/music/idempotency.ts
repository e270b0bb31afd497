// The Idempotency-Key contract of POST /extend-music (part 3): a key names one job per account. A retry with
// the same key and the same parameters (and, for an upload, the same file bytes) gets that job back with no
// charge; the same key with anything else is a 409. "The same parameters" is decided on the validated
// controls, so a retry that spells a default out (`"mode": "original"`) is still the same request, and
// `partner_job_id` is left out because the first request's value is kept on replay whatever a retry sends.
import { createHash } from "node:crypto";
import { ApiError } from "../../core/errors.ts";
import { MUSIC_ERRORS as E } from "./errors.ts";
import type { ExtendControls } from "./input.ts";

const KEY = /^[A-Za-z0-9_-]{8,100}$/;

export function idempotencyKeyOf(headers: Headers): string {
  const key = headers.get("idempotency-key");
  if (key === null || !KEY.test(key)) throw new ApiError(400, E.idempotencyKey);
  return key;
}

/** JSON with object keys sorted at every level, so equal values always give equal text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function requestHash(controls: ExtendControls, upload?: Uint8Array): string {
  const h = createHash("sha256").update(canonical(controls));
  h.update(upload ? `\0file:${createHash("sha256").update(upload).digest("hex")}` : "\0json");
  return h.digest("hex");
}
