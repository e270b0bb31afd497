// Hostile GraphQL (issue 14, item 1): every limit of transports/graphql/limits.ts refuses before execution
// and before authentication with a 400 (a 413 for the body, a 429 for an exhausted address budget) and a
// GraphQL error whose extensions say which limit; never a 5xx. First through app.fetch, then on a real
// server: the alias bomb while /healthz is asked, the per-address budget of unauthenticated callers (on the
// memory and the Redis counters), and the WebSocket transport (frame cap, connection_init without a key,
// the same document limits on `subscribe`). Nothing here measures a duration.

import { parse } from "graphql";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import WebSocket from "ws";
import { loadConfig } from "../../core/config.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { GRAPHQL_LIMITS, measureOperations } from "../../transports/graphql/limits.ts";
import { createHttpApp, serveHttp } from "../../transports/http.ts";
import { redisUrl } from "../helpers/backends.ts";

const UA = "limits-tests/1.0";
const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(" ")} }`;

/** The one error of a refusal by `limit`, checked for the shape every refusal has. */
function refusal(
  res: { status: number; errors?: Array<{ message: string; extensions?: Record<string, any> }> },
  limit: string,
  status = 400,
) {
  assert.is(res.status, status, JSON.stringify(res.errors));
  const error = res.errors?.find((e) => e.extensions?.limit === limit);
  assert.ok(error, `a "${limit}" refusal in ${JSON.stringify(res.errors)}`);
  assert.is(error!.extensions!.status, status);
  assert.is(error!.extensions!.code, status === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST");
  assert.not.ok("http" in error!.extensions!, "yoga's HTTP hint stays out of the body");
  return error!;
}

// ---------------------------------------------------------------------------------------------------------
const doc = suite("GraphQL document limits (app.fetch)");
let tk: TestKernel;
doc.before(async () => {
  tk = await createTestKernel({ plugins: [account] });
});
doc.after(async () => {
  await tk.close();
});

doc("a handful of aliases run; more than the limit is a 400 before anything runs, with or without a key", async () => {
  const ok = await graphql(tk, aliases(GRAPHQL_LIMITS.aliases));
  assert.is(ok.status, 200);
  assert.is(ok.data.a0, "Query");
  const e = refusal(await graphql(tk, aliases(GRAPHQL_LIMITS.aliases + 1)), "aliases");
  assert.is(
    e.message,
    `The operation has too many aliases: ${GRAPHQL_LIMITS.aliases + 1} (at most ${GRAPHQL_LIMITS.aliases}).`,
  );
  const p = await tk.partner();
  const keyed = await graphql(tk, `{ me { name } ${aliases(30).slice(1, -1)} }`, undefined, { key: p.key });
  refusal(keyed, "aliases");
  assert.is(keyed.data, null, "nothing was executed");
  const usage = await tk.request("GET", "/usage", { key: p.key });
  assert.equal(
    usage.body.per_endpoint.map((x: any) => x.endpoint),
    ["GET /usage"],
    "the refused document called no operation",
  );
});

doc("an alias bomb that fits the body cap stops at the document size or at the token limit", async () => {
  // 40,000 aliases: about 750 kB; 5,000: about 95 kB but 15,000 tokens.
  refusal(await graphql(tk, aliases(40_000)), "document");
  const e = refusal(await graphql(tk, aliases(5_000)), "tokens");
  assert.is(e.message, `The GraphQL document has more than ${GRAPHQL_LIMITS.tokens} tokens.`);
  refusal(await graphql(tk, `{ ${"__typename ".repeat(GRAPHQL_LIMITS.tokens)} }`), "tokens");
});

doc("deep nesting is a 400", async () => {
  const deep = `{ __type(name: "Query") ${"{ ofType ".repeat(GRAPHQL_LIMITS.depth)}{ name }${" }".repeat(GRAPHQL_LIMITS.depth)} }`;
  const e = refusal(await graphql(tk, deep), "depth");
  assert.match(e.message, /nested too deeply: \d+ levels \(at most 20\)/);
});

doc("a fragment cycle is a 400 (graphql-js's own rule), and measuring it terminates", async () => {
  const res = await graphql(tk, "query { ...A } fragment A on Query { __typename ...B } fragment B on Query { ...A }");
  assert.is(res.status, 400);
  assert.match(res.errors![0]!.message, /Cannot spread fragment "A" within itself via "B"/);
  assert.is(res.errors![0]!.extensions!.status, 400);
  const [m] = measureOperations(
    parse("query { ...A } fragment A on Query { __typename ...B } fragment B on Query { ...A }"),
  );
  assert.is(m!.cost, 1);
});

doc(
  "a fragment bomb (each fragment spreading the previous one twice) is refused by cost without expanding it",
  async () => {
    const fragments = ["fragment F0 on Query { __typename }"];
    for (let i = 1; i <= 60; i++)
      fragments.push(`fragment F${i} on Query { ...F${i - 1} ... on Query { ...F${i - 1} } }`);
    const e = refusal(await graphql(tk, `query { ...F60 } ${fragments.join(" ")}`), "cost");
    assert.match(e.message, /selects too many fields: more than that \(at most 1000\)/);
  },
);

doc("cost: more fields than the limit is a 400", async () => {
  refusal(await graphql(tk, `{ ${"__typename ".repeat(GRAPHQL_LIMITS.cost + 1)} }`), "cost");
});

doc("a directive flood is a 400", async () => {
  const e = refusal(
    await graphql(tk, `{ __typename ${"@skip(if: false) ".repeat(GRAPHQL_LIMITS.directives + 1)} }`),
    "directives",
  );
  assert.match(e.message, /too many directives: 21 \(at most 20\)/);
});

doc("a document over the size limit is a 400 (data belongs in variables)", async () => {
  const e = refusal(await graphql(tk, `# ${"x".repeat(GRAPHQL_LIMITS.documentChars)}\n{ __typename }`), "document");
  assert.match(e.message, /Pass large values as variables/);
});

