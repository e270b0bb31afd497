// HTTP manners of the partner API (beyond the spec, non-breaking): X-Request-Id on every answer (the body's
// request_id, or the client's own id of a safe form echoed), WWW-Authenticate on a 401, ETag with 304 on GET
// reads (the validator ignoring the per-call request_id so an unchanged read matches), 405 with Allow, OPTIONS,
// gzip/br for JSON above 1 KB (through app.fetch and a real server), and CORS only for CORS_ORIGINS; what
// h3 and Node's parser refuse before any route (malformed %-escapes, unknown methods, bad request lines,
// headers too large, CONNECT, odd Expect) in the spec's error shape, and a client gone mid-body a 499.
import net from "node:net";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { serveHttp } from "../../transports/http.ts";
import { chooseEncoding } from "../../transports/http-conventions.ts";
import { pingPlugin } from "../helpers/ping-plugin.ts";

const t = suite("partner API HTTP manners");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({ plugins: [account, pingPlugin("pinger", { limitPerMinute: 100 })] });
});
t.after(async () => {
  await tk.close();
});

t("X-Request-Id: the body's request_id, or the client's safe id echoed; on errors too", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const plain = await tk.request("GET", "/me", { key });
  assert.is(plain.status, 200);
  assert.match(plain.body.request_id, /^req_[0-9a-f]{24}$/);
  assert.is(plain.headers.get("x-request-id"), plain.body.request_id);
  const traced = await tk.request("GET", "/me", { key, headers: { "x-request-id": "trace-0123456789" } });
  assert.is(traced.headers.get("x-request-id"), "trace-0123456789");
  assert.match(traced.body.request_id, /^req_/, "request_id stays the server's trace id");
  for (const unsafe of ["short", "has space in it", "x".repeat(200), "semi;colon-value"]) {
    const r = await tk.request("GET", "/me", { key, headers: { "x-request-id": unsafe } });
    assert.is(r.headers.get("x-request-id"), r.body.request_id, unsafe);
  }
  const refused = await tk.request("GET", "/transactions?limit=abc", { key });
  assert.is(refused.status, 400);
  assert.match(refused.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{24}$/);
  assert.equal(
    refused.body,
    { error: "limit must be a positive integer", request_id: refused.headers.get("x-request-id") },
    "the error body names the request too",
  );
  const unknown = await tk.request("GET", "/nowhere", { key });
  assert.equal(unknown.body, { error: "Not found", request_id: unknown.headers.get("x-request-id") });
  const admin = await tk.request("GET", "/api/v1/admin/pauses", { headers: { authorization: "Bearer wrong" } });
  assert.is(admin.status, 401);
  assert.equal(admin.body, { error: "Missing or invalid admin token", request_id: admin.headers.get("x-request-id") });
  assert.is(admin.headers.get("www-authenticate"), 'Bearer realm="admin API"', "the admin realm, not the partner one");
  const probe = await tk.request("GET", "/healthz");
  assert.match(probe.headers.get("x-request-id") ?? "", /^req_/, "every answer, not only the partner API's");
  const edge = await tk.request("GET", "/me", { key, userAgent: "python-requests/2.31" });
  assert.is(edge.status, 403);
  assert.match(edge.headers.get("x-request-id") ?? "", /^req_/);
});

t("a 401 carries WWW-Authenticate", async () => {
  const r = await tk.request("GET", "/me", { headers: { authorization: "Bearer svc_partner_nope" } });
  assert.is(r.status, 401);
  assert.is(r.headers.get("www-authenticate"), 'Bearer realm="partner API"');
  const none = await tk.request("GET", "/credits");
  assert.is(none.status, 401);
  assert.ok(none.headers.get("www-authenticate"));
});

