// The outbound guard's syntactic check (docs/architecture.md invariant 6, spec "URL fields"): every hostile spelling of a
// non-public or non-https target is refused before any DNS or charge, and ordinary public URLs pass.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { checkUrl, classifyAddress, isPublicAddress } from "../../lib/outbound/index.ts";

const HOSTILE: string[] = [
  // 127.0.0.1 in every spelling the URL parser turns into it
  "https://127.0.0.1/",
  "https://0x7f.1/",
  "https://2130706433/",
  "https://0177.0.0.1/",
  "https://127.1/",
  "https://0x7f000001/",
  "https://%31%32%37.0.0.1/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::ffff:7f00:1]/",
  "https://[0:0:0:0:0:ffff:7f00:1]/",
  "https://[::127.0.0.1]/",
  "https://[64:ff9b::7f00:1]/",
  "https://[64:ff9b:1::a00:1]/",
  "https://[2002:7f00:1::]/",
  "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
  "https://[::1]/",
  "https://[::]/",
  "https://0/",
  "https://0.0.0.0/",
  // private, CGNAT, link-local, metadata, multicast, reserved, documentation, benchmark
  "https://10.0.0.1/",
  "https://172.16.0.1/",
  "https://172.31.255.255/",
  "https://192.168.1.1/",
  "https://100.64.0.1/",
  "https://100.100.100.200/latest/meta-data",
  "https://169.254.169.254/latest/meta-data",
  "https://[::ffff:a9fe:a9fe]/latest/meta-data",
  "https://[fd00:ec2::254]/latest/meta-data",
  "https://168.63.129.16/",
  "https://192.0.0.192/",
  "https://[fe80::1]/",
  "https://[fc00::1]/",
  "https://[fec0::1]/",
  "https://[ff02::1]/",
  "https://224.0.0.1/",
  "https://239.255.255.250/",
  "https://240.0.0.1/",
  "https://255.255.255.255/",
  "https://198.18.0.1/",
  "https://192.0.2.1/",
  "https://198.51.100.7/",
  "https://203.0.113.9/",
  "https://[2001:db8::1]/",
  // userinfo
  "https://user@example.com/",
  "https://user:pass@example.com/",
  "https://@example.com/",
  "https://:@example.com/",
  "https://example.com@127.0.0.1/",
  "https://example.com\\@127.0.0.1/",
  // host rewritten by the parser, non-ASCII, IDN
  "https://exa%6Dple.com/",
  "https://exämple.com/",
  "https://xn--exmple-cua.com/",
  "https://www.xn--p1ai/",
  "https://ex\tample.com/",
  "https://exam\nple.com/",
  " https://example.com/",
  "https:///example.com/",
  "https:example.com/",
  "https://0x5db8d822/",
  // special-use and local names, trailing dots
  "https://localhost/",
  "https://LOCALHOST/",
  "https://localhost./",
  "https://example.com./",
  "https://foo.localhost/",
  "https://printer.local/",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://intranet/",
  "https://x.onion/",
  // schemes
  "http://example.com/",
  "HTTP://example.com/",
  "ftp://example.com/file",
  "javascript:alert(1)",
  "data:text/plain,hello",
  "file:///etc/passwd",
  "ws://example.com/",
  "//example.com/",
  "example.com",
  // lengths and shapes
  `https://${"a".repeat(64)}.com/`,
  `https://${"abcdefgh.".repeat(29)}com/`,
  `https://example.com/${"a".repeat(5000)}`,
  "https://example-.com/",
  "https://-example.com/",
  "https://a..example.com/",
  "https://example.com:0/",
  "https://example.com:99999/",
  "https://example.com:/x",
  "https://",
  "",
];

const PUBLIC: string[] = [
  "https://example.com/",
  "https://cdn.example.org/a/b.png?x=1&y=2#frag",
  "https://EXAMPLE.com/Path",
  "https://example.com:8443/x",
  "https://img-01.s3.eu-west-1.amazonaws.com/k/v.jpg",
  "https://sub_domain.example.com/",
  "https://a.b.c.d.example.co.uk/path%20with%20spaces",
  `https://${"a".repeat(63)}.com/`,
  "https://93.184.216.34/",
  "https://1.1.1.1/dns-query",
  "https://[2606:2800:220:1:248:1893:25c8:1946]/",
  "https://[2606:4700:4700::1111]:443/",
  `https://example.com/${"a".repeat(3000)}`,
];

const t = suite("outbound checkUrl");