doc("syntax and validation errors answer 400 too, whatever the client accepts", async () => {
  const syntax = await graphql(tk, "{ me(");
  assert.is(syntax.status, 400);
  assert.is(syntax.errors![0]!.extensions!.code, "GRAPHQL_PARSE_FAILED");
  const unknown = await graphql(tk, "{ nope }");
  assert.is(unknown.status, 400);
  assert.is(unknown.errors![0]!.extensions!.code, "GRAPHQL_VALIDATION_FAILED");
});

doc("a body over the cap is a 413, by its content-length and while a chunked body streams", async () => {
  const app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
  const body = JSON.stringify({ query: "{ __typename }", variables: { pad: "x".repeat(GRAPHQL_LIMITS.bodyBytes) } });
  const declared = await app.fetch(
    new Request("http://t/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": UA },
      body,
    }),
  );
  assert.is(declared.status, 413);
  const answer = (await declared.json()) as any;
  assert.is(answer.errors[0].message, "Request body too large");
  assert.equal(answer.errors[0].extensions, {
    code: "PAYLOAD_TOO_LARGE",
    status: 413,
    limit: "body",
    max: GRAPHQL_LIMITS.bodyBytes,
  });

  // No content-length: an endless stream is cut once it passes the cap.
  let sent = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(
        new TextEncoder().encode(sent === 0 ? '{"query":"{ __typename }","variables":{"pad":"' : "x".repeat(65_536)),
      );
      sent += 65_536;
    },
  });
  const chunked = await app.fetch(
    new Request("http://t/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": UA },
      body: endless,
      duplex: "half",
    } as RequestInit),
  );
  assert.is(chunked.status, 413);
  assert.is(((await chunked.json()) as any).errors[0].extensions.code, "PAYLOAD_TOO_LARGE");
  assert.ok(sent < 4 * GRAPHQL_LIMITS.bodyBytes, `stopped reading (${sent} bytes pulled)`);
});

