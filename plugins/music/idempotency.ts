// The Idempotency-Key contract of POST /extend-music (part 3): a key names one job per account. A retry with
// the same key and the same parameters (and, for an upload, the same file bytes) gets that job back with no
// charge; the same key with anything else is a 409. "The same parameters" is decided on the validated
// controls, so a retry that spells a default out (`"mode": "original"`) is still the same request, and
// `partner_job_id` is left out because the first request's value is kept on replay whatever a retry sends.
import { createHash } from "node:crypto";
import { MUSIC_ERRORS } from "./errors.ts";
import type { ExtendControls } from "./input.ts";

/** The header and its rule, checked by the kernel before the body is read (OperationDeclaration.requiredHeaders). */
export const IDEMPOTENCY_HEADER = {
  "idempotency-key": { pattern: /^[A-Za-z0-9_-]{8,100}$/, message: MUSIC_ERRORS.idempotencyKey },
} as const;

/** The key of a request that passed the header rule. */
export const idempotencyKeyOf = (headers: Headers): string => headers.get("idempotency-key")!;

/** JSON with object keys sorted at every level, so equal values always give equal text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Hashing an upload of up to 95 MB runs off the event loop (WebCrypto digests on the thread pool). */
export async function requestHash(controls: ExtendControls, upload?: Uint8Array): Promise<string> {
  const file = upload
    ? Buffer.from(await crypto.subtle.digest("SHA-256", upload as Uint8Array<ArrayBuffer>)).toString("hex")
    : null;
  return createHash("sha256")
    .update(canonical(controls))
    .update(file ? `\0file:${file}` : "\0json")
    .digest("hex");
}
