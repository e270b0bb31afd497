// The Omni batch runner through the REST API on every database backend: per-section prices charged once (one
// ledger line) with one share per section, a partly failed batch ending `partial` with exactly the failed
// sections' shares refunded, `complete` and `error`, the batch holding one in-flight slot until its last
// section ends, its list, and refusals before any charge.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { batchStatus } from "../../plugins/omni/batch/records.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { ledgerAmounts } from "../helpers/ledger-amounts.ts";
import { newRunCache } from "../helpers/memo-engine.ts";
import { balance, ledgerSum } from "../helpers/partner-reads.ts";
import { character, OMNI_LIMITS, omniOptions, omniPluginsSharingRenders, png, until } from "./helpers.ts";

// Each distinct render once per file (test/omni/helpers.ts omniPluginsSharingRenders).
const PLUGINS = omniPluginsSharingRenders(newRunCache());

suite("batch status rule")("derived from the sections", () => {
  const s = (state: string, finished = true) => ({ state, finished });
  assert.is(batchStatus([s("complete"), s("processing", false)]), "processing");
  assert.is(batchStatus([s("complete"), s("complete")]), "complete");
  assert.is(batchStatus([s("error"), s("error")]), "error");
  assert.is(batchStatus([s("complete"), s("error")]), "partial");
});