doc("variables nested deeper than a REST body may be are a 400 with REST's text (not a stack overflow)", async () => {
  const app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
  const p = await tk.partner();
  const ask = async (variables: string) => {
    const body = `{"query":"{ __typename }","variables":${variables}}`;
    const res = await app.fetch(
      new Request("http://t/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": UA, authorization: `Bearer ${p.key}` },
        body,
      }),
    );
    return { status: res.status, ...((await res.json()) as any) };
  };
  for (const deep of ["[".repeat(20_000) + "]".repeat(20_000), `${'{"a":'.repeat(33)}1${"}".repeat(33)}`]) {
    const e = refusal(await ask(`{"i":{"note":${deep}}}`), "variables");
    assert.is(e.message, "Request body is nested too deeply (at most 32 levels)");
  }
  // 32 levels, as REST allows, pass.
  const ok = await ask(`{"i":${'{"a":'.repeat(31)}1${"}".repeat(31)}}`);
  assert.is(ok.status, 200, JSON.stringify(ok.errors));
  assert.is(ok.data.__typename, "Query");
});

doc("the standard introspection query fits every limit", async () => {
  const { getIntrospectionQuery } = await import("graphql");
  const res = await graphql(
    tk,
    getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
    }),
  );
  assert.is(res.status, 200, JSON.stringify(res.errors));
  assert.is(res.data.__schema.queryType.name, "Query");
});

// ---------------------------------------------------------------------------------------------------------
const intro = suite("GraphQL introspection and GraphiQL follow GRAPHQL_INTROSPECTION");

intro("the default is on in development and off when NODE_ENV=production; the variable decides over both", () => {
  assert.is(loadConfig({}).graphqlIntrospection, true);
  assert.is(loadConfig({ NODE_ENV: "development" }).graphqlIntrospection, true);
  assert.is(loadConfig({ NODE_ENV: "production" }).graphqlIntrospection, false);
  assert.is(loadConfig({ NODE_ENV: "production", GRAPHQL_INTROSPECTION: "on" }).graphqlIntrospection, true);
  assert.is(loadConfig({ GRAPHQL_INTROSPECTION: "off" }).graphqlIntrospection, false);
  assert.throws(
    () => loadConfig({ GRAPHQL_INTROSPECTION: "sometimes" }),
    (e: unknown) => e instanceof ConfigError && /GRAPHQL_INTROSPECTION/.test((e as Error).message),
  );
});

intro(
  "off: __schema and __type are a 400, __typename and the API still answer, GET /graphql serves no GraphiQL",
  async () => {
    const off = await createTestKernel({ plugins: [account], env: { GRAPHQL_INTROSPECTION: "off" } });
    try {
      for (const q of ["{ __schema { queryType { name } } }", '{ __type(name: "Query") { name } }']) {
        const e = refusal(await graphql(off, q), "introspection");
        assert.is(e.message, "GraphQL introspection is disabled on this server.");
      }
      assert.is((await graphql(off, "{ __typename }")).data.__typename, "Query");
      const p = await off.partner({ credits: 5 });
      assert.is(
        (await graphql(off, "{ me { credits_remaining } }", undefined, { key: p.key })).data.me.credits_remaining,
        5,
      );
      const app = createHttpApp(off.kernel, { adminToken: off.adminToken });
      const page = await app.fetch(
        new Request("http://t/graphql", { headers: { accept: "text/html", "user-agent": UA } }),
      );
      assert.ok(page.status >= 400 && page.status < 500, `GraphiQL refused (${page.status})`);
      assert.not.match(await page.text(), /graphiql/i);
    } finally {
      await off.close();
    }
  },
);

// ---------------------------------------------------------------------------------------------------------
// On a real server: the client address is known (srvx's request.ip, the upgrade's socket).

async function onServer(options: { redisUrl?: string } = {}) {
  const kernel = await createTestKernel({ plugins: [account], redisUrl: options.redisUrl });
  const server = await serveHttp(kernel.kernel, { adminToken: kernel.adminToken, port: 0, hostname: "127.0.0.1" });
  const base = server.url.replace(/\/$/, "");
  return { tk: kernel, server, base, wsUrl: `${base.replace(/^http/, "ws")}/graphql` };
}