t("GET reads: ETag, 304 while unchanged, a new ETag once the answer changes", async () => {
  const { id, key } = await tk.partner({ credits: 100 });
  const first = await tk.request("GET", "/credits", { key });
  const etag = first.headers.get("etag");
  assert.match(etag ?? "", /^W\/"[\w-]{27}"$/);
  const again = await tk.request("GET", "/credits", { key, headers: { "if-none-match": etag! } });
  assert.is(again.status, 304);
  assert.is(again.body, "");
  assert.is(again.headers.get("etag"), etag);
  assert.is(again.headers.get("vary"), "Accept-Encoding", "what the 200 varied on (RFC 9110 15.4.5)");
  assert.is(
    (await tk.request("GET", "/credits", { key, headers: { "if-none-match": `W/"other", ${etag}` } })).status,
    304,
  );
  await tk.kernel.accounts.update(id, { limits: { inflight_jobs: 3 } });
  await tk.request("POST", `/api/v1/admin/partners/${id}/credits`, {
    headers: { authorization: `Bearer ${tk.adminToken}` },
    body: { amount: 5, type: "purchase", description: "more" },
  });
  const changed = await tk.request("GET", "/credits", { key, headers: { "if-none-match": etag! } });
  assert.is(changed.status, 200);
  assert.is(changed.body.credits_remaining, 105);
  assert.is.not(changed.headers.get("etag"), etag);
  // Writes carry no validator.
  assert.is((await tk.request("POST", "/generate-image", { key, body: {} })).headers.get("etag"), null);
});

t(
  "a known path with a method it does not serve: 405 with Allow; OPTIONS answers Allow; unknown paths stay 404",
  async () => {
    const { key } = await tk.partner({ credits: 100 });
    const wrong = await tk.request("DELETE", "/me", { key });
    assert.is(wrong.status, 405);
    assert.equal(wrong.body, { error: "Method not allowed", request_id: wrong.headers.get("x-request-id") });
    assert.is(wrong.headers.get("allow"), "GET, HEAD, OPTIONS");
    // A parameterised path: the methods of every pattern that matches it.
    const partner = await tk.request("PUT", "/api/v1/admin/partners/prt_0123456789abcdef", {
      headers: { authorization: `Bearer ${tk.adminToken}` },
    });
    assert.is(partner.status, 405);
    assert.is(partner.headers.get("allow"), "GET, HEAD, OPTIONS, PATCH");
    const adminWrong = await tk.request("GET", "/api/v1/admin/partners/prt_x/credits", {
      headers: { authorization: `Bearer ${tk.adminToken}` },
    });
    assert.is(adminWrong.status, 405);
    assert.match(adminWrong.headers.get("allow")!, /POST/);
    const options = await tk.request("OPTIONS", "/credits");
    assert.is(options.status, 204);
    assert.is(options.headers.get("allow"), "GET, HEAD, OPTIONS");
    assert.is(options.headers.get("access-control-allow-origin"), null);
    // yoga refuses HEAD on /graphql, so Allow does not offer it there.
    const graphqlOptions = await tk.fetch(
      new Request("http://mediagate.test/graphql", { method: "OPTIONS", headers: { "user-agent": "manners/1" } }),
    );
    assert.is(graphqlOptions.headers.get("allow"), "GET, OPTIONS, POST");
    assert.is((await tk.request("DELETE", "/nowhere", { key })).status, 404);
    assert.is((await tk.request("OPTIONS", "/nowhere")).status, 404);
  },
);

/** `n` credit grants through the admin API: a transactions list long enough to compress. */
async function grants(partnerId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await tk.request("POST", `/api/v1/admin/partners/${partnerId}/credits`, {
      headers: { authorization: `Bearer ${tk.adminToken}` },
      body: { amount: 1, type: "purchase", description: `grant ${i}` },
    });
    assert.is(r.status, 200);
  }
}

