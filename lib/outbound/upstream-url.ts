// The base URL of an upstream API as a configuration variable (TEXT_GENERATE_URL, CAPTIONS_TRANSCRIBE_URL):
// checked at boot, one rule for every adapter. Credentials belong in the adapter's key variable, where they
// are never logged, and a query or fragment would be lost when paths are appended.
import { z } from "zod";
import { isOutboundError } from "./errors.ts";

export function upstreamBaseUrl(example: string) {
  return z
    .string()
    .optional()
    .refine((text) => {
      if (text === undefined) return true;
      try {
        const url = new URL(text);
        return (
          (url.protocol === "https:" || url.protocol === "http:") &&
          !url.username &&
          !url.password &&
          !url.search &&
          !url.hash
        );
      } catch {
        return false;
      }
    }, `must be an http(s) base URL without credentials, query or fragment, e.g. ${example}`)
    .transform((text) => text?.replace(/(?<!\/)\/+$/, ""));
}

/** `text` with the key and anything shaped like an API key or a Bearer token removed: for error messages and logs. */
export function redactKey(text: string, key: string | undefined): string {
  let out = text;
  if (key) out = out.split(key).join("[redacted]");
  return out.replace(/\b(sk|key|rk)-[A-Za-z0-9_*.-]{3,}/g, "[redacted]").replace(/Bearer\s+\S+/gi, "Bearer [redacted]");
}

/** A call that got no answer, in words: the outbound guard's kind and message, or the error's own message. */
export function describeCallFailure(err: unknown): string {
  if (isOutboundError(err)) return `${err.kind}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * `": <message>"` from an OpenAI-style error answer (`{"error":{"message":...}}`), redacted before it is cut
 * so a key cut in half cannot slip past the redaction; `""` when the body holds no such message, and for
 * 401/403, whose text echoes (part of) the key.
 */
export function errorAnswerDetail(status: number, body: string, key: string | undefined, maxChars: number): string {
  if (status === 401 || status === 403) return "";
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } })?.error?.message;
    return typeof message === "string" ? `: ${redactKey(message, key).slice(0, maxChars)}` : "";
  } catch {
    return ""; // no JSON error body: the status says it
  }
}
