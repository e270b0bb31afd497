// What a protocol client can tell of a call that failed, the same for every service: whether a submit that got
// no answer surely created nothing (so another route may be tried), why it got none in words that hold no URL,
// and how long a refusal asks to wait (Retry-After). The services' own words stay in each client's wire.ts.
import { isOutboundError } from "mediagate/plugin";

/** Failures of a connection that never carried the request: the work cannot have been taken. */
const NOT_CONNECTED_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** The socket's error code, from the error or its causes (fetch wraps it). */
function causeCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

/**
 * A submit that got no answer surely created nothing when it was refused before a byte went out (the URL, its
 * address), was redirected (an answer that took nothing), never connected, or timed out before an answer (the
 * protocol contract counts that as not taken). A connection lost after the request went out, or an answer too
 * large to read, may have created the work: it is accepted, and never submitted elsewhere.
 */
export function surelyNotTaken(err: unknown): boolean {
  if (!isOutboundError(err)) return false;
  if (["invalid_url", "not_public", "redirect", "timeout"].includes(err.kind)) return true;
  const code = causeCode(err);
  return err.kind === "network" && code !== undefined && NOT_CONNECTED_CODES.has(code);
}

/** Why a call got no answer, in words that hold no URL: the guard's kind and the socket's code. */
export function noAnswerReason(err: unknown): string {
  const kind = isOutboundError(err) ? err.kind : "network";
  const code = causeCode(err);
  return code ? `${kind}, ${code}` : kind;
}

/** Retry-After (delta-seconds or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date names its day and month in words; Date.parse would read "-5" as a year.
  if (!/^[a-z]{3}, /i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
