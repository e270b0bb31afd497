// The direct route (transports/graphql/direct.ts) against yoga answering the same request: every request
// below is sent to an app whose /graphql tries the direct route first and to one where yoga answers alone,
// and the two answers must be the same (status, type, rate-limit header names, body up to request ids).
// Which of them took the request is counted on yoga's fetch: the plain queries and mutations must never reach
// yoga, and everything the route declines must reach it with the body the client sent.
// The route reads no database of its own (the operations it runs are the ones every other test covers), so
// this file runs on the embedded database only.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import textStats from "../../examples/text-stats-plugin/index.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createGraphql, type GraphqlServer } from "../../transports/graphql/yoga.ts";
import { createHttpApp } from "../../transports/http.ts";
import { probe, ticker } from "./fixtures.ts";

const t = suite("GraphQL direct route");
let tk: TestKernel;
let key: string;
let direct: GraphqlServer;
let yogaCalls = 0;
let withDirect: ReturnType<typeof createHttpApp>;
let yogaOnly: ReturnType<typeof createHttpApp>;

const BODY_BYTES = 4_000;

t.before(async () => {
  tk = await createTestKernel({ plugins: [account, textStats, ticker, probe] });
  key = (await tk.partner({ credits: 1000, features: { text_stats: true } })).key;
  direct = createGraphql(tk.kernel, { limits: { bodyBytes: BODY_BYTES } });
  // yoga's fetch, counted (the server reaches yoga through its `yoga` property).
  const yoga = direct.yoga;
  const counted = (request: Request) => {
    yogaCalls++;
    return yoga.fetch(request);
  };
  direct.yoga = new Proxy(yoga, { get: (target, name) => (name === "fetch" ? counted : Reflect.get(target, name)) });
  withDirect = createHttpApp(tk.kernel, { adminToken: tk.adminToken, graphql: direct });
  yogaOnly = createHttpApp(tk.kernel, {
    adminToken: tk.adminToken,
    graphql: createGraphql(tk.kernel, { direct: false, limits: { bodyBytes: BODY_BYTES } }),
  });
});
t.after(async () => {
  await tk.close();
});

interface Sent {
  body: string | (() => ReadableStream<Uint8Array>);
  headers?: Record<string, string>;
  /** No key (default: the partner's). */
  anonymous?: boolean;
}

async function send(app: typeof withDirect, sent: Sent) {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json",
    "user-agent": "mediagate-tests/1.0",
    ...sent.headers,
  };
  if (!sent.anonymous) headers.authorization = `Bearer ${key}`;
  const body = typeof sent.body === "string" ? sent.body : sent.body();
  const res = await app.fetch(
    new Request("http://mediagate.test/graphql", { method: "POST", headers, body, duplex: "half" } as RequestInit),
  );
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    rateLimitHeaders: ["ratelimit", "ratelimit-policy", "retry-after"].filter((h) => res.headers.has(h)),
    // Request ids differ from call to call; the rate-limit counts from the first call to the second.
    body: text.replace(/req_[0-9a-f]{24}/g, "req_ID").replace(/"last_active":"[^"]*"/g, '"last_active":"T"'),
  };
}

/** Sends to both apps and compares; returns what the direct app answered and whether yoga answered it there. */
async function same(sent: Sent) {
  const before = yogaCalls;
  const a = await send(withDirect, sent);
  const viaYoga = yogaCalls > before;
  const b = await send(yogaOnly, sent);
  assert.equal(a, b, `answers differ for ${typeof sent.body === "string" ? sent.body.slice(0, 120) : "a stream"}`);
  return { ...a, viaYoga, json: a.type?.includes("json") ? JSON.parse(a.body) : undefined };
}

const q = (query: string, variables?: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ query, ...(variables === undefined ? {} : { variables }), ...extra });
const ME = "{ me { request_id name api_key_prefix pricing_tier credits_remaining is_active created_at } }";

