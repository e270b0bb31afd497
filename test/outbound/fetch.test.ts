// The outbound guard's network half: DNS answers are checked whole, the connection goes to the address that
// was checked in the same lookup (no rebinding window), redirects are refused, and byte and time caps abort
// the exchange. No test reaches the network: resolvers are injected and servers listen on 127.0.0.1.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  createOutboundGuard,
  OutboundError,
  type OutboundErrorKind,
  type ResolvedAddress,
  type Resolver,
} from "../../lib/outbound/index.ts";

const PUBLIC_V4: ResolvedAddress = { address: "93.184.216.34", family: 4 };
const PUBLIC_V6: ResolvedAddress = { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 };
const LOOPBACK: ResolvedAddress = { address: "127.0.0.1", family: 4 };

/** A resolver answering from a table, counting its calls. */
function fakeResolver(
  table: Record<string, ResolvedAddress[] | (() => ResolvedAddress[])>,
): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    const entry = table[host];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return typeof entry === "function" ? entry() : entry;
  };
  return Object.assign(fn, { calls });
}

async function expectKind(p: Promise<unknown>, kind: OutboundErrorKind): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, OutboundError, String(err));
    assert.is((err as OutboundError).kind, kind, (err as Error).message);
    return err as OutboundError;
  }
  assert.unreachable(`expected OutboundError ${kind}, got success`);
  throw new Error("unreachable");
}

interface TestServer {
  port: number;
  connections: number;
  requests: Array<{ url: string; host: string | undefined; method: string; body: string; servername?: string }>;
  close(): Promise<void>;
}