t(
  "JSON above 1 KB is compressed for a client that accepts br or gzip; small answers and other clients are not",
  async () => {
    assert.is(chooseEncoding("gzip, deflate, br"), "br");
    assert.is(chooseEncoding("br;q=0, gzip;q=0.5"), "gzip");
    assert.is(chooseEncoding("identity"), undefined);
    assert.is(chooseEncoding("*"), "br");
    assert.is(chooseEncoding("*, br;q=0, gzip;q=0"), undefined);
    assert.is(chooseEncoding(null), undefined);
    const { id, key } = await tk.partner({ credits: 100 });
    await grants(id, 30);
    const plain = await tk.request("GET", "/transactions?limit=30", { key });
    assert.is(plain.status, 200);
    assert.ok(JSON.stringify(plain.body).length > 1024, "a list long enough to compress");
    assert.is(plain.headers.get("content-encoding"), null);
    for (const [accept, encoding, unpack] of [
      ["gzip, deflate, br", "br", brotliDecompressSync],
      ["gzip", "gzip", gunzipSync],
    ] as const) {
      const res = await tk.fetch(
        new Request("http://mediagate.test/api/v1/partner/transactions?limit=30", {
          headers: { authorization: `Bearer ${key}`, "user-agent": "manners/1", "accept-encoding": accept },
        }),
      );
      assert.is(res.headers.get("content-encoding"), encoding);
      const packed = new Uint8Array(await res.arrayBuffer());
      assert.is(Number(res.headers.get("content-length")), packed.byteLength);
      assert.is(res.headers.get("vary"), "Accept-Encoding", "named once");
      const body = JSON.parse(Buffer.from(unpack(packed)).toString("utf8"));
      assert.equal(body.transactions, plain.body.transactions);
      assert.ok(packed.byteLength < JSON.stringify(body).length / 2, `${encoding}: ${packed.byteLength} bytes`);
    }
    const small = await tk.fetch(
      new Request("http://mediagate.test/api/v1/partner/me", {
        headers: { authorization: `Bearer ${key}`, "user-agent": "manners/1", "accept-encoding": "br" },
      }),
    );
    assert.is(small.headers.get("content-encoding"), null, "under 1 KB: sent as is");
    assert.match(small.headers.get("vary") ?? "", /Accept-Encoding/);
    assert.ok((await small.json()).request_id);
    // A small answer whose route names no Vary of its own (a POST's 202) gets it from the compression step.
    const post = (accept?: string) =>
      tk.fetch(
        new Request("http://mediagate.test/api/v1/partner/ping", {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "user-agent": "manners/1",
            "content-type": "application/json",
            ...(accept ? { "accept-encoding": accept } : {}),
          },
          body: "{}",
        }),
      );
    const accepted = await post("gzip, br");
    assert.is(accepted.status, 202);
    assert.equal([accepted.headers.get("content-encoding"), accepted.headers.get("vary")], [null, "Accept-Encoding"]);
    assert.ok((await accepted.json()).job_id);
    const identity = await post();
    assert.equal([identity.status, identity.headers.get("vary")], [202, null]);
  },
);

t("through a real server: fetch decompresses, the headers say so", async () => {
  const server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port: 0, hostname: "127.0.0.1" });
  try {
    const { id, key } = await tk.partner({ credits: 100 });
    await grants(id, 30);
    const res = await fetch(new URL("/api/v1/partner/transactions?limit=30", server.url), {
      headers: { authorization: `Bearer ${key}`, "user-agent": "manners/1", "accept-encoding": "br" },
    });
    assert.is(res.status, 200);
    assert.is(res.headers.get("content-encoding"), "br");
    assert.is((await res.json()).transactions.length, 30);
    const wrong = await fetch(new URL("/api/v1/partner/credits", server.url), {
      method: "PATCH",
      headers: { "user-agent": "manners/1" },
    });
    assert.is(wrong.status, 405);
    assert.is(wrong.headers.get("allow"), "GET, HEAD, OPTIONS");
  } finally {
    await server.close();
  }
});