async function post(base: string, body: string, key?: string): Promise<Response> {
  return fetch(`${base}/graphql`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": UA,
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body,
    signal: AbortSignal.timeout(120_000),
  });
}

const live = suite("GraphQL limits on a real server");
let s: Awaited<ReturnType<typeof onServer>>;
live.before.each(async () => {
  s = await onServer();
});
live.after.each(async () => {
  await s.server.close();
  await s.tk.close();
});

live("150,000 aliases (2.9 MB) are refused with a 4xx, and /healthz answers meanwhile", async () => {
  const bomb = post(s.base, JSON.stringify({ query: aliases(150_000) }));
  const health = fetch(`${s.base}/healthz`, { headers: { "user-agent": UA }, signal: AbortSignal.timeout(120_000) });
  const [res, h] = await Promise.all([bomb, health]);
  assert.is(res.status, 413);
  assert.is(((await res.json()) as any).errors[0].extensions.code, "PAYLOAD_TOO_LARGE");
  assert.is(h.status, 200);
  // Bombs that fit the body cap are refused by their size or their tokens; the server is still there.
  for (const [n, limit] of [
    [40_000, "document"],
    [5_000, "tokens"],
  ] as const) {
    const under = await post(s.base, JSON.stringify({ query: aliases(n) }));
    assert.is(under.status, 400);
    assert.is(((await under.json()) as any).errors[0].extensions.limit, limit);
  }
  assert.is((await fetch(`${s.base}/healthz`, { headers: { "user-agent": UA } })).status, 200);
});

