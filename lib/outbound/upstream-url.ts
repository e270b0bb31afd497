// The base URL of an upstream API as a configuration variable (TEXT_GENERATE_URL, CAPTIONS_TRANSCRIBE_URL):
// checked at boot, one rule for every adapter. Credentials belong in the adapter's key variable, where they
// are never logged, and a query or fragment would be lost when paths are appended.
import { z } from "zod";

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