t(
  "CORS: off by default; CORS_ORIGINS lists exact origins, which get preflights and readable answers; never the admin API",
  async () => {
    const { key } = await tk.partner({ credits: 100 });
    const off = await tk.request("GET", "/me", { key, headers: { origin: "https://app.example.com" } });
    assert.is(off.headers.get("access-control-allow-origin"), null);
    const cors = await createTestKernel({
      plugins: [account],
      env: { CORS_ORIGINS: "https://app.example.com, http://localhost:5173" },
    });
    try {
      const p = await cors.partner({ credits: 100 });
      const preflight = await cors.request("OPTIONS", "/credits", {
        headers: { origin: "https://app.example.com", "access-control-request-method": "GET" },
      });
      assert.is(preflight.status, 204);
      assert.is(preflight.headers.get("access-control-allow-origin"), "https://app.example.com");
      assert.match(preflight.headers.get("access-control-allow-headers")!, /Authorization/);
      assert.match(preflight.headers.get("access-control-allow-headers")!, /Idempotency-Key/);
      assert.is(preflight.headers.get("access-control-allow-methods"), "GET, HEAD");
      const read = await cors.request("GET", "/me", { key: p.key, headers: { origin: "http://localhost:5173" } });
      assert.is(read.status, 200);
      assert.is(read.headers.get("access-control-allow-origin"), "http://localhost:5173");
      assert.match(read.headers.get("access-control-expose-headers")!, /X-Request-Id/);
      // The read's own Vary (for its 304) and CORS's, each once.
      assert.equal(read.headers.get("vary")!.split(/,\s*/).sort(), ["Accept-Encoding", "Origin"]);
      assert.is(read.headers.get("x-request-id"), read.body.request_id);
      const stranger = await cors.request("GET", "/me", { key: p.key, headers: { origin: "https://evil.example" } });
      assert.is(stranger.status, 200, "CORS is the browser's refusal, not the server's");
      assert.is(stranger.headers.get("access-control-allow-origin"), null);
      const graphqlPreflight = await cors.request("OPTIONS", "/graphql", {
        headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
      });
      assert.is(graphqlPreflight.headers.get("access-control-allow-origin"), "https://app.example.com");
      const admin = await cors.request("GET", "/api/v1/admin/pauses", {
        headers: { origin: "https://app.example.com", authorization: `Bearer ${cors.adminToken}` },
      });
      assert.is(admin.status, 200);
      assert.is(admin.headers.get("access-control-allow-origin"), null);
      const adminPreflight = await cors.request("OPTIONS", "/api/v1/admin/pauses", {
        headers: { origin: "https://app.example.com" },
      });
      assert.is(adminPreflight.headers.get("access-control-allow-origin"), null);
    } finally {
      await cors.close();
    }
    for (const bad of [
      "*",
      "https://app.example.com/",
      "https://app.example.com/path",
      "ftp://x.example",
      "app.example.com",
    ]) {
      assert.throws(
        () => loadConfig({ CORS_ORIGINS: bad }),
        (e: unknown) => e instanceof ConfigError && /CORS_ORIGINS/.test((e as Error).message),
        bad,
      );
    }
    assert.equal(loadConfig({}).corsOrigins, []);
  },
);

/** One raw exchange on a fresh connection: what the server wrote until it closed (or `waitMs` passed). */
function raw(
  url: string,
  text: string | Buffer,
  waitMs = 5_000,
): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    const done = () => {
      const all = Buffer.concat(chunks).toString("utf8");
      const [head, ...rest] = all.split("\r\n\r\n");
      const [statusLine, ...lines] = head!.split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      const bodyText = rest.join("\r\n\r\n");
      let body: any = bodyText;
      try {
        body = JSON.parse(bodyText);
      } catch {
        // not JSON: the test says so
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body });
    };
    socket.on("data", (c) => chunks.push(c));
    socket.on("close", done);
    socket.on("error", (err) => (chunks.length ? done() : reject(err)));
    socket.setTimeout(waitMs, () => socket.destroy());
  });
}