/** A raw graphql-ws socket: its messages, its close code, and whether the upgrade was refused. */
function socket(url: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, "graphql-transport-ws", { headers: { "user-agent": UA, ...headers } });
  const messages: any[] = [];
  const opened = new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) =>
      reject(
        Object.assign(new Error(`upgrade refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers }),
      ),
    );
    ws.once("error", reject);
  });
  const closing = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  // A bound on "is closed at all" (not a timing assertion): a socket left open fails the test instead of hanging it.
  const closed = Promise.race([
    closing,
    new Promise<string>((resolve) => setTimeout(() => resolve("still open after 60 s"), 60_000).unref()),
  ]);
  ws.on("message", (data) => messages.push(JSON.parse(String(data))));
  const next = async (type: string) => {
    for (let i = 0; i < 600 && !messages.some((m) => m.type === type); i++) await new Promise((r) => setTimeout(r, 50));
    return messages.find((m) => m.type === type);
  };
  return { ws, messages, opened, closed, next, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

live("WebSocket: connection_init without a valid key is closed with 4403", async () => {
  for (const payload of [{}, { authorization: "Bearer svc_partner_notakeyatallnotakey" }]) {
    const c = socket(s.wsUrl);
    await c.opened;
    c.send({ type: "connection_init", payload });
    assert.is(await c.closed, 4403);
    c.ws.terminate();
    assert.not.ok(c.messages.some((m) => m.type === "connection_ack"));
  }
});

live("WebSocket: a frame over the cap closes the socket (1009) before connection_init is looked at", async () => {
  const p = await s.tk.partner();
  const c = socket(s.wsUrl);
  await c.opened;
  c.send({
    type: "connection_init",
    payload: { authorization: `Bearer ${p.key}`, pad: "x".repeat(GRAPHQL_LIMITS.websocketFrameBytes) },
  });
  assert.is(await c.closed, 1009);
  c.ws.terminate();
});

live("WebSocket: subscribe meets the same document limits, as an `error` message", async () => {
  const p = await s.tk.partner();
  const c = socket(s.wsUrl);
  await c.opened;
  c.send({ type: "connection_init", payload: { authorization: `Bearer ${p.key}` } });
  assert.ok(await c.next("connection_ack"));
  const cases: Array<[string, string]> = [
    ["aliases", aliases(GRAPHQL_LIMITS.aliases + 1)],
    ["tokens", aliases(5_000)],
    ["depth", `{ __type(name: "Query") ${"{ ofType ".repeat(25)}{ name }${" }".repeat(25)} }`],
    [
      "aliases",
      `subscription { ${Array.from({ length: 25 }, (_, i) => `s${i}: jobUpdates(id: "svc-x") { state }`).join(" ")} }`,
    ],
  ];
  for (const [i, [limit, query]] of cases.entries()) {
    c.send({ id: String(i), type: "subscribe", payload: { query } });
    for (let n = 0; n < 600 && !c.messages.some((m) => m.id === String(i)); n++)
      await new Promise((r) => setTimeout(r, 50));
    const m = c.messages.find((x) => x.id === String(i));
    assert.is(m?.type, "error", JSON.stringify(m));
    const e = m.payload.find((x: any) => x.extensions?.limit === limit);
    assert.ok(e, `${limit}: ${JSON.stringify(m.payload)}`);
    assert.is(e.extensions.status, 400);
    assert.not.ok("http" in e.extensions);
  }
  // The socket is still usable for a document within the limits.
  c.send({ id: "ok", type: "subscribe", payload: { query: "{ me { credits_remaining } }" } });
  for (let n = 0; n < 600 && !c.messages.some((m) => m.id === "ok" && m.type === "next"); n++)
    await new Promise((r) => setTimeout(r, 50));
  assert.is(c.messages.find((m) => m.id === "ok" && m.type === "next")?.payload.data.me.credits_remaining, 1000);
  c.ws.close();
});

// ---------------------------------------------------------------------------------------------------------
// The budget of callers without a valid key, per client address, on both counter stores.
const redis = await redisUrl();
for (const backend of [
  { name: "memory counters", redisUrl: undefined },
  ...(redis ? [{ name: "Redis counters", redisUrl: redis }] : []),
]) {
  const budget = suite(`GraphQL: unauthenticated calls per client address (${backend.name})`);
  let b: Awaited<ReturnType<typeof onServer>>;
  budget.before(async () => {
    b = await onServer({ redisUrl: backend.redisUrl });
  });
  budget.after(async () => {
    await b.server.close();
    await b.tk.close();
  });

  budget(
    "an address spends its budget; then HTTP is a 429 and a WebSocket upgrade refused, while keyed calls go on",
    async () => {
      const p = await b.tk.partner({ credits: 9 });
      for (let i = 0; i < GRAPHQL_LIMITS.unauthenticatedPerMinute; i++) {
        const res = await post(
          b.base,
          JSON.stringify({ query: "{ __typename }" }),
          i % 2 ? "svc_partner_notakeyatallnotakey" : undefined,
        );
        assert.is(res.status, 200, `call ${i + 1}`);
        await res.body?.cancel();
      }
      const refused = await post(b.base, JSON.stringify({ query: "{ __typename }" }));
      assert.is(refused.status, 429);
      assert.ok(Number(refused.headers.get("retry-after")) >= 10);
      const body = (await refused.json()) as any;
      assert.is(body.errors[0].message, "Rate limit exceeded. Wait at least 10 seconds, then retry.");
      assert.is(body.errors[0].extensions.code, "RATE_LIMITED");
      assert.is(body.errors[0].extensions.status, 429);

      // A valid key is not counted against the address.
      const keyed = await post(b.base, JSON.stringify({ query: "{ me { credits_remaining } }" }), p.key);
      assert.is(keyed.status, 200);
      assert.is(((await keyed.json()) as any).data.me.credits_remaining, 9);

      // The same budget holds for WebSocket upgrades without a key in their headers.
      const ws = socket(b.wsUrl);
      const upgrade = await ws.opened.then(
        () => 101,
        (e: { status?: number }) => e.status,
      );
      assert.is(upgrade, 429);
      const withKey = socket(b.wsUrl, { authorization: `Bearer ${p.key}` });
      await withKey.opened;
      withKey.send({ type: "connection_init", payload: {} });
      assert.ok(await withKey.next("connection_ack"), "a key in the upgrade's headers authenticates the connection");
      withKey.ws.close();
    },
  );

  budget.run();
}

doc.run();
intro.run();
live.run();
