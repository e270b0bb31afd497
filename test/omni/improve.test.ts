// Prompt repair through the REST API on every database backend: a blocked (prompt-fixable) job is rewritten by
// `text.generate` and resubmitted as a new clip that completes. The call costs the repair's price only (spec
// part 3: 2 on api_plus10, 1 standard basis, a custom account's rate) and the clip carries that charge: a clip
// that fails refunds it once, a rewrite that fails refunds it once (502); every refusal (not failed, not
// fixable, missing, another account's, too poor) comes before any charge.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { assertAnswer } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";
import { balance, ledgerSum } from "../helpers/partner-reads.ts";
import { finishedClip, OMNI_LIMITS, omniOptions, png, videoDone } from "./helpers.ts";

/** A picture served at any path; the Omni sandbox fails a clip whose image URL's path holds `sandbox-fail`. */
const PICTURE = Buffer.from(png([200, 40, 40]), "base64");
const pictures = createServer((_req, res) => void res.writeHead(200, { "content-type": "image/png" }).end(PICTURE));
// It outlives the suites of every backend; closed when the last one is done.
onAfterAll(async () => {
  pictures.closeAllConnections();
  if (pictures.listening) await new Promise<void>((r) => pictures.close(() => r()));
});

for (const backend of await databaseBackends()) {
  const t = suite(`omni prompt repair on ${backend.name}`);
  const tk = suiteKernel(t, backend, omniOptions());
  t.before(async () => {
    if (!pictures.listening) await new Promise<void>((r) => pictures.listen(0, "127.0.0.1", r));
  });
  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: OMNI_LIMITS, ...opts });
  const submit = (key: string, prompt: string, extra: Record<string, unknown> = {}) =>
    finishedClip(tk, key, prompt, extra);
  const repair = (key: string, jobId: string) =>
    tk.request("POST", "/omni/improve-prompt", { key, body: { job_id: jobId } });
  /** The ledger lines of some jobs, as [type, amount, job]. */
  const lines = async (jobIds: string[]) =>
    (
      await tk.kernel.database.kysely
        .selectFrom("ledger")
        .select(["type", "amount", "job_id"])
        .where("job_id", "in", jobIds)
        .orderBy("id")
        .execute()
    ).map((l) => [l.type, Number(l.amount), l.job_id]);
  const repairJobOf = async (partnerId: string) =>
    await tk.kernel.database.kysely
      .selectFrom("jobs")
      .select(["id", "state", "credits_used", "credits_refunded"])
      .where("partner_id", "=", partnerId)
      .where("kind", "=", "repair")
      .execute();

  t(
    "a blocked prompt is rewritten and the clip resubmitted: 2 credits on api_plus10 for both, the clip completes",
    async () => {
      const { key, id } = await partner({ credits: 1000 });
      const blocked = await submit(key, 'A knight in a forest [sandbox:unsafe] says "onward"');
      assert.equal([blocked.status, blocked.prompt_fixable], ["error", true]);
      const before = await balance(tk, key);
      const res = await repair(key, blocked.job_id);
      assertAnswer(res, 200, "credits_remaining credits_used improved_prompt job_id request_id source_job_id");
      assert.is(res.body.source_job_id, blocked.job_id);
      assert.not.equal(res.body.job_id, blocked.job_id);
      assert.not.ok(res.body.improved_prompt.includes("[sandbox:unsafe]"));
      assert.ok(res.body.improved_prompt.includes("A knight in a forest"), res.body.improved_prompt);
      // The repair's price only (spec part 3: "Charged 2 credits (api_plus10)"); the clip is part of it.
      assert.is(res.body.credits_used, 2);
      assert.is(res.body.credits_remaining, before - 2);
      const clip = await videoDone(tk, key, res.body.job_id);
      assert.is(clip.status, "complete", JSON.stringify(clip));
      assert.is(clip.prompt, res.body.improved_prompt);
      assert.equal([clip.duration, clip.aspect_ratio, clip.resolution], [4, "16:9", "1080p"]);
      // The clip carries the repair's charge; nothing more was taken, nothing returned.
      assert.equal([clip.credits_used, clip.credits_refunded], [2, 0]);
      assert.is(await balance(tk, key), before - 2);
      const [job] = await repairJobOf(id);
      assert.equal([job!.state, Number(job!.credits_used), Number(job!.credits_refunded)], ["complete", 2, 0]);
      assert.equal(await lines([job!.id, res.body.job_id]), [["usage", -2, job!.id]]);
      assert.is(await ledgerSum(tk, id), await balance(tk, key));
    },
  );

  t("the resubmitted clip fails: the repair's 2 credits come back once, the balance exactly as before", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const url = `http://127.0.0.1:${(pictures.address() as AddressInfo).port}/sandbox-fail.png`;
    // Blocked first (the sandbox checks unsafe before the failing image); the repaired clip then fails by its image.
    const blocked = await submit(key, "A harbour at dawn [sandbox:unsafe]", { image_urls: [url] });
    assert.equal([blocked.status, blocked.prompt_fixable], ["error", true], JSON.stringify(blocked));
    const before = await balance(tk, key);
    const res = await repair(key, blocked.job_id);
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.is(res.body.credits_used, 2);
    const clip = await videoDone(tk, key, res.body.job_id);
    assert.equal(
      [clip.status, clip.error, clip.prompt_fixable],
      ["error", OMNI_ERRORS.videoFailed, false],
      JSON.stringify(clip),
    );
    assert.equal([clip.credits_used, clip.credits_refunded], [2, 2]);
    assert.is(await balance(tk, key), before);
    const [job] = await repairJobOf(id);
    // Charged once under the repair, refunded once under the clip; the ended repair keeps its state.
    assert.equal([job!.state, Number(job!.credits_refunded)], ["complete", 0]);
    assert.equal(await lines([job!.id, res.body.job_id]), [
      ["usage", -2, job!.id],
      ["refund", 2, res.body.job_id],
    ]);
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
  });

  t("a failed rewrite is refunded once and answers 502, no clip made; standard accounts pay 1", async () => {
    const { key, id } = await partner({ credits: 1000, tier: "standard" });
    // Blocked first (unsafe is checked before fail), and the text sandbox fails on [sandbox:fail].
    const blocked = await submit(key, "storm [sandbox:unsafe] [sandbox:fail]");
    assert.is(blocked.prompt_fixable, true);
    const before = await balance(tk, key);
    const res = await repair(key, blocked.job_id);
    assert.equal([res.status, res.body.error], [502, OMNI_ERRORS.repairFailed]);
    assert.is(await balance(tk, key), before);
    const [failed] = await repairJobOf(id);
    assert.equal([failed!.state, Number(failed!.credits_used), Number(failed!.credits_refunded)], ["failed", 1, 1]);
    assert.equal(await lines([failed!.id]), [
      ["usage", -1, failed!.id],
      ["refund", 1, failed!.id],
    ]);
    const listed = await tk.request("GET", "/omni/videos", { key });
    assert.is(listed.body.total, 1, "no clip for a failed repair");

    const ok = await submit(key, "calm [sandbox:unsafe]");
    const repaired = await repair(key, ok.job_id);
    assert.is(repaired.status, 200, JSON.stringify(repaired.body));
    assert.is(repaired.body.credits_used, 1);
    assert.is((await videoDone(tk, key, repaired.body.job_id)).status, "complete");
    assert.is(await balance(tk, key), before - 1);
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
  });

  t("a custom account pays its prompt_repair rate, and without one gets the 400 before any charge", async () => {
    const { key, id } = await partner({ credits: 1000, tier: "custom" });
    await tk.kernel.accounts.update(id, { customRates: { omni: { video_price: { "1080p": { 4: 100 } } } } } as any);
    const blocked = await submit(key, "custom [sandbox:unsafe]");
    const before = await balance(tk, key);
    const refused = await repair(key, blocked.job_id);
    assert.equal([refused.status, refused.body.error], [400, OMNI_ERRORS.customNoRate]);
    assert.is(await balance(tk, key), before);
    await tk.kernel.accounts.update(id, {
      customRates: { omni: { video_price: { "1080p": { 4: 100 } }, prompt_repair: 7 } },
    } as any);
    const res = await repair(key, blocked.job_id);
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal([res.body.credits_used, res.body.credits_remaining], [7, before - 7]);
  });

  t("refusals before any charge; the 402 names the repair's price", async () => {
    const { key } = await partner({ credits: 1000 });
    const other = await partner({ credits: 1000 });
    const plain = await submit(key, "plain failure [sandbox:fail]");
    const fine = await submit(key, "all good");
    const blocked = await submit(key, "blocked [sandbox:unsafe]");
    const before = await balance(tk, key);
    const cases: Array<[string, unknown, number, string]> = [
      ["missing", {}, 400, OMNI_ERRORS.jobIdRequired],
      ["wrong type", { job_id: 7 }, 400, OMNI_ERRORS.jobIdRequired],
      ["not failed", { job_id: fine.job_id }, 400, OMNI_ERRORS.notFailed],
      ["not fixable", { job_id: plain.job_id }, 400, OMNI_ERRORS.notFixable],
      ["unknown", { job_id: "svc-00000000" }, 404, OMNI_ERRORS.notFound],
      ["malformed", { job_id: "../etc" }, 404, OMNI_ERRORS.notFound],
    ];
    for (const [what, body, status, error] of cases) {
      const res = await tk.request("POST", "/omni/improve-prompt", { key, body });
      assert.equal([res.status, res.body.error], [status, error], what);
    }
    const foreign = await repair(other.key, blocked.job_id);
    assert.equal([foreign.status, foreign.body.error], [404, OMNI_ERRORS.notFound]);
    assert.is(await balance(tk, key), before);
    // One credit left, the repair costs 2 on api_plus10: `Insufficient credits. This costs 2 credits.`
    const poor = await partner({ credits: 133 });
    const poorBlocked = await submit(poor.key, "poor [sandbox:unsafe]");
    const adjusted = await tk.request("POST", `/api/v1/admin/partners/${poor.id}/credits`, {
      headers: { authorization: `Bearer ${tk.adminToken}` },
      body: { amount: -132, type: "adjustment", description: "test: one credit left" },
    });
    assert.is(adjusted.status, 200, JSON.stringify(adjusted.body));
    const res = await repair(poor.key, poorBlocked.job_id);
    assert.equal(
      [res.status, res.body.error, res.body.credits_remaining],
      [402, "Insufficient credits. This costs 2 credits.", 1],
    );
    assert.is(await balance(tk, poor.key), 1);
  });

  t.run();
}