t(`refuses ${HOSTILE.length} hostile URLs`, () => {
  assert.ok(HOSTILE.length >= 40);
  const accepted = HOSTILE.filter((u) => checkUrl(u).ok);
  assert.equal(accepted, []);
});

t("refuses non-strings", () => {
  for (const v of [undefined, null, 123, {}, ["https://example.com/"]]) assert.is(checkUrl(v).ok, false);
});

t("accepts public https URLs and returns the parsed URL", () => {
  for (const u of PUBLIC) {
    const r = checkUrl(u);
    assert.ok(r.ok, `${u}: ${r.ok ? "" : r.reason}`);
  }
  const r = checkUrl("https://EXAMPLE.com:443/a?b#c");
  assert.ok(r.ok && r.url.href === "https://example.com/a?b#c");
});

t("reports the kind: address and special names are not_public, the rest invalid_url", () => {
  const kind = (u: string) => {
    const r = checkUrl(u);
    return r.ok ? "ok" : r.kind;
  };
  assert.is(kind("https://0x7f.1/"), "not_public");
  assert.is(kind("https://[::ffff:127.0.0.1]/"), "not_public");
  assert.is(kind("https://169.254.169.254/"), "not_public");
  assert.is(kind("https://localhost/"), "not_public");
  assert.is(kind("https://0x5db8d822/"), "invalid_url"); // public address, but not in dotted-decimal form
  assert.is(kind("https://user@example.com/"), "invalid_url");
  assert.is(kind("https://xn--exmple-cua.com/"), "invalid_url");
  assert.is(kind("http://example.com/"), "invalid_url");
});

t("the URL length cap is an option", () => {
  assert.is(checkUrl("https://example.com/abcdef", { maxUrlLength: 20 }).ok, false);
  assert.is(checkUrl("https://example.com/", { maxUrlLength: 20 }).ok, true);
});

t("allowPrivate (ALLOW_PRIVATE_URLS) lets http and private hosts through, nothing else", () => {
  const dev = { allowPrivate: true };
  for (const u of [
    "http://127.0.0.1:3000/x",
    "http://localhost:8080/",
    "https://[::1]/",
    "https://media.test/",
    "http://10.1.2.3/",
    "https://169.254.169.254/",
  ]) {
    assert.ok(checkUrl(u, dev).ok, u);
  }
  for (const u of [
    "https://user@localhost/",
    "ftp://127.0.0.1/",
    "https://xn--exmple-cua.com/",
    "https://exa%6Dple.com/",
    "https://0x7f.1/",
    "https://localhost./",
    "javascript:alert(1)",
  ]) {
    assert.is(checkUrl(u, dev).ok, false, u);
  }
});

const a = suite("outbound address classification");

a("non-public addresses by class", () => {
  const table: Array<[string, string]> = [
    ["127.0.0.1", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["10.255.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.32.0.1", "public"],
    ["192.168.0.1", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.128.0.1", "public"],
    ["169.254.1.1", "link_local"],
    ["169.254.169.254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["224.0.0.251", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["198.19.255.255", "benchmark"],
    ["192.0.0.8", "protocol_assignment"],
    ["192.0.2.1", "documentation"],
    ["8.8.8.8", "public"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["::ffff:8.8.8.8", "ipv4_mapped"],
    ["::8.8.8.8", "ipv4_compatible"],
    ["64:ff9b::808:808", "nat64"],
    ["64:ff9b:1::1", "nat64"],
    ["2002:c0a8:101::1", "6to4"],
    ["2002:808:808::1", "6to4"],
    ["2001:0:4136:e378::1", "teredo"],
    ["2001:db8::1", "documentation"],
    ["2001:2::1", "protocol_assignment"],
    ["3fff::1", "documentation"],
    ["fd00:ec2::254", "metadata"],
    ["fd12:3456::1", "unique_local"],
    ["fe80::1", "link_local"],
    ["fec0::1", "site_local"],
    ["ff02::1", "multicast"],
    ["100::1", "discard"],
    ["4000::1", "not_global_unicast"],
    ["2606:4700:4700::1111", "public"],
    ["[2606:4700:4700::1111]", "public"],
    ["fe80::1%eth0", "invalid"],
    ["0x7f.0.0.1", "invalid"],
    ["0177.0.0.1", "invalid"],
    ["example.com", "invalid"],
    ["", "invalid"],
  ];
  for (const [addr, want] of table) {
    assert.is(classifyAddress(addr) ?? "public", want, addr);
    assert.is(isPublicAddress(addr), want === "public", addr);
  }
});

t.run();
a.run();
