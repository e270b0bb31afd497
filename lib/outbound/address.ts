// IP address classification for the outbound-URL guard (docs/architecture.md invariant 6). An address is public only when
// it is a literal IPv4 or IPv6 address outside every range below; anything that does not parse, or carries an
// IPv6 zone id, is not public. The ranges follow the IANA special-purpose registries, plus the cloud metadata
// endpoints that sit in otherwise public space, and are deliberately wider than the registries where a range
// embeds or tunnels to another address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo are refused whole).
import { isIPv4, isIPv6 } from "node:net";

/** Why an address is not public (for logs and tests; never shown to a partner). */
export type AddressClass =
  | "invalid"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "documentation"
  | "benchmark"
  | "protocol_assignment"
  | "metadata"
  | "unique_local"
  | "site_local"
  | "ipv4_mapped"
  | "ipv4_compatible"
  | "nat64"
  | "6to4"
  | "teredo"
  | "discard"
  | "not_global_unicast";

interface Range {
  bytes: number[];
  prefix: number;
  cls: AddressClass;
}

function v4(cidr: string, cls: AddressClass): Range {
  const [addr, len] = cidr.split("/") as [string, string];
  return { bytes: parseIPv4(addr)!, prefix: Number(len), cls };
}

function v6(cidr: string, cls: AddressClass): Range {
  const [addr, len] = cidr.split("/") as [string, string];
  return { bytes: parseIPv6(addr)!, prefix: Number(len), cls };
}

// Order matters only for the reported class: the more specific range comes first.
const V4_RANGES: Range[] = [
  v4("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OpenStack, DigitalOcean... (also link-local)
  v4("100.100.100.200/32", "metadata"), // Alibaba Cloud (also CGNAT)
  v4("192.0.0.192/32", "metadata"), // Oracle Cloud (also 192.0.0/24)
  v4("168.63.129.16/32", "metadata"), // Azure WireServer: public space, host-internal service
  v4("0.0.0.0/8", "unspecified"),
  v4("10.0.0.0/8", "private"),
  v4("100.64.0.0/10", "cgnat"),
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link_local"),
  v4("172.16.0.0/12", "private"),
  v4("192.0.0.0/24", "protocol_assignment"),
  v4("192.0.2.0/24", "documentation"),
  v4("192.88.99.0/24", "reserved"), // former 6to4 relay anycast
  v4("192.168.0.0/16", "private"),
  v4("198.18.0.0/15", "benchmark"),
  v4("198.51.100.0/24", "documentation"),
  v4("203.0.113.0/24", "documentation"),
  v4("224.0.0.0/4", "multicast"),
  v4("255.255.255.255/32", "broadcast"),
  v4("240.0.0.0/4", "reserved"),
];

// IPv6: only global unicast (2000::/3) can be public at all; inside it, these ranges are refused.
const V6_RANGES: Range[] = [
  v6("::/128", "unspecified"),
  v6("::1/128", "loopback"),
  v6("::ffff:0:0/96", "ipv4_mapped"),
  v6("::/96", "ipv4_compatible"),
  v6("64:ff9b::/96", "nat64"),
  v6("64:ff9b:1::/48", "nat64"),
  v6("100::/64", "discard"),
  v6("fd00:ec2::254/128", "metadata"), // AWS IMDS over IPv6 (also unique-local)
  v6("fc00::/7", "unique_local"),
  v6("fe80::/10", "link_local"),
  v6("fec0::/10", "site_local"),
  v6("ff00::/8", "multicast"),
  v6("2001::/32", "teredo"),
  v6("2001:db8::/32", "documentation"),
  v6("2001::/23", "protocol_assignment"), // benchmarking, ORCHID, AMT, ... none serve web content
  v6("2002::/16", "6to4"),
  v6("3fff::/20", "documentation"),
  v6("5f00::/16", "reserved"), // SRv6 SIDs
];

const GLOBAL_UNICAST_V6 = v6("2000::/3", "not_global_unicast");

function inRange(bytes: readonly number[], range: Range): boolean {
  if (bytes.length !== range.bytes.length) return false;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i]! ^ range.bytes[i]!) & mask) !== 0) return false;
  }
  return true;
}

/** Strict dotted-decimal IPv4 (what DNS answers and what WHATWG URL serialises); no octal, hex or shorthand. */
export function parseIPv4(text: string): number[] | null {
  if (!isIPv4(text)) return null;
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

/** IPv6 text (without brackets or zone id) to 16 bytes; accepts the embedded dotted-quad tail. */
export function parseIPv6(text: string): number[] | null {
  if (!isIPv6(text) || text.includes("%")) return null;
  let head = text;
  const tail: number[] = [];
  const lastColon = head.lastIndexOf(":");
  if (head.slice(lastColon + 1).includes(".")) {
    const quad = parseIPv4(head.slice(lastColon + 1));
    if (!quad) return null;
    tail.push(...quad);
    head = `${head.slice(0, lastColon + 1)}0:0`; // placeholder groups, replaced below
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return null;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (all.length !== 8) return null;
  const out: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    out.push(n >> 8, n & 0xff);
  }
  if (tail.length) out.splice(12, 4, ...tail);
  return out;
}

/** Strips the brackets of a URL's IPv6 host (`[::1]` → `::1`). */
export function unbracket(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/** Whether a text is an IP literal (v4 or v6, brackets allowed); says nothing about publicness. */
export function isIpLiteral(host: string): boolean {
  const h = unbracket(host);
  return isIPv4(h) || isIPv6(h);
}

/**
 * The reason an address is not public, or null when it is public. Brackets are accepted; an IPv6 zone id
 * (`fe80::1%eth0`) or anything that is not a literal address is "invalid".
 */
export function classifyAddress(address: string): AddressClass | null {
  const text = unbracket(address);
  const four = parseIPv4(text);
  if (four) {
    for (const r of V4_RANGES) if (inRange(four, r)) return r.cls;
    return null;
  }
  const six = parseIPv6(text);
  if (!six) return "invalid";
  for (const r of V6_RANGES) if (inRange(six, r)) return r.cls;
  if (!inRange(six, GLOBAL_UNICAST_V6)) return "not_global_unicast";
  return null;
}

export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === null;
}