async function listen(
  server: Server,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestServer> {
  const state: TestServer = {
    port: 0,
    connections: 0,
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on("connection", () => state.connections++);
  server.on("secureConnection", () => state.connections++);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      state.requests.push({
        url: req.url ?? "",
        host: req.headers.host,
        method: req.method ?? "",
        body: Buffer.concat(chunks).toString(),
        servername: (req.socket as { servername?: string }).servername,
      });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

function routes(req: IncomingMessage, res: ServerResponse): void {
  switch (req.url) {
    case "/hello":
      res.setHeader("content-type", "text/plain");
      res.end("hello");
      return;
    case "/echo":
      res.end(`echo:${req.method}`);
      return;
    case "/redirect":
      res.writeHead(302, { location: "/hello" });
      res.end();
      return;
    case "/missing":
      res.writeHead(404);
      res.end("nope");
      return;
    case "/big-declared":
      res.writeHead(200, { "content-length": "5000" });
      res.end("x".repeat(5000));
      return;
    case "/big-chunked": {
      // No Content-Length: the cap must trip while streaming.
      res.writeHead(200);
      let sent = 0;
      const more = () => {
        if (sent >= 200_000 || res.destroyed) return res.end();
        sent += 10_000;
        res.write("y".repeat(10_000), () => setImmediate(more));
      };
      more();
      return;
    }
    case "/stall-body":
      res.writeHead(200, { "content-length": "100" });
      res.write("partial"); // and never the rest
      return;
    case "/never":
      return; // never answers
    default:
      res.writeHead(500);
      res.end();
  }
}

const t = suite("outbound resolvePublic (injected DNS)");

t("every resolved address must be public: one private answer refuses the name", async () => {
  const lookup = fakeResolver({
    "mixed.example.com": [PUBLIC_V4, { address: "10.0.0.7", family: 4 }],
    "mapped.example.com": [{ address: "::ffff:127.0.0.1", family: 6 }],
    "meta.example.com": [{ address: "169.254.169.254", family: 4 }],
    "scoped.example.com": [{ address: "fe80::1%eth0", family: 6 }],
    "nat64.example.com": [PUBLIC_V6, { address: "64:ff9b::a9fe:a9fe", family: 6 }],
    "garbage.example.com": [{ address: "not-an-ip", family: 4 }],
    "good.example.com": [PUBLIC_V4, PUBLIC_V6],
  });
  const guard = createOutboundGuard({ lookup });
  try {
    for (const host of ["mixed", "mapped", "meta", "scoped", "nat64", "garbage"]) {
      await expectKind(guard.resolvePublic(`https://${host}.example.com/x`), "not_public");
    }
    assert.equal(await guard.resolvePublic("https://good.example.com/x"), [PUBLIC_V4, PUBLIC_V6]);
  } finally {
    await guard.close();
  }
});

t("a syntactically bad URL is refused before any DNS; a DNS failure or empty answer is network", async () => {
  const lookup = fakeResolver({ "empty.example.com": [] });
  const guard = createOutboundGuard({ lookup });
  try {
    await expectKind(guard.resolvePublic("https://user@example.com/"), "invalid_url");
    await expectKind(guard.resolvePublic("https://0x7f.1/"), "not_public");
    assert.equal(lookup.calls, []);
    await expectKind(guard.resolvePublic("https://missing.example.com/"), "network");
    await expectKind(guard.resolvePublic("https://empty.example.com/"), "network");
    assert.equal(await guard.resolvePublic("https://93.184.216.34/"), [PUBLIC_V4]);
  } finally {
    await guard.close();
  }
});

t("allowPrivate accepts private answers", async () => {
  const guard = createOutboundGuard({ allowPrivate: true, lookup: fakeResolver({ "media.test": [LOOPBACK] }) });
  try {
    assert.equal(await guard.resolvePublic("http://media.test/"), [LOOPBACK]);
  } finally {
    await guard.close();
  }
});

const f = suite("outbound fetch (local server, allowPrivate)");

let http: TestServer;
f.before(async () => {
  http = await listen(createHttpServer(), routes);
});
f.after(async () => {
  await http.close();
});

function devGuard(extra: { onConnect?: (i: { address: string }) => void } = {}) {
  const lookup = fakeResolver({ "media.test": [LOOPBACK] });
  return { lookup, guard: createOutboundGuard({ allowPrivate: true, lookup, ...extra }) };
}

/** A development guard (private addresses allowed) for `body`, closed after it however it ends. */
async function withDevGuard(body: (guard: ReturnType<typeof devGuard>["guard"]) => Promise<void>): Promise<void> {
  const { guard } = devGuard();
  try {
    await body(guard);
  } finally {
    await guard.close();
  }
}

f("fetches through the injected resolver with the URL's Host header", async () => {
  const connected: string[] = [];
  const { guard, lookup } = devGuard({ onConnect: (i) => connected.push(i.address) });
  try {
    const res = await guard.fetch(`http://media.test:${http.port}/hello`);
    assert.is(res.status, 200);
    assert.is(new TextDecoder().decode(res.body), "hello");
    assert.is(res.headers["content-type"], "text/plain");
    assert.is(http.requests.at(-1)?.host, `media.test:${http.port}`);
    assert.equal(lookup.calls, ["media.test"]);
    assert.equal(connected, ["127.0.0.1"]);
    const post = await guard.fetch(`http://media.test:${http.port}/echo`, {
      method: "POST",
      body: "payload",
      headers: { "content-type": "text/plain", host: "evil.example" },
    });
    assert.is(new TextDecoder().decode(post.body), "echo:POST");
    assert.is(http.requests.at(-1)?.body, "payload");
    assert.is(http.requests.at(-1)?.host, `media.test:${http.port}`);
  } finally {
    await guard.close();
  }
});

f("a redirect is not followed and fails as redirect", () =>
  withDevGuard(async (guard) => {
    const before = http.requests.length;
    const err = await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/redirect`), "redirect");
    assert.is(err.status, 302);
    assert.is(err.location, "/hello");
    assert.equal(
      http.requests.slice(before).map((r) => r.url),
      ["/redirect"],
    );
  }),
);

f("a status outside acceptStatus fails as http_status; acceptStatus can widen it", () =>
  withDevGuard(async (guard) => {
    const err = await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/missing`), "http_status");
    assert.is(err.status, 404);
    const res = await guard.fetch(`http://127.0.0.1:${http.port}/missing`, { acceptStatus: () => true });
    assert.is(res.status, 404);
    // 3xx stays a redirect whatever acceptStatus says.
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/redirect`, { acceptStatus: () => true }), "redirect");
  }),
);

f("the byte cap aborts: on the declared length and while streaming", () =>
  withDevGuard(async (guard) => {
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/big-declared`, { maxBytes: 4999 }), "too_large");
    const ok = await guard.fetch(`http://127.0.0.1:${http.port}/big-declared`, { maxBytes: 5000 });
    assert.is(ok.body.byteLength, 5000);
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/big-chunked`, { maxBytes: 25_000 }), "too_large");
  }),
);

f("the deadline aborts a server that never answers, and one that stalls mid-body", () =>
  withDevGuard(async (guard) => {
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/never`, { timeoutMs: 150 }), "timeout");
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/stall-body`, { timeoutMs: 150 }), "timeout");
  }),
);

f("the caller's signal aborts", () =>
  withDevGuard(async (guard) => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/never`, { signal: ac.signal }), "aborted");
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/hello`, { signal: AbortSignal.abort() }), "aborted");
  }),
);

f("stream yields the body in chunks under the cap, and cancel frees it", () =>
  withDevGuard(async (guard) => {
    const s = await guard.stream(`http://127.0.0.1:${http.port}/big-chunked`, { maxBytes: 1_000_000 });
    assert.is(s.status, 200);
    let total = 0;
    for await (const chunk of s.body) total += chunk.byteLength;
    assert.is(total, 200_000);
    const capped = await guard.stream(`http://127.0.0.1:${http.port}/big-chunked`, { maxBytes: 15_000 });
    await expectKind(
      (async () => {
        for await (const _ of capped.body) void _;
      })(),
      "too_large",
    );
    const cancelled = await guard.stream(`http://127.0.0.1:${http.port}/big-chunked`);
    cancelled.cancel();
    cancelled.cancel();
  }),
);

