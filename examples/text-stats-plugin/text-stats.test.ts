// The example plugin's own test, as a third party would write it: the whole kernel in memory through the test
// kit (`mediagate/testing`), REST and GraphQL called in process, no server. `npm test` runs it.

import { createTestKernel, graphql, type TestKernel } from "mediagate/testing";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { TEXT_STATS_ERRORS } from "./errors.ts";
import textStatsPlugin from "./index.ts";
import { textStats } from "./operations.ts";

/** A test that runs `body` against a fresh kernel with the plugin, closed afterwards whatever happens. */
const withKernel = (body: (tk: TestKernel) => Promise<void>) => async () => {
  const tk = await createTestKernel({ plugins: [textStatsPlugin] });
  try {
    await body(tk);
  } finally {
    await tk.close();
  }
};

/** An account with the feature on, at the standard tier unless told. */
const customer = (tk: TestKernel, credits: number, tier: "standard" | "api_plus10" = "standard") =>
  tk.partner({ credits, tier, features: { text_stats: true } });

test("counts code points, words and sentences", () => {
  assert.equal(textStats("Héllo wörld. How are you?"), { characters: 25, words: 5, sentences: 2 });
  assert.equal(textStats("   "), { characters: 3, words: 0, sentences: 0 });
});

test(
  "REST: charged once at the account's tier, the result in the body",
  withKernel(async (tk) => {
    const standard = await customer(tk, 10);
    const res = await tk.request("POST", "/text-stats", {
      key: standard.key,
      body: { text: "One two. Three!", partner_job_id: "mine-1" },
    });
    assert.is(res.status, 200);
    assert.match(res.body.job_id, /^svc-[0-9a-f]{8}$/);
    assert.equal(
      { ...res.body, job_id: undefined, request_id: undefined },
      {
        job_id: undefined,
        request_id: undefined,
        partner_job_id: "mine-1",
        characters: 15,
        words: 3,
        sentences: 2,
        credits_used: 2,
        credits_remaining: 8,
      },
    );
    // api_plus10 pays ceil(2 * 11 / 10) = 3: the kernel's tier math, not the plugin's.
    const plus = await customer(tk, 10, "api_plus10");
    const r2 = await tk.request("POST", "/text-stats", { key: plus.key, body: { text: "a" } });
    assert.is(r2.body.credits_used, 3);
    assert.is(r2.body.credits_remaining, 7);
  }),
);

test(
  "REST: bad input, a switched-off feature and a short balance change nothing",
  withKernel(async (tk) => {
    const p = await customer(tk, 1);
    const empty = await tk.request("POST", "/text-stats", { key: p.key, body: { text: "  " } });
    assert.is(empty.status, 400);
    assert.is(empty.body.error, TEXT_STATS_ERRORS.text);
    const long = await tk.request("POST", "/text-stats", { key: p.key, body: { text: "x".repeat(10_001) } });
    assert.is(long.status, 400);
    assert.is(long.body.error, TEXT_STATS_ERRORS.tooLong);
    const broke = await tk.request("POST", "/text-stats", { key: p.key, body: { text: "fine" } });
    assert.is(broke.status, 402);
    assert.is(broke.body.credits_remaining, 1);
    const off = await tk.partner({ credits: 10, features: { text_stats: false } });
    const forbidden = await tk.request("POST", "/text-stats", { key: off.key, body: { text: "fine" } });
    assert.is(forbidden.status, 403);
    assert.is(await tk.kernel.accounts.balance(p.id), 1);
  }),
);

test(
  "GraphQL: the declared output is an object type the client selects from",
  withKernel(async (tk) => {
    const p = await customer(tk, 10);
    const res = await graphql(
      tk,
      "mutation($text: String!) { textStats(input: { text: $text }) { words sentences credits_used partner_job_id } }",
      { text: "Hi there." },
      { key: p.key },
    );
    assert.is(res.errors, undefined);
    assert.equal(res.data.textStats, { words: 2, sentences: 1, credits_used: 2, partner_job_id: null });
    const type = await graphql(
      tk,
      '{ __type(name: "Mutation") { fields { name type { kind ofType { kind } } } } }',
      undefined,
      { key: p.key },
    );
    const field = type.data.__type.fields.find((f: { name: string }) => f.name === "textStats");
    assert.is(field.type.kind === "NON_NULL" ? field.type.ofType.kind : field.type.kind, "OBJECT");
  }),
);

test.run();
