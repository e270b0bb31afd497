// The syntactic half of the outbound-URL guard: synchronous, no DNS, cheap enough to run while validating a
// request before any charge (docs/architecture.md invariant 2). It is stricter than WHATWG URL parsing on purpose: the URL
// parser silently rewrites hosts (`0x7f.1` and `2130706433` become 127.0.0.1, `exa%6Dple.com` becomes
// example.com, tabs and newlines vanish, `https:///h` and `https:h` gain slashes, a backslash becomes a slash),
// so the raw text is checked as well and must already be in the form the parser would produce.
import { classifyAddress, isIpLiteral, parseIPv4 } from "./address.ts";

export const DEFAULT_MAX_URL_LENGTH = 4096;
export const MAX_HOSTNAME_LENGTH = 253;
export const MAX_LABEL_LENGTH = 63;

export interface CheckUrlOptions {
  /** ALLOW_PRIVATE_URLS (development only): http allowed, private addresses and single-label names allowed. */
  allowPrivate?: boolean;
  /** Longest accepted URL text, in characters (default 4096). */
  maxUrlLength?: number;
  /**
   * Plain http is accepted too, for a field the spec lets be http (the Script Runner's character image URL);
   * every other rule, private addresses included, still holds.
   */
  allowHttp?: boolean;
}

export type CheckUrlResult = { ok: true; url: URL } | { ok: false; kind: "invalid_url" | "not_public"; reason: string };

// Names that never denote a public host (RFC 6761, RFC 6762, RFC 8375, RFC 9476, common private suffixes).
const SPECIAL_NAMES = [
  "localhost",
  "local",
  "internal",
  "intranet",
  "lan",
  "home",
  "corp",
  "private",
  "onion",
  "invalid",
  "test",
  "example",
  "alt",
  "arpa",
];

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;

function invalid(reason: string): CheckUrlResult {
  return { ok: false, kind: "invalid_url", reason };
}

function notPublic(reason: string): CheckUrlResult {
  return { ok: false, kind: "not_public", reason };
}

/**
 * Checks a URL text against the outbound rules without any network access. Accepted: `https://host[:port]/...`
 * written in printable ASCII, no userinfo (not even an empty `@`), no percent-encoding or backslash in the
 * authority, a lowercase-insensitive LDH hostname (underscores tolerated) of at most 253 characters with
 * labels of 1 to 63, no trailing dot, no IDN (`xn--`) label, at least two labels, not a special-use name, or
 * an IP literal that is public (IPv4 only in plain dotted decimal). DNS is checked later by resolvePublic and
 * again, binding, when the connection is made.
 */
export function checkUrl(text: unknown, opts: CheckUrlOptions = {}): CheckUrlResult {
  const allowPrivate = opts.allowPrivate === true;
  const maxLength = opts.maxUrlLength ?? DEFAULT_MAX_URL_LENGTH;
  if (typeof text !== "string" || text === "") return invalid("empty or not a string");
  if (text.length > maxLength) return invalid(`longer than ${maxLength} characters`);
  // RFC 3986 URLs are ASCII; whitespace and controls would be stripped or rewritten by the URL parser.
  if (!PRINTABLE_ASCII.test(text)) return invalid("non-ASCII, whitespace or control characters");
  if (text.includes("\\")) return invalid("backslash");

  const raw = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)/.exec(text);
  if (!raw) return invalid("not an absolute URL of the form scheme://host/...");
  const scheme = raw[1]!.toLowerCase();
  if (scheme !== "https" && !(scheme === "http" && (allowPrivate || opts.allowHttp === true)))
    return invalid(`scheme ${scheme}: not allowed`);
  const authority = raw[2]!;
  if (authority.includes("@")) return invalid("userinfo");
  if (authority.includes("%")) return invalid("percent-encoding in the host");

  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return invalid("unparseable");
  }
  if (url.username !== "" || url.password !== "") return invalid("userinfo");
  if (url.protocol !== `${scheme}:`) return invalid("scheme changed by parsing");

  // Split the raw authority into host and port, the way the URL parser will.
  let rawHost: string;
  let rawPort: string;
  if (authority.startsWith("[")) {
    const end = authority.indexOf("]");
    if (end < 0) return invalid("unterminated IPv6 literal");
    rawHost = authority.slice(0, end + 1);
    rawPort = authority.slice(end + 1);
  } else {
    const colon = authority.indexOf(":");
    rawHost = colon < 0 ? authority : authority.slice(0, colon);
    rawPort = colon < 0 ? "" : authority.slice(colon);
  }
  if (rawPort !== "" && !/^:\d{1,5}$/.test(rawPort)) return invalid("bad port");
  if (url.port === "0") return invalid("port 0");

  const host = url.hostname;
  if (host === "") return invalid("no host");

  if (host.startsWith("[")) {
    // IPv6 literal: any spelling is fine, the parsed address is what is checked.
    if (!rawHost.startsWith("[")) return invalid("host changed by parsing");
    const cls = classifyAddress(host);
    if (cls !== null && !allowPrivate) return notPublic(`IPv6 address: ${cls}`);
    return { ok: true, url };
  }

  if (parseIPv4(host)) {
    // The parser turns decimal, octal, hex and shorthand forms into dotted decimal; report the address first.
    const cls = classifyAddress(host);
    if (cls !== null && !allowPrivate) return notPublic(`IPv4 address: ${cls}`);
    if (rawHost !== host) return invalid("IPv4 address not in dotted-decimal form");
    return { ok: true, url };
  }
  if (isIpLiteral(host)) return invalid("unexpected address form");

  if (rawHost.toLowerCase() !== host) return invalid("host changed by parsing");
  if (host.length > MAX_HOSTNAME_LENGTH) return invalid(`hostname longer than ${MAX_HOSTNAME_LENGTH} characters`);
  if (host.endsWith(".")) return invalid("trailing dot in the hostname");
  const labels = host.split(".");
  for (const label of labels) {
    if (label.length === 0) return invalid("empty label");
    if (label.length > MAX_LABEL_LENGTH) return invalid(`label longer than ${MAX_LABEL_LENGTH} characters`);
    if (!LABEL.test(label)) return invalid("label with characters outside letters, digits, hyphen, underscore");
    // An A-label is the ASCII encoding of a Unicode (IDN) label: the spec wants ASCII hostnames, so it is refused.
    if (label.startsWith("xn--")) return invalid("IDN (punycode) label");
  }
  if (/^\d+$/.test(labels[labels.length - 1]!)) return invalid("numeric top-level label");
  if (!allowPrivate) {
    if (labels.length < 2) return notPublic("single-label hostname");
    const tld = labels[labels.length - 1]!;
    if (SPECIAL_NAMES.includes(tld)) return notPublic(`special-use name .${tld}`);
  }
  return { ok: true, url };
}
