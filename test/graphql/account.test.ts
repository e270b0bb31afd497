// The account endpoints through GraphQL, against the same endpoints through REST, on every database
// backend: same data, same error texts (REST status in `extensions.status`), same usage counting.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import textStats from "../../examples/text-stats-plugin/index.ts";
import account from "../../plugins/account/index.ts";
import { graphql } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { testKernel } from "../helpers/kernel-suite.ts";
import { ticker } from "./fixtures.ts";

// Every field of the typed results, so a whole body compares with REST's.
const CREDITS = "request_id credits_remaining pricing_tier credit_cost_per_analysis costs";
const ME = "request_id name api_key_prefix pricing_tier credits_remaining is_active created_at last_active";
const TRANSACTIONS = "request_id total limit offset transactions { amount type description created_at }";
const withoutRequestId = ({ request_id, ...rest }: Record<string, unknown>) => {
  assert.match(String(request_id), /^req_[0-9a-f]{24}$/);
  return rest;
};

for (const backend of await databaseBackends()) {
  const t = suite(`GraphQL account API on ${backend.name}`);
  const tk = testKernel(t, backend, { plugins: [account, textStats, ticker] });

  t("credits and me: the REST bodies, in one document", async () => {
    const p = await tk.partner({ name: "Acme", credits: 1234, tier: "standard" });
    const res = await graphql(tk, `{ credits { ${CREDITS} } me { ${ME} } }`, undefined, { key: p.key });
    assert.is(res.status, 200);
    assert.is(res.errors, undefined);
    const credits = await tk.request("GET", "/credits", { key: p.key });
    const me = await tk.request("GET", "/me", { key: p.key });
    assert.equal(withoutRequestId(res.data.credits), withoutRequestId(credits.body));
    assert.equal(withoutRequestId(res.data.me), withoutRequestId(me.body));
    assert.is(res.data.me.credits_remaining, 1234);
  });

  t("transactions: the same page as REST, with the same arguments", async () => {
    const p = await tk.partner({ credits: 1000, features: { text_stats: true } });
    for (let i = 0; i < 3; i++) {
      const r = await graphql(
        tk,
        "mutation($text: String!) { textStats(input: { text: $text }) { words } }",
        { text: `hello world-${i}` },
        { key: p.key },
      );
      assert.is(r.errors, undefined, JSON.stringify(r.errors));
      assert.is(r.data.textStats.words, 2);
    }
    for (const [args, query] of [
      ["", ""],
      ["(limit: 2, offset: 1)", "?limit=2&offset=1"],
      ["(limit: 1000)", "?limit=1000"],
    ] as const) {
      const g = await graphql(tk, `{ transactions${args} { ${TRANSACTIONS} } }`, undefined, { key: p.key });
      const r = await tk.request("GET", `/transactions${query}`, { key: p.key });
      assert.is(r.status, 200);
      assert.equal(withoutRequestId(g.data.transactions), withoutRequestId(r.body), args);
    }
    const g = await graphql(tk, `{ transactions(limit: 2, offset: 1) { ${TRANSACTIONS} } }`, undefined, { key: p.key });
    assert.equal(
      g.data.transactions.transactions.map((e: any) => e.amount),
      [-3, -3],
    );
  });

  t("usage: GraphQL calls count under the REST endpoint they run", async () => {
    const p = await tk.partner();
    await graphql(tk, "{ me { credits_remaining } }", undefined, { key: p.key });
    await graphql(tk, "{ me { credits_remaining } credits { credits_remaining } }", undefined, { key: p.key });
    await tk.request("GET", "/me", { key: p.key });
    const g = await graphql(
      tk,
      '{ usage(since: "2020-01-01") { total_calls per_endpoint { endpoint calls credits_used } } }',
      undefined,
      { key: p.key },
    );
    const byEndpoint = Object.fromEntries(g.data.usage.per_endpoint.map((e: any) => [e.endpoint, e.calls]));
    assert.equal(byEndpoint, { "GET /me": 3, "GET /credits": 1, "GET /usage": 1 });
    const r = await tk.request("GET", "/usage?since=2020-01-01", { key: p.key });
    assert.is(r.body.total_calls, g.data.usage.total_calls + 1);
  });

  t("authentication errors carry the REST text and status; the HTTP status stays 200", async () => {
    const p = await tk.partner();
    const cases: Array<[Record<string, string>, number, string, string]> = [
      [{}, 401, "UNAUTHENTICATED", "Missing or invalid Authorization header"],
      [{ authorization: "Basic abc" }, 401, "UNAUTHENTICATED", "Missing or invalid Authorization header"],
      [{ authorization: "Bearer svc_partner_doesnotexist000" }, 401, "UNAUTHENTICATED", "Invalid API key"],
    ];
    for (const [headers, status, code, message] of cases) {
      const g = await graphql(tk, "{ me { credits_remaining } }", undefined, { headers });
      const r = await tk.request("GET", "/me", { headers });
      assert.is(g.status, 200);
      assert.equal(g.data, { me: null });
      assert.is(g.errors!.length, 1);
      assert.is(g.errors![0]!.message, message);
      assert.is(g.errors![0]!.message, r.body.error);
      assert.equal(g.errors![0]!.path, ["me"]);
      assert.is(g.errors![0]!.extensions!.status, status);
      assert.is(r.status, status);
      assert.is(g.errors![0]!.extensions!.code, code);
    }
    await tk.kernel.accounts.update(p.id, { isActive: false });
    const off = await graphql(tk, "{ me { credits_remaining } }", undefined, { key: p.key });
    assert.is(off.errors![0]!.message, (await tk.request("GET", "/me", { key: p.key })).body.error);
  });

  t("the edge rule: a generic library's User-Agent is 'error code: 1010', 403", async () => {
    const p = await tk.partner();
    for (const userAgent of ["python-requests/2.31.0", null]) {
      const g = await graphql(tk, "{ me { credits_remaining } }", undefined, { key: p.key, userAgent });
      assert.is(g.errors![0]!.message, "error code: 1010");
      assert.is(g.errors![0]!.extensions!.status, 403);
    }
  });

  t("bad pagination: the REST 400 texts; other fields of the document still answer", async () => {
    const p = await tk.partner();
    for (const [args, query] of [
      ["limit: 0", "limit=0"],
      ["limit: -5", "limit=-5"],
      ["offset: -1", "offset=-1"],
    ] as const) {
      const g = await graphql(tk, `{ me { credits_remaining } transactions(${args}) { total } }`, undefined, {
        key: p.key,
      });
      const r = await tk.request("GET", `/transactions?${query}`, { key: p.key });
      assert.is(r.status, 400);
      assert.is(g.errors!.length, 1);
      assert.is(g.errors![0]!.message, r.body.error);
      assert.is(g.errors![0]!.extensions!.status, 400);
      assert.is(g.errors![0]!.extensions!.code, "BAD_REQUEST");
      assert.equal(g.errors![0]!.path, ["transactions"]);
      assert.is(g.data.transactions, null);
      assert.is(g.data.me.credits_remaining, 1000);
    }
    const since = await graphql(tk, '{ usage(since: "last-week") { total_calls } }', undefined, { key: p.key });
    assert.is(since.errors![0]!.message, "since must be an ISO 8601 date or timestamp");
  });

  t("402 carries credits_remaining, a switched-off feature its name, as REST bodies do", async () => {
    const p = await tk.partner({ credits: 3, features: { text_stats: false } });
    const g = await graphql(tk, "mutation { tick(input: { credits: 4 }) }", undefined, { key: p.key });
    const r = await tk.request("POST", "/tick", { key: p.key, body: { credits: 4 } });
    assert.equal(errorBody(r), { error: "Insufficient credits", credits_remaining: 3 });
    assert.is(g.errors![0]!.message, "Insufficient credits");
    assert.equal(g.errors![0]!.extensions, { code: "PAYMENT_REQUIRED", status: 402, credits_remaining: 3 });
    const f = await graphql(tk, 'mutation { textStats(input: { text: "hi" }) { words } }', undefined, { key: p.key });
    assert.equal(f.errors![0]!.extensions, { code: "FORBIDDEN", status: 403, feature: "text_stats" });
    assert.is(f.errors![0]!.message, "Feature 'text_stats' is not enabled for this partner.");
    assert.is(await tk.kernel.accounts.balance(p.id), 3);
  });

  t("validation texts of a mutation input are the REST texts, checked before any charge", async () => {
    const p = await tk.partner({ credits: 50, features: { text_stats: true } });
    const g = await graphql(tk, 'mutation { textStats(input: { text: "   " }) { words } }', undefined, { key: p.key });
    assert.is(g.errors![0]!.message, "Please provide a text");
    assert.is(g.errors![0]!.extensions!.status, 400);
    const big = await graphql(
      tk,
      "mutation($t: String!) { textStats(input: { text: $t }) { words } }",
      { t: "x".repeat(1_100_000) },
      { key: p.key },
    );
    assert.is(big.errors![0]!.message, "Request body too large");
    assert.is(big.errors![0]!.extensions!.status, 413);
    assert.is(await tk.kernel.accounts.balance(p.id), 50);
  });

  t("rate limits: the REST budget and text; Retry-After on the response and in the error", async () => {
    const p = await tk.partner();
    await tk.kernel.accounts.update(p.id, { limits: { rate_limits: { "GET /me": 2 } } });
    assert.is((await graphql(tk, "{ me { credits_remaining } }", undefined, { key: p.key })).errors, undefined);
    const ok = await tk.request("GET", "/me", { key: p.key });
    assert.is(ok.status, 200, "REST and GraphQL share one budget");
    const g = await graphql(tk, "{ me { credits_remaining } credits { credits_remaining } }", undefined, {
      key: p.key,
    });
    assert.is(g.status, 200);
    assert.is(g.errors!.length, 1);
    assert.is(g.errors![0]!.message, "Rate limit exceeded. Wait at least 10 seconds, then retry.");
    assert.is(g.errors![0]!.extensions!.status, 429);
    assert.ok(g.errors![0]!.extensions!.retry_after_seconds >= 10);
    assert.ok(Number(g.headers.get("retry-after")) >= 10, "the refusal's headers win over the other field's");
    assert.ok(g.data.credits);
  });

  t("a GraphQL syntax or type error is GraphQL's own, and runs nothing", async () => {
    const p = await tk.partner();
    const g = await graphql(tk, "{ me(", undefined, { key: p.key });
    assert.ok(g.errors![0]!.message.startsWith("Syntax Error"));
    const unknown = await graphql(tk, "{ nope }", undefined, { key: p.key });
    assert.ok(unknown.errors![0]!.message.includes("nope"));
    const usage = await tk.request("GET", "/usage", { key: p.key });
    assert.equal(
      usage.body.per_endpoint.map((e: any) => e.endpoint),
      ["GET /usage"],
    );
  });

  t.run();
}
