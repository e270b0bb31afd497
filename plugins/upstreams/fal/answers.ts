// Reading fal's HTTP answers for what our errors may repeat: the `detail` (a string, or the model's validation
// errors as a list of {loc, msg}) and `error_type`, with the key, anything shaped like a key and every URL cut
// out, cleaned and capped.
import { cleanUpstreamText, redactKey } from "mediagate/plugin";

/** How much of fal's own words an error carries. */
const MAX_DETAIL_CHARS = 200;

/**
 * Every whitespace-delimited word holding "://" becomes "[url]". A scan, not a pattern: a URL pattern with a
 * scheme part is polynomial on long runs of letters (test/security/redos.test.ts), and this text is fal's.
 */
function withoutUrls(text: string): string {
  const parts = text.split(/(\s)/);
  return parts.map((part) => (part.includes("://") ? "[url]" : part)).join("");
}

/** fal's words made safe to keep: no key, no URL, no control characters, capped. */
export function safeText(text: string, key: string): string {
  return cleanUpstreamText(withoutUrls(redactKey(text, key)), MAX_DETAIL_CHARS);
}

export function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The `detail` of an error body in words: a string as is, a validation list as its messages joined. */
export function detailText(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  const detail = body.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    const parts = detail.map((d) => {
      if (!isObject(d)) return typeof d === "string" ? d : "";
      const loc = Array.isArray(d.loc) ? d.loc.filter((p) => typeof p === "string" || typeof p === "number") : [];
      const msg = typeof d.msg === "string" ? d.msg : "";
      return loc.length ? `${loc.join(".")}: ${msg}` : msg;
    });
    const text = parts.filter(Boolean).join("; ");
    return text || undefined;
  }
  return undefined;
}

/** `": <detail>"` of an error answer, safe to keep; "" for 401/403 (whose words may echo the key) or no detail. */
export function errorDetail(status: number, body: unknown, key: string): string {
  if (status === 401 || status === 403) return "";
  const text = detailText(body);
  return text ? `: ${safeText(text, key)}` : "";
}

/** `error_type` from the body or the X-Fal-Error-Type header, when it is a plain word. */
export function errorType(body: unknown, header: string | undefined): string | undefined {
  const value = isObject(body) && typeof body.error_type === "string" ? body.error_type : header;
  return value && /^[a-z0-9_]{1,64}$/i.test(value) ? value : undefined;
}

export { isObject };