f("without allowPrivate the same server is refused and never connected to", async () => {
  const lookup = fakeResolver({ "media.example.com": [LOOPBACK] });
  const guard = createOutboundGuard({ lookup });
  try {
    const before = http.connections;
    await expectKind(guard.fetch(`http://127.0.0.1:${http.port}/hello`), "invalid_url");
    await expectKind(guard.fetch(`https://127.0.0.1:${http.port}/hello`), "not_public");
    await expectKind(guard.fetch(`https://[::ffff:127.0.0.1]:${http.port}/hello`), "not_public");
    await expectKind(guard.fetch(`https://localhost:${http.port}/hello`), "not_public");
    await expectKind(guard.fetch(`https://media.example.com:${http.port}/hello`), "not_public");
    assert.is(http.connections, before);
  } finally {
    await guard.close();
  }
});

f("rebinding: the connection uses its own lookup, checked in the same call, never an earlier answer", async () => {
  // Public on the first lookup (the pre-check), loopback on every later one (the connection).
  let n = 0;
  const lookup = fakeResolver({ "rebind.example.com": () => (n++ === 0 ? [PUBLIC_V4] : [LOOPBACK]) });
  const guard = createOutboundGuard({ lookup });
  try {
    const before = http.connections;
    assert.equal(await guard.resolvePublic(`https://rebind.example.com:${http.port}/hello`), [PUBLIC_V4]);
    await expectKind(guard.fetch(`https://rebind.example.com:${http.port}/hello`), "not_public");
    assert.equal(lookup.calls, ["rebind.example.com", "rebind.example.com"]);
    assert.is(http.connections, before);
  } finally {
    await guard.close();
  }
  // And the address connected to is exactly the one the connection's lookup returned and checked.
  let m = 0;
  const connected: string[] = [];
  const flip = fakeResolver({ "media.test": () => (m++ === 0 ? [{ address: "127.0.0.2", family: 4 }] : [LOOPBACK]) });
  const dev = createOutboundGuard({ allowPrivate: true, lookup: flip, onConnect: (i) => connected.push(i.address) });
  try {
    await dev.resolvePublic(`http://media.test:${http.port}/`);
    await dev.fetch(`http://media.test:${http.port}/hello`);
    assert.equal(connected, ["127.0.0.1"]);
    assert.is(flip.calls.length, 2);
  } finally {
    await dev.close();
  }
});

// TLS: SNI and certificate verification use the hostname, while the socket goes to the pinned address.
let tlsMaterial: { key: string; cert: string } | undefined;
try {
  const dir = mkdtempSync(join(tmpdir(), "outbound-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=media.test",
        "-addext",
        "subjectAltName=DNS:media.test",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    tlsMaterial = {
      key: readFileSync(join(dir, "key.pem"), "utf8"),
      cert: readFileSync(join(dir, "cert.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} catch {
  tlsMaterial = undefined; // no openssl: the TLS test is skipped
}

const s = suite("outbound https (hostname verified, address pinned)");
if (tlsMaterial) {
  const material = tlsMaterial;
  s("SNI and the certificate check use the hostname; a name the certificate lacks fails as network", async () => {
    const server = await listen(createHttpsServer({ key: material.key, cert: material.cert }), routes);
    const lookup = fakeResolver({ "media.test": [LOOPBACK], "other.test": [LOOPBACK] });
    const guard = createOutboundGuard({ allowPrivate: true, lookup, ca: material.cert });
    const untrusting = createOutboundGuard({ allowPrivate: true, lookup });
    try {
      const res = await guard.fetch(`https://media.test:${server.port}/hello`);
      assert.is(new TextDecoder().decode(res.body), "hello");
      assert.is(server.requests.at(-1)?.servername, "media.test");
      await expectKind(guard.fetch(`https://other.test:${server.port}/hello`), "network");
      await expectKind(untrusting.fetch(`https://media.test:${server.port}/hello`), "network");
    } finally {
      await guard.close();
      await untrusting.close();
      await server.close();
    }
  });
}

const h = suite("outbound allowHttp (the Script Runner's http image URL)");

h("plain http only where asked; private addresses refused either way", async () => {
  const guard = createOutboundGuard({
    lookup: fakeResolver({ "pics.example.com": [LOOPBACK], "cdn.example.com": [PUBLIC_V4] }),
  });
  try {
    assert.is(guard.checkUrl("http://cdn.example.com/a.png").ok, false);
    assert.is(guard.checkUrl("http://cdn.example.com/a.png", { allowHttp: true }).ok, true);
    assert.is(guard.checkUrl("ftp://cdn.example.com/a.png", { allowHttp: true }).ok, false);
    const literal = guard.checkUrl("http://127.0.0.1/a.png", { allowHttp: true });
    assert.equal([literal.ok, !literal.ok && literal.kind], [false, "not_public"]);
    assert.is(guard.checkUrl("http://user@cdn.example.com/a.png", { allowHttp: true }).ok, false);
    await expectKind(guard.fetch("http://pics.example.com/a.png"), "invalid_url");
    // Allowed by scheme, still refused by address: the name resolves to loopback.
    await expectKind(guard.fetch("http://pics.example.com/a.png", { allowHttp: true, timeoutMs: 2000 }), "not_public");
  } finally {
    await guard.close();
  }
});

t.run();
f.run();
s.run();
h.run();
