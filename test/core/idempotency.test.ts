// Idempotency-Key on the POSTs that create jobs (core/idempotency.ts), on every database backend: a retry with
// the same key and request answers the first response again without a second charge; another request under
// the key is a 409; identical requests racing make one job; keys are per account; a refused request leaves
// the key free; the 24-hour window; a malformed key; and POST /extend-music keeps its own rule.
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { IDEMPOTENCY_ERRORS as E } from "../../core/idempotency.ts";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { partnerRows } from "../helpers/partner-reads.ts";

const LIMITS = {
  inflight_jobs: 50,
  rate_limits: { "POST /generate-image": 10_000, "POST /extend-music": 10_000, "GET /credits": 10_000 },
};
const IMAGE = { prompt: "a lighthouse at dusk", model: "image-a-pro", quality: "2K", aspect_ratio: "1:1" };

for (const backend of await databaseBackends()) {
  const t = suite(`Idempotency-Key on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    tk = await createTestKernel({
      plugins: [account, imagesSandbox, images, musicSandbox, music],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      env: { SANDBOX_LATENCY_MS: "50", PUBLIC_URL: "https://media.example.test" },
    });
  });
  t.after(async () => {
    await tk.close();
  });

  const db = () => tk.kernel.database.kysely as Kysely<any>;
  const jobs = (partnerId: string) => partnerRows(tk, "jobs", partnerId);
  const usage = (partnerId: string) => partnerRows(tk, "ledger", partnerId, "usage");
  const post = (key: string, body: unknown, idem?: string) =>
    tk.request("POST", "/generate-image", {
      key,
      body,
      headers: idem === undefined ? {} : { "idempotency-key": idem },
    });

  t("a retry with the same key and request answers the first response, charged once", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: LIMITS });
    const first = await post(key, IMAGE, "order-42");
    assert.is(first.status, 202, JSON.stringify(first.body));
    assert.is(first.headers.get("idempotent-replayed"), null);
    // The same request by value: another key order is the same JSON object.
    const again = await post(
      key,
      { aspect_ratio: "1:1", quality: "2K", model: "image-a-pro", prompt: "a lighthouse at dusk" },
      "order-42",
    );
    assert.is(again.status, 202);
    assert.equal(again.body, first.body);
    assert.is(again.headers.get("idempotent-replayed"), "true");
    assert.equal([await jobs(id), await usage(id)], [1, 1]);
    assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 1000 - first.body.credits_used);
    // Without a key, or with another key, a request is new.
    assert.is((await post(key, IMAGE)).status, 202);
    assert.is((await post(key, IMAGE, "order-43")).status, 202);
    assert.equal([await jobs(id), await usage(id)], [3, 3]);
  });

  t("another request under a used key is a 409, and charges nothing", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: LIMITS });
    assert.is((await post(key, IMAGE, "k-1")).status, 202);
    const other = await post(key, { ...IMAGE, prompt: "a lighthouse at dawn" }, "k-1");
    assert.equal([other.status, other.body.error], [409, E.conflict]);
    assert.equal([await jobs(id), await usage(id)], [1, 1]);
  });

  t("identical requests racing make one job, and all answer it", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: LIMITS });
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(key, IMAGE, "race-1")));
    assert.ok(
      answers.every((a) => a.status === 202),
      JSON.stringify(answers.map((a) => [a.status, a.body])),
    );
    assert.is(new Set(answers.map((a) => a.body.generation_id)).size, 1, JSON.stringify(answers.map((a) => a.body)));
    assert.equal([await jobs(id), await usage(id)], [1, 1]);
  });

  t("keys are per account; a refused request leaves its key free; the window is 24 hours", async () => {
    const a = await tk.partner({ credits: 1000, limits: LIMITS });
    const b = await tk.partner({ credits: 1000, limits: LIMITS });
    const ra = await post(a.key, IMAGE, "shared-key");
    const rb = await post(b.key, IMAGE, "shared-key");
    assert.equal([ra.status, rb.status], [202, 202]);
    assert.is.not(ra.body.generation_id, rb.body.generation_id);

    const poor = await tk.partner({ credits: 0, limits: LIMITS });
    assert.is((await post(poor.key, IMAGE, "retry-after-topup")).status, 402);
    assert.is((await post(poor.key, { ...IMAGE, model: "nope" }, "retry-after-topup")).status, 400);
    await tk.request("POST", `/api/v1/admin/partners/${poor.id}/credits`, {
      headers: { authorization: `Bearer ${tk.adminToken}` },
      body: { amount: 100, type: "purchase", description: "top-up" },
    });
    const paid = await post(poor.key, IMAGE, "retry-after-topup");
    assert.is(paid.status, 202, JSON.stringify(paid.body));

    tk.clock.advance(24 * 3600 * 1000 + 1000);
    const later = await post(a.key, IMAGE, "shared-key");
    assert.is(later.status, 202);
    assert.is.not(later.body.generation_id, ra.body.generation_id);
    assert.is(await jobs(a.id), 2);
    // The sweeper forgets keys past the window.
    await tk.kernel.retention.sweep();
    const left = await db().selectFrom("idempotency_keys").select("key").where("partner_id", "=", b.id).execute();
    assert.equal(left, []);
  });

  t("a malformed key is a 400 before anything; GraphQL mutations follow the same rule", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: LIMITS });
    for (const bad of ["", "a b", "x".repeat(256), "ключ"]) {
      const r = await tk
        .request("POST", "/generate-image", { key, body: IMAGE, headers: { "idempotency-key": bad } })
        .catch((e) => ({ status: 0, body: String(e) }));
      // Headers that fetch itself refuses (non-Latin-1) never reach us; the others are our 400.
      if (r.status !== 0) assert.equal([r.status, r.body.error], [400, E.badKey], JSON.stringify(bad));
    }
    assert.is(await jobs(id), 0);
    const mutation =
      "mutation($input: GenerateImageInput!) { generateImage(input: $input) { generation_id credits_used } }";
    const g1 = await graphql(tk, mutation, { input: IMAGE }, { key, headers: { "idempotency-key": "gql-1" } });
    const g2 = await graphql(tk, mutation, { input: IMAGE }, { key, headers: { "idempotency-key": "gql-1" } });
    assert.is(g1.errors, undefined, JSON.stringify(g1.errors));
    assert.equal(g2.data, g1.data);
    assert.equal([await jobs(id), await usage(id)], [1, 1]);
  });

  t("POST /extend-music keeps the spec's own rule (its 8-100 character key), not the kernel's", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: LIMITS });
    const r = await tk.request("POST", "/extend-music", {
      key,
      body: { track_id: 1 },
      headers: { "idempotency-key": "short" },
    });
    assert.is(r.status, 400);
    assert.is.not(r.body.error, E.badKey);
  });

  t.run();
}