for (const backend of await databaseBackends()) {
  const t = suite(`omni batch runner on ${backend.name}`);
  // One kernel for the suite: every test has partners of its own (balances, ledgers, batches, in-flight slots).
  const tk = suiteKernel(t, backend, omniOptions({}, PLUGINS));
  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: OMNI_LIMITS, ...opts });
  /** Submits a batch of `sections` for one character, with any other fields of the request. */
  const submitBatch = (key: string, characterId: string, sections: unknown[], more: Record<string, unknown> = {}) =>
    tk.request("POST", "/omni/script-runner", { key, body: { character_id: characterId, ...more, sections } });
  const batchDone = (key: string, id: string) =>
    until(tk, key, `/omni/script-runner/${id}`, (b) => b.status !== "processing");

  t("a partly failed batch ends partial: one charge, the failed section's share refunded once", async () => {
    const { key, id } = await partner({ credits: 2000 });
    const hero = await character(tk, key, "Hero", [40, 90, 200]);
    const villain = await character(tk, key, "Villain", [160, 20, 20]);
    const before = await balance(tk, key);
    const res = await submitBatch(
      key,
      hero,
      [
        { id: "intro", title: "Intro", content: 'Hero: "We begin here."', duration: 4 },
        { content: "The villain laughs [sandbox:fail]", duration: 6, character_id: villain },
        { id: "end", content: "Hero walks away", image_base64: png([250, 250, 0]) },
      ],
      { aspect_ratio: "16:9", partner_job_id: "batch-1" },
    );
    assert.is(res.status, 202, JSON.stringify(res.body));
    // 4 s 132, 6 s 143, 10 s (default) capped at the 8 s price: 154.
    assert.equal(
      res.body.jobs.map((j: any) => j.credits_used),
      [132, 143, 154],
    );
    assert.equal(
      res.body.jobs.map((j: any) => j.section_id),
      ["intro", "section-2", "end"],
    );
    assert.equal(
      res.body.jobs.map((j: any) => j.duration),
      [4, 6, 10],
    );
    assert.equal(
      [res.body.status, res.body.resolution, res.body.aspect_ratio, res.body.section_count, res.body.credits_used],
      ["processing", "1080p", "16:9", 3, 429],
    );
    assert.is(res.body.credits_remaining, before - 429);
    const jobIds = res.body.jobs.map((j: any) => j.job_id);
    assert.equal(await ledgerAmounts(tk, { partnerId: id, type: "usage", jobIds }), [-429]);

    const done = await batchDone(key, res.body.batch_id);
    assert.is(done.status, "partial", JSON.stringify(done));
    assert.equal(
      done.jobs.map((j: any) => j.status),
      ["complete", "error", "complete"],
    );
    assert.equal(
      done.jobs.map((j: any) => j.credits_refunded),
      [0, 143, 0],
    );
    assert.is(done.sections_complete, 2);
    assert.is(done.credits_refunded, 143);
    assert.ok(done.jobs[0].video_url && done.jobs[2].video_url && done.jobs[1].video_url === null);
    // Each section is an Omni video job of its own.
    const section = await tk.request("GET", `/omni/video/${res.body.jobs[0].job_id}`, { key });
    assert.equal(
      [section.body.status, section.body.resolution, section.body.aspect_ratio, section.body.duration],
      ["complete", "1080p", "16:9", 4],
    );
    assert.is(await balance(tk, key), before - 429 + 143);
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
    assert.equal(await ledgerAmounts(tk, { partnerId: id, type: "refund" }), [143]);

    const list = await tk.request("GET", "/omni/script-runner", { key });
    assert.is(list.status, 200);
    assert.equal([list.body.total, list.body.limit, list.body.offset], [1, 20, 0]);
    assert.is(list.body.batches[0].batch_id, res.body.batch_id);
    assert.is(list.body.batches[0].status, "partial");
  });

  t("every section failing ends error, all refunded; every section done ends complete", async () => {
    const { key, id } = await partner({ credits: 2000 });
    const hero = await character(tk, key, "Hero", [40, 90, 200]);
    const bad = await submitBatch(key, hero, [
      { content: "a [sandbox:fail]", duration: 4 },
      { content: "b [sandbox:unsafe]", duration: 4 },
    ]);
    const good = await submitBatch(key, hero, [{ content: "calm", duration: 4 }]);
    const badDone = await batchDone(key, bad.body.batch_id);
    const goodDone = await batchDone(key, good.body.batch_id);
    assert.is(badDone.status, "error");
    assert.is(badDone.credits_refunded, 264);
    assert.equal(
      badDone.jobs.map((j: any) => j.prompt_fixable),
      [false, true],
    );
    assert.is(goodDone.status, "complete");
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
  });

  // The sections are the previous test's good one ("calm", the same hero): one render serves them all.
  t("a batch holds one in-flight slot until its last section ends", async () => {
    const { key } = await partner({ credits: 5000, limits: { ...OMNI_LIMITS, inflight_jobs: 2 } });
    const hero = await character(tk, key, "Hero", [40, 90, 200]);
    const calm = { content: "calm", duration: 4 };
    const batch = await submitBatch(key, hero, [calm, calm, calm]);
    assert.is(batch.status, 202, JSON.stringify(batch.body));
    const second = await tk.request("POST", "/omni/video", { key, body: { prompt: "fits", duration: 4 } });
    assert.is(second.status, 202, "three sections took one slot, not three");
    const third = await tk.request("POST", "/omni/video", { key, body: { prompt: "over", duration: 4 } });
    assert.is(third.status, 429);
    await batchDone(key, batch.body.batch_id);
    await until(tk, key, `/omni/video/${second.body.job_id}`, (b) => b.status !== "processing");
    assert.is((await tk.request("POST", "/omni/video", { key, body: { prompt: "now", duration: 4 } })).status, 202);
  });

  t("refusals before any charge: shape, sizes, foreign characters, credits", async () => {
    const owner = await partner({ credits: 2000 });
    const { key, id } = await partner({ credits: 200 });
    const theirs = await character(tk, owner.key, "Theirs", [1, 2, 3]);
    const mine = await character(tk, key, "Mine", [3, 2, 1]);
    const cases: Array<[unknown, number, string]> = [
      [{ sections: [{ content: "x" }] }, 400, OMNI_ERRORS.characterIdRequired],
      [{ character_id: mine }, 400, OMNI_ERRORS.sectionsRequired],
      [{ character_id: mine, sections: [] }, 400, OMNI_ERRORS.sectionsRequired],
      [
        { character_id: mine, sections: Array.from({ length: 31 }, () => ({ content: "x" })) },
        400,
        OMNI_ERRORS.sectionsRequired,
      ],
      [{ character_id: mine, sections: [{ title: "no content" }] }, 400, OMNI_ERRORS.sectionContentRequired(0)],
      [{ character_id: mine, sections: [{ content: "x".repeat(10_001) }] }, 400, OMNI_ERRORS.sectionContentTooLong(0)],
      [{ character_id: mine, sections: [{ content: "x", duration: 5 }] }, 400, OMNI_ERRORS.sectionDuration(0)],
      [
        { character_id: mine, sections: [{ content: "x", image_base64: "bm90IGFuIGltYWdl" }] },
        400,
        OMNI_ERRORS.sectionImage(0),
      ],
      [{ character_id: mine, sections: [{ content: "x" }], aspect_ratio: "1:1" }, 400, OMNI_ERRORS.invalidAspectRatio],
      [{ character_id: theirs, sections: [{ content: "x" }] }, 400, OMNI_ERRORS.charactersNotFound],
      [{ character_id: mine, sections: [{ content: "x", character_id: theirs }] }, 400, OMNI_ERRORS.charactersNotFound],
      [{ character_id: mine, sections: [{ content: "x" }, { content: "y" }] }, 402, OMNI_ERRORS.batchInsufficient(308)],
    ];
    const balanceBefore = await balance(tk, key);
    for (const [body, status, error] of cases) {
      const res = await tk.request("POST", "/omni/script-runner", { key, body });
      assert.equal([res.status, res.body.error], [status, error], JSON.stringify(body).slice(0, 200));
    }
    assert.is(await balance(tk, key), balanceBefore);
    const batches = await tk.kernel.database.kysely
      .selectFrom("omni_batches" as any)
      .select("batch_id")
      .where("partner_id", "=", id)
      .execute();
    assert.is(batches.length, 0);
    assert.is((await tk.request("GET", "/omni/script-runner/svc-00000000", { key })).status, 404);
  });

  t.run();
}
