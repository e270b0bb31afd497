// Text an upstream hands us (a model's answer, a provider's error message, a transcript's words, a post's title
// from yt-dlp or a network's page) is checked like partner input before it is stored or echoed
// (docs/architecture.md invariant 9): Postgres refuses U+0000 in text and jsonb, and an unpaired surrogate in jsonb, so one NUL in a
// model's answer was a 500 for the partner who asked. Upstream text is not the partner's fault, so it is
// cleaned rather than refused: NUL and the other C0/C1 control characters (tab, line feed and carriage return
// kept) are removed, an unpaired surrogate becomes U+FFFD, and the length is capped without cutting a
// surrogate pair in half. One place for the rule; the callers choose the cap.

/** Caps for the kinds of upstream text we keep, in UTF-16 code units (String.length). */
export const UPSTREAM_TEXT_LIMITS = {
  /** A provider's error message in a log line or a job's stored error (never shown to a partner as is). */
  errorMessage: 400,
  /** A post's title or uploader name from yt-dlp or a network's page. */
  title: 500,
  /** One transcribed word. */
  word: 100,
} as const;

// C0 controls but tab (09), line feed (0A) and carriage return (0D); DEL and C1 controls (7F-9F).
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** How much of a long text is cleaned, in multiples of the cap: enough for any real text's controls. */
const LOOK_AHEAD = 8;

/** Whether `text` is already what cleanUpstreamText would make of it (below any cap). */
export function isCleanText(text: string): boolean {
  CONTROL.lastIndex = 0;
  LONE_SURROGATE.lastIndex = 0;
  return !CONTROL.test(text) && !LONE_SURROGATE.test(text);
}

/** `text` cut to at most `max` code units, never between the two halves of a surrogate pair. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/**
 * Upstream text made safe to store: control characters (but tab, LF, CR) removed, unpaired surrogates
 * replaced by U+FFFD, at most `maxChars` code units. A value that is not a string is "".
 */
export function cleanUpstreamText(value: unknown, maxChars: number): string {
  if (typeof value !== "string") return "";
  // Only the start is looked at (a title of megabytes is not walked whole), generously: cleaned before the
  // cap, so removed characters do not count; then capped at a pair boundary.
  const looked = value.length > maxChars * LOOK_AHEAD + 64 ? value.slice(0, maxChars * LOOK_AHEAD + 64) : value;
  const clean = isCleanText(looked) ? looked : looked.replace(CONTROL, "").replace(LONE_SURROGATE, "\uFFFD");
  return capText(clean, maxChars);
}

/**
 * A JSON value from upstream (a model's answer in JSON mode) with every string, keys included, cleaned by
 * cleanUpstreamText (each capped at `maxChars`): `"\u0000"` written as an escape is a NUL only once parsed.
 */
export function cleanUpstreamJson(value: unknown, maxChars: number, depth = 0): unknown {
  if (typeof value === "string") return cleanUpstreamText(value, maxChars);
  // JSON.parse of a capped answer nests only so deep; past 64 levels the rest is dropped, not walked.
  if (value === null || typeof value !== "object" || depth > 64) return typeof value === "object" ? null : value;
  if (Array.isArray(value)) return value.map((v) => cleanUpstreamJson(v, maxChars, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[cleanUpstreamText(k, maxChars)] = cleanUpstreamJson(v, maxChars, depth + 1);
  return out;
}
