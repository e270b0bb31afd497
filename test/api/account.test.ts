// The account endpoints and the edge of the partner API (auth, edge rule, limits, switches), through
// app.fetch, on every database backend.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import textStats from "../../examples/text-stats-plugin/index.ts";
import account from "../../plugins/account/index.ts";
import { assertAnswer } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { jobPlugin } from "../helpers/job-plugin.ts";
import { testKernel } from "../helpers/kernel-suite.ts";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

// A test-only area with one job that holds an in-flight slot, to exercise the cap through REST.
const slots = jobPlugin("slots", "slot", undefined, {
  path: "/slots",
  limitPerMinute: 1000,
  inflight: true,
  body: z.object({ credits: z.number({ error: "credits must be a number" }).int().min(0) }),
  submit: ({ credits }) => ({ credits }),
  charged: true,
});

for (const backend of await databaseBackends()) {
  const t = suite(`account API on ${backend.name}`);
  const tk = testKernel(t, backend, { plugins: [account, textStats, slots] });

  t("GET /me returns the account record with request_id", async () => {
    const p = await tk.partner({ name: "Acme", credits: 1234 });
    const res = await tk.request("GET", "/me", { key: p.key });
    assertAnswer(
      res,
      200,
      "api_key_prefix created_at credits_remaining is_active last_active name pricing_tier request_id",
    );
    const { name, api_key_prefix, pricing_tier, credits_remaining, is_active } = res.body;
    assert.equal(
      { name, api_key_prefix, pricing_tier, credits_remaining, is_active },
      {
        name: "Acme",
        api_key_prefix: p.key.slice(0, 20),
        pricing_tier: "api_plus10",
        credits_remaining: 1234,
        is_active: true,
      },
    );
    assert.match(res.body.created_at, TIMESTAMP);
    assert.match(res.body.last_active, TIMESTAMP);
    assert.match(res.body.request_id, /^req_[0-9a-f]{24}$/);
    assert.not.ok(JSON.stringify(res.body).includes(p.key));
  });

  t("GET /credits: balance, tier, and the costs of the registered plugins", async () => {
    const p = await tk.partner({ credits: 77, tier: "standard" });
    const res = await tk.request("GET", "/credits", { key: p.key });
    assert.is(res.status, 200);
    assert.is(res.body.credits_remaining, 77);
    assert.is(res.body.pricing_tier, "standard");
    assert.is(res.body.credit_cost_per_analysis, 50);
    assert.equal(res.body.costs, { text_stats: 2 });
  });

  t("authentication: the spec's exact 401 and 403 texts", async () => {
    const p = await tk.partner();
    const cases: Array<[Record<string, string>, number, string]> = [
      [{}, 401, "Missing or invalid Authorization header"],
      [{ authorization: "Basic abc" }, 401, "Missing or invalid Authorization header"],
      [{ authorization: "Bearer sk_live_123" }, 401, "Missing or invalid Authorization header"],
      [{ authorization: "Bearer svc_partner_doesnotexist000" }, 401, "Invalid API key"],
    ];
    for (const [headers, status, error] of cases) {
      const res = await tk.request("GET", "/me", { headers });
      assert.is(res.status, status);
      assert.equal(errorBody(res), { error });
    }
    await tk.kernel.accounts.update(p.id, { isActive: false });
    const res = await tk.request("GET", "/me", { key: p.key });
    assert.is(res.status, 403);
    assert.equal(errorBody(res), { error: "API key deactivated" });
  });

  t("edge: a missing or generic User-Agent gets the HTML 403 error code: 1010, whatever the key", async () => {
    const p = await tk.partner();
    for (const ua of [
      null,
      "",
      "python-requests/2.31.0",
      "Go-http-client/1.1",
      "axios/1.6.0",
      "node-fetch/1.0",
      "undici",
      "okhttp/4.12.0",
      "Java/17.0.2",
      "libwww-perl/6.72",
      "Python-urllib/3.11",
    ]) {
      const res = await tk.request("GET", "/me", { key: p.key, userAgent: ua });
      assert.is(res.status, 403, String(ua));
      assert.ok(res.headers.get("content-type")!.startsWith("text/html"));
      assert.ok(String(res.body).includes("error code: 1010"));
    }
    // Even with no key at all the edge answers first: 1010 never means a wrong key, and vice versa.
    assert.is((await tk.request("GET", "/me", { userAgent: null })).status, 403);
    assert.is(
      (await tk.request("GET", "/me", { key: p.key, userAgent: "acme-integration/2.1 (python-requests/2.31)" })).status,
      200,
    );
  });

  t("GET /transactions: newest first, default 50, max 200", async () => {
    const p = await tk.partner({ credits: 1000, features: { text_stats: true } });
    for (let i = 0; i < 3; i++)
      assert.is(
        (await tk.request("POST", "/text-stats", { key: p.key, body: { text: `hello world ${i}` } })).status,
        200,
      );
    const res = await tk.request("GET", "/transactions", { key: p.key });
    assert.is(res.status, 200);
    assert.is(res.body.total, 4);
    assert.is(res.body.limit, 50);
    assert.is(res.body.offset, 0);
    assert.equal(
      res.body.transactions.map((e: any) => [e.amount, e.type]),
      [
        [-3, "usage"],
        [-3, "usage"],
        [-3, "usage"],
        [1000, "purchase"],
      ],
    );
    for (const e of res.body.transactions) {
      assert.equal(Object.keys(e).sort(), ["amount", "created_at", "description", "type"]);
      assert.match(e.created_at, TIMESTAMP);
    }
    const page = await tk.request("GET", "/transactions?limit=1000&offset=3", { key: p.key });
    assert.is(page.body.limit, 200);
    assert.equal(
      page.body.transactions.map((e: any) => e.type),
      ["purchase"],
    );
    assert.equal(errorBody(await tk.request("GET", "/transactions?limit=x", { key: p.key })), {
      error: "limit must be a positive integer",
    });
  });

  t("GET /usage counts every authenticated call, free ones included, with net credits per endpoint", async () => {
    const p = await tk.partner({ credits: 1000 });
    await tk.request("GET", "/me", { key: p.key });
    await tk.request("GET", "/me", { key: p.key });
    await tk.request("POST", "/text-stats", { key: p.key, body: { text: "one two" } });
    await tk.request("POST", "/text-stats", { key: p.key, body: {} }); // a 400 is still a call
    const res = await tk.request("GET", "/usage", { key: p.key });
    assert.is(res.status, 200);
    assert.is(res.body.since, null);
    assert.is(res.body.credits_remaining, 997);
    assert.is(res.body.total_calls, 5);
    assert.is(res.body.total_credits_used, 3);
    const byEndpoint = Object.fromEntries(
      res.body.per_endpoint.map((e: any) => [e.endpoint, [e.calls, e.credits_used]]),
    );
    assert.equal(byEndpoint, { "GET /me": [2, 0], "POST /text-stats": [2, 3], "GET /usage": [1, 0] });
  });

  t("GET /usage since filters to calls at or after it", async () => {
    const p = await tk.partner();
    await tk.request("GET", "/me", { key: p.key });
    tk.clock.advance(60_000);
    const cut = new Date(tk.clock.now()).toISOString();
    await tk.request("GET", "/me", { key: p.key });
    const res = await tk.request("GET", `/usage?since=${encodeURIComponent(cut)}`, { key: p.key });
    assert.is(res.body.since, cut.slice(0, 19).replace("T", " "));
    assert.equal(res.body.per_endpoint.find((e: any) => e.endpoint === "GET /me").calls, 1);
    assert.equal(errorBody(await tk.request("GET", "/usage?since=last-week", { key: p.key })), {
      error: "since must be an ISO 8601 date or timestamp",
    });
  });

  t("bad input changes nothing: no charge, no ledger row, no job", async () => {
    const p = await tk.partner({ credits: 50 });
    for (const body of [
      "{not json",
      "[1,2]",
      JSON.stringify({ text: "" }),
      JSON.stringify({ text: "ok", partner_job_id: "bad id!" }),
    ]) {
      const res = await tk.request("POST", "/text-stats", {
        key: p.key,
        body,
        headers: { "content-type": "application/json" },
      });
      assert.is(res.status, 400, body);
    }
    assert.equal(errorBody(await tk.request("POST", "/text-stats", { key: p.key, body: "{not json" })), {
      error: "Request body must be JSON",
    });
    assert.equal(errorBody(await tk.request("POST", "/text-stats", { key: p.key, body: { text: "" } })), {
      error: "Please provide a text",
    });
    const big = await tk.request("POST", "/text-stats", { key: p.key, body: { text: "x".repeat(1_100_000) } });
    assert.is(big.status, 413);
    const db = tk.kernel.database.kysely;
    assert.is((await db.selectFrom("ledger").selectAll().where("partner_id", "=", p.id).execute()).length, 1); // the opening purchase only
    assert.is((await db.selectFrom("jobs").selectAll().execute()).length, 0);
    assert.is(await tk.kernel.accounts.balance(p.id), 50);
  });

  t("a switched-off feature answers the spec's 403 body, before any charge", async () => {
    const p = await tk.partner({ features: { text_stats: false } });
    const res = await tk.request("POST", "/text-stats", { key: p.key, body: { text: "hi" } });
    assert.is(res.status, 403);
    assert.equal(errorBody(res), {
      error: "Feature 'text_stats' is not enabled for this partner.",
      feature: "text_stats",
    });
    assert.is(await tk.kernel.accounts.balance(p.id), 1000);
  });

  t(
    "rate limits: the table's limit per key and endpoint, draft RateLimit headers, 429 with Retry-After >= 10",
    async () => {
      const a = await tk.partner();
      const b = await tk.partner();
      for (let i = 0; i < 20; i++) assert.is((await tk.request("GET", "/usage", { key: a.key })).status, 200);
      const over = await tk.request("GET", "/usage", { key: a.key });
      assert.is(over.status, 429);
      assert.equal(errorBody(over), { error: "Rate limit exceeded. Wait at least 10 seconds, then retry." });
      assert.ok(Number(over.headers.get("retry-after")) >= 10);
      assert.ok(over.headers.get("ratelimit-policy")!.includes("q=20"));
      assert.ok(over.headers.get("ratelimit")!.includes("r=0"));
      // Another endpoint of the same key, and the same endpoint of another key, are separate budgets.
      assert.is((await tk.request("GET", "/me", { key: a.key })).status, 200);
      assert.is((await tk.request("GET", "/usage", { key: b.key })).status, 200);
      tk.clock.advance(60_000);
      assert.is((await tk.request("GET", "/usage", { key: a.key })).status, 200);
    },
  );

  t("per-account rate-limit override", async () => {
    const p = await tk.partner();
    await tk.kernel.accounts.update(p.id, { limits: { rate_limits: { "GET /usage": 2 } } });
    assert.is((await tk.request("GET", "/usage", { key: p.key })).status, 200);
    assert.is((await tk.request("GET", "/usage", { key: p.key })).status, 200);
    assert.is((await tk.request("GET", "/usage", { key: p.key })).status, 429);
  });

  t("in-flight cap through REST: 10 by default, raisable per account, the spec's 429 text", async () => {
    const p = await tk.partner({ credits: 100 });
    const results = await Promise.all(
      Array.from({ length: 15 }, () => tk.request("POST", "/slots", { key: p.key, body: { credits: 1 } })),
    );
    assert.is(results.filter((r) => r.status === 202).length, 10);
    const refused = results.filter((r) => r.status === 429);
    assert.is(refused.length, 5);
    assert.equal(errorBody(refused[0]!), {
      error: "Too many in-flight jobs for this partner. Wait for some to finish and retry.",
    });
    assert.is(await tk.kernel.accounts.balance(p.id), 90);
    await tk.kernel.accounts.update(p.id, { limits: { inflight_jobs: 12 } });
    assert.is((await tk.request("POST", "/slots", { key: p.key, body: { credits: 1 } })).status, 202);
    assert.is((await tk.request("POST", "/slots", { key: p.key, body: { credits: 1 } })).status, 202);
    assert.is((await tk.request("POST", "/slots", { key: p.key, body: { credits: 1 } })).status, 429);
  });

  t("402 wording comes from the operation and carries credits_remaining", async () => {
    const p = await tk.partner({ credits: 3 });
    const res = await tk.request("POST", "/slots", { key: p.key, body: { credits: 4 } });
    assert.is(res.status, 402);
    assert.equal(errorBody(res), { error: "Insufficient credits", credits_remaining: 3 });
  });

  t("unknown paths are JSON 404s; healthz answers", async () => {
    const p = await tk.partner();
    const res = await tk.request("GET", "/nope", { key: p.key });
    assert.is(res.status, 404);
    assert.equal(errorBody(res), { error: "Not found" });
    assert.equal((await tk.request("GET", "/healthz")).body, { status: "ok" });
  });

  t.run();
}