const inShape = (
  what: string,
  r: { status: number; headers: Record<string, string>; body: any },
  status: number,
  error: string | RegExp,
) => {
  assert.is(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(Object.keys(r.body).sort(), ["error", "request_id"], what);
  if (typeof error === "string") assert.is(r.body.error, error, what);
  else assert.match(r.body.error, error, what);
  assert.match(r.body.request_id, /^req_[0-9a-f]{24}$/, what);
  assert.is(r.headers["x-request-id"], r.body.request_id, what);
};

t("malformed %-escapes in any path: 400 in the spec's shape with X-Request-Id, logged and counted", async () => {
  const { key } = await tk.partner({ credits: 100 });
  for (const path of [
    "/image-status/%zz",
    "/status/%",
    "/%E0%A4%A",
    "/api/v1/admin/partners/%C0%AF",
    "/healthz%",
    "/media/%ff%fe/x",
    "/graphql%2",
    "/nowhere/%%41",
  ]) {
    const r = await tk.request("GET", path, { key, headers: { authorization: `Bearer ${tk.adminToken}` } });
    inShape(
      path,
      { status: r.status, headers: Object.fromEntries(r.headers), body: r.body },
      400,
      "Malformed request path: invalid percent-encoding",
    );
  }
  // A client's own trace id is echoed as on every answer.
  const traced = await tk.request("GET", "/image-status/%zz", {
    key,
    headers: { "x-request-id": "trace-malformed-1" },
  });
  assert.is(traced.headers.get("x-request-id"), "trace-malformed-1");
  // Well-formed escapes still route.
  assert.is((await tk.request("GET", "/image-status/%41%42", { key })).status, 404);
});

t(
  "through a real server: what Node's parser refuses, CONNECT and odd Expect answer in the spec's shape; a body cut mid-stream is a 499, never a 500",
  async () => {
    const server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port: 0, hostname: "127.0.0.1" });
    try {
      const { key } = await tk.partner({ credits: 100 });
      const brew = await raw(server.url, "BREW /api/v1/partner/me HTTP/1.1\r\nHost: x\r\n\r\n");
      inShape("BREW on a known path", brew, 405, "Method not allowed");
      assert.is(brew.headers.allow, "GET, HEAD, OPTIONS");
      const refused: Array<[what: string, request: string, status: number, error: string | RegExp]> = [
        ["BREW on no path we serve", "BREW /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404, "Not found"],
        ["CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400, /CONNECT is not served/],
        [
          "a header line without a colon",
          "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
          400,
          "Malformed HTTP request",
        ],
        ["a request line of garbage", "\u0001\u0002 what\r\n\r\n", 400, "Malformed HTTP request"],
        [
          "headers over Node's 16 KB",
          `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
          431,
          "Request headers too large",
        ],
        [
          "Expect: tea",
          "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n",
          417,
          "Only Expect: 100-continue is understood",
        ],
      ];
      for (const [what, request, status, error] of refused)
        inShape(what, await raw(server.url, request), status, error);
      // A body cut mid-stream, ten times: the client went away, which is not a server error.
      for (let i = 0; i < 10; i++) {
        await raw(
          server.url,
          `POST /api/v1/partner/ping HTTP/1.1\r\nHost: x\r\nUser-Agent: manners/1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{"note":"${"a".repeat(200)}`,
          100,
        );
      }
      const metrics = await (
        await fetch(new URL("/metrics", server.url), { headers: { authorization: `Bearer ${tk.adminToken}` } })
      ).text();
      assert.not.match(metrics, /mediagate_http_requests_total\{[^}]*status="5\d\d"\}/, "no 5xx counted");
      assert.match(
        metrics,
        /mediagate_http_requests_total\{method="POST",route="\/api\/v1\/partner\/ping",status="499"\} 10/,
      );
      assert.match(
        metrics,
        /mediagate_http_requests_total\{method="OTHER",route="\(unmatched\)",status="405"\} 1/,
        "what the parser refused is counted too",
      );
      // The server still answers, on a fresh connection.
      assert.is((await fetch(new URL("/healthz", server.url))).status, 200);
    } finally {
      await server.close();
    }
  },
);

t.run();