t("plain queries and mutations are answered without yoga, as yoga answers them", async () => {
  const me = await same({ body: q(ME) });
  assert.is(me.viaYoga, false);
  assert.is(me.status, 200);
  assert.is(me.json.data.me.credits_remaining, 1000);
  assert.equal(me.rateLimitHeaders, ["ratelimit", "ratelimit-policy"]);

  const named = await same({
    body: q("query A { me { name } } query B { credits { credits_remaining } }", undefined, { operationName: "B" }),
  });
  assert.is(named.viaYoga, false);
  assert.equal(Object.keys(named.json.data), ["credits"]);

  const withVariables = await same({ body: q("query($l: Int) { transactions(limit: $l) { total limit } }", { l: 2 }) });
  assert.is(withVariables.viaYoga, false);
  assert.is(withVariables.json.data.transactions.limit, 2);

  // A mutation through each app: each charges once (3 credits), and the answers are the same.
  const mutation = await same({
    body: q("mutation($text: String!) { textStats(input: { text: $text }) { words } }", { text: "one two three" }),
  });
  assert.is(mutation.viaYoga, false);
  assert.is(mutation.json.data.textStats.words, 3);
  const after = await same({ body: q("{ credits { credits_remaining } }") });
  assert.is(after.json.data.credits.credits_remaining, 1000 - 2 * 3);
  // Introspection (on in tests) is a query like any other.
  assert.is((await same({ body: q("{ __schema { queryType { name } } }") })).viaYoga, false);
  // null variables and operationName are as good as none.
  assert.is((await same({ body: q(ME, null, { operationName: null }) })).viaYoga, false);
});

t("errors of execution: the REST texts in the body, a bug masked, status 200", async () => {
  const anonymous = await same({ body: q("{ me { name } }"), anonymous: true });
  assert.is(anonymous.viaYoga, false);
  assert.is(anonymous.status, 200);
  assert.is(anonymous.json.errors[0].extensions.status, 401);
  assert.equal(anonymous.json.data, { me: null });

  const bug = await same({ body: q("mutation { probeFail }") });
  assert.is(bug.viaYoga, false);
  assert.is(bug.json.errors[0].message, "Internal server error");
  assert.not.match(bug.body, /secret upstream detail/);
  assert.not.match(bug.body, /"http"|"unexpected"/);
});

t("what the route declines reaches yoga with the body the client sent", async () => {
  const declined: Sent[] = [
    { body: "{ not json" },
    { body: `[${q(ME)}]` },
    { body: q(ME, undefined, { extensions: {} }) },
    { body: q(ME, undefined, { surprise: 1 }) },
    { body: JSON.stringify({ query: 42 }) },
    { body: q(ME, [1]) },
    { body: q(ME, undefined, { operationName: 7 }) },
    { body: q("{ me {") },
    { body: q("{ me { nope } }") },
    { body: q("query A { me { name } } query B { me { name } }") },
    { body: q("query A { me { name } }", undefined, { operationName: "C" }) },
    { body: q("query($l: Int!) { transactions(limit: $l) { total } }") },
    { body: q("query($l: Int) { transactions(limit: $l) { total } }", { l: "many" }) },
    { body: q("mutation($text: String!) { textStats(input: { text: $text }) { words } }", { text: 5 }) },
    { body: q('subscription { jobUpdates(id: "nope") { state } }') },
    { body: q(`{ ${Array.from({ length: 30 }, (_, i) => `a${i}: me { name }`).join(" ")} }`) },
    // Variables nested deeper than a REST body may be.
    { body: q("query($x: JSON) { me { name } }", { x: JSON.parse("[".repeat(80) + "]".repeat(80)) }) },
    { body: q(ME), headers: { accept: "application/graphql-response+json" } },
    { body: q(ME), headers: { accept: "text/event-stream" } },
    { body: q(ME), headers: { accept: "application/json, text/plain" } },
    { body: q(ME), headers: { "content-type": "text/plain" } },
    { body: q(ME), headers: { "content-type": "application/graphql+json" } },
    { body: `\u0000${q(ME)}` },
  ];
  for (const sent of declined) {
    const answer = await same(sent);
    assert.ok(answer.viaYoga, `the route took ${String(sent.body).slice(0, 80)}`);
  }
  // Broken UTF-8 in the document: yoga meets the same bytes (they decode to U+FFFD on both routes).
  const broken = new Uint8Array([
    ...new TextEncoder().encode('{"query":"{ me { name } } # '),
    0xff,
    0xfe,
    ...new TextEncoder().encode('"}'),
  ]);
  const brokenAnswer = await same({ body: () => new Blob([broken]).stream() });
  assert.is(brokenAnswer.status, 200);
});

t("a body over the cap without a declared length: read to the cap, then handed whole to yoga's 413", async () => {
  const big = q(ME, { pad: "x".repeat(BODY_BYTES * 3) });
  const chunks = () => {
    const bytes = new TextEncoder().encode(big);
    let at = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.subarray(at, (at += 1000)));
      },
    });
  };
  const answer = await same({ body: chunks });
  assert.ok(answer.viaYoga);
  assert.is(answer.status, 413);
  // Within the cap, a chunked body is read and answered directly.
  const small = await same({ body: () => new Blob([q(ME)]).stream() });
  assert.is(small.viaYoga, false);
  assert.is(small.status, 200);
});

t.run();
