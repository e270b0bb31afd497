// The admin API: partners, tiers, switches, limits, credits, key rotation, and what each does to the
// partner API at once (cache invalidation).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import textStats from "../../examples/text-stats-plugin/index.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";

for (const backend of await databaseBackends()) {
  const t = suite(`admin API on ${backend.name}`);
  let tk: TestKernel;
  let admin: (method: string, path: string, body?: unknown, token?: string) => ReturnType<TestKernel["request"]>;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [account, textStats],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
    admin = (method, path, body, token = tk.adminToken) =>
      tk.request(method, `/api/v1/admin${path}`, { body, headers: { authorization: `Bearer ${token}` } });
  });
  t.after.each(async () => {
    await tk.close();
  });

  t("a missing or wrong admin token is a 401", async () => {
    assert.is((await tk.request("POST", "/api/v1/admin/partners", { body: { name: "x" } })).status, 401);
    assert.is((await admin("POST", "/partners", { name: "x" }, "wrong")).status, 401);
  });

  t("create shows the key once; initial credits are a purchase row; the key works", async () => {
    const res = await admin("POST", "/partners", { name: "Acme", credits: 500, pricing_tier: "standard" });
    assert.is(res.status, 201);
    const { partner_id, api_key, api_key_prefix } = res.body;
    assert.equal(Object.keys(res.body).sort(), [
      "api_key",
      "api_key_prefix",
      "credits_remaining",
      "name",
      "partner_id",
      "pricing_tier",
      "request_id",
    ]);
    assert.ok(api_key.startsWith("svc_partner_"));
    assert.is(api_key_prefix, api_key.slice(0, 20));
    assert.is(res.body.credits_remaining, 500);
    const got = await admin("GET", `/partners/${partner_id}`);
    assert.is(got.status, 200);
    assert.not.ok("api_key" in got.body);
    assert.not.ok(JSON.stringify(got.body).includes(api_key));
    const tx = await tk.request("GET", "/transactions", { key: api_key });
    assert.equal(
      tx.body.transactions.map((e: any) => [e.amount, e.type]),
      [[500, "purchase"]],
    );
    const stored = await tk.kernel.database.kysely.selectFrom("partners").selectAll().executeTakeFirstOrThrow();
    assert.not.ok(JSON.stringify(stored).includes(api_key), "only the hash is stored");
  });

  t("validation: names, tiers, unknown switches and limits are 400s", async () => {
    assert.equal(errorBody(await admin("POST", "/partners", {})), { error: "name is required" });
    assert.equal(errorBody(await admin("POST", "/partners", { name: "x", pricing_tier: "gold" })), {
      error: "pricing_tier must be api_plus10, standard or custom",
    });
    assert.equal(errorBody(await admin("POST", "/partners", { name: "x", features: { teleport: true } })), {
      error: "Unknown feature switch: teleport",
    });
    const { partner_id } = (await admin("POST", "/partners", { name: "x" })).body;
    assert.equal(
      errorBody(await admin("PATCH", `/partners/${partner_id}`, { limits: { rate_limits: { "GET /nowhere": 5 } } })),
      { error: "Unknown rate limit: GET /nowhere" },
    );
    assert.is((await admin("PATCH", `/partners/${partner_id}`, { limits: { inflight_jobs: 0 } })).status, 400);
    assert.is((await admin("GET", "/partners/prt_0000000000000000")).status, 404);
  });

  t("a field a request does not take is a 400 naming it, and nothing is made (limits are set with PATCH)", async () => {
    const partners = async () =>
      Number(
        (
          await tk.kernel.database.kysely
            .selectFrom("partners")
            .select((e) => e.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await partners();
    assert.equal(errorBody(await admin("POST", "/partners", { name: "x", limits: { inflight_jobs: 5 } })), {
      error: 'unknown field "limits" (this request takes: name, credits, pricing_tier, features)',
    });
    assert.equal(errorBody(await admin("POST", "/partners", { name: "x", limits: {}, custom_rates: {} })), {
      error: 'unknown fields "limits", "custom_rates" (this request takes: name, credits, pricing_tier, features)',
    });
    // Many made-up keys: the first five are named, not all of them.
    const many = Object.fromEntries([["name", "x"], ...Array.from({ length: 2000 }, (_, i) => [`k${i}`, i])]);
    assert.equal(errorBody(await admin("POST", "/partners", many)), {
      error:
        'unknown fields "k0", "k1", "k2", "k3", "k4" and 1995 more (this request takes: name, credits, pricing_tier, features)',
    });
    assert.is(await partners(), before);
    const { partner_id } = (await admin("POST", "/partners", { name: "x" })).body;
    assert.is((await admin("PATCH", `/partners/${partner_id}`, { nmae: "y" })).status, 400);
    assert.is(
      (
        await admin("POST", `/partners/${partner_id}/credits`, {
          amount: 5,
          type: "purchase",
          description: "d",
          note: "n",
        })
      ).status,
      400,
    );
    assert.is((await admin("GET", `/partners/${partner_id}`)).body.name, "x");
    assert.is((await admin("GET", `/partners/${partner_id}`)).body.credits_remaining, 0);
  });

  t("rotate-key: the old key stops at once, the new one works", async () => {
    const { partner_id, api_key } = (await admin("POST", "/partners", { name: "x" })).body;
    assert.is((await tk.request("GET", "/me", { key: api_key })).status, 200); // now cached
    const rotated = await admin("POST", `/partners/${partner_id}/rotate-key`);
    assert.is(rotated.status, 200);
    assert.equal(errorBody(await tk.request("GET", "/me", { key: api_key })), { error: "Invalid API key" });
    assert.is((await tk.request("GET", "/me", { key: rotated.body.api_key })).status, 200);
  });

  t("deactivation and switches take effect at once despite the key cache", async () => {
    const { partner_id, api_key } = (await admin("POST", "/partners", { name: "x", credits: 10 })).body;
    assert.is((await tk.request("POST", "/text-stats", { key: api_key, body: { text: "a" } })).status, 200);
    await admin("PATCH", `/partners/${partner_id}`, { features: { text_stats: false } });
    assert.is((await tk.request("POST", "/text-stats", { key: api_key, body: { text: "a" } })).status, 403);
    await admin("PATCH", `/partners/${partner_id}`, { is_active: false });
    assert.equal(errorBody(await tk.request("GET", "/me", { key: api_key })), { error: "API key deactivated" });
    const view = await admin("PATCH", `/partners/${partner_id}`, {
      is_active: true,
      pricing_tier: "custom",
      custom_rates: { text_stats: 1 },
    });
    assert.is(view.body.pricing_tier, "custom");
    await admin("PATCH", `/partners/${partner_id}`, { features: { text_stats: true } });
    const res = await tk.request("POST", "/text-stats", { key: api_key, body: { text: "a" } });
    assert.is(res.body.credits_used, 1, "the negotiated rate applies");
  });

  t("custom tier without a negotiated rate: 400 before any charge", async () => {
    const { api_key } = (await admin("POST", "/partners", { name: "x", credits: 10, pricing_tier: "custom" })).body;
    const res = await tk.request("POST", "/text-stats", { key: api_key, body: { text: "a" } });
    assert.is(res.status, 400);
    assert.equal((await tk.request("GET", "/me", { key: api_key })).body.credits_remaining, 10);
  });

  t("credits: purchase and adjustment rows; /me shows the new balance at once", async () => {
    const { partner_id, api_key } = (await admin("POST", "/partners", { name: "x", credits: 10 })).body;
    assert.is((await tk.request("GET", "/me", { key: api_key })).body.credits_remaining, 10);
    assert.equal(
      (await admin("POST", `/partners/${partner_id}/credits`, { amount: 90, type: "purchase", description: "Top-up" }))
        .body.credits_remaining,
      100,
    );
    assert.is((await tk.request("GET", "/me", { key: api_key })).body.credits_remaining, 100);
    assert.equal(
      (
        await admin("POST", `/partners/${partner_id}/credits`, {
          amount: -5,
          type: "adjustment",
          description: "Goodwill reversal",
        })
      ).body.credits_remaining,
      95,
    );
    assert.is(
      (await admin("POST", `/partners/${partner_id}/credits`, { amount: -500, type: "adjustment", description: "x" }))
        .status,
      400,
    );
    assert.is(
      (await admin("POST", `/partners/${partner_id}/credits`, { amount: -5, type: "purchase", description: "x" }))
        .status,
      400,
    );
    const tx = await tk.request("GET", "/transactions", { key: api_key });
    assert.equal(
      tx.body.transactions.map((e: any) => [e.amount, e.type, e.description]),
      [
        [-5, "adjustment", "Goodwill reversal"],
        [90, "purchase", "Top-up"],
        [10, "purchase", "Initial credits"],
      ],
    );
  });

  t.run();
}
