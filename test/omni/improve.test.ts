// Prompt repair through the REST API on every database backend: a blocked (prompt-fixable) job is rewritten by
// `text.generate` and resubmitted as a new clip that completes; the repair's price, its refund when the
// rewrite fails, and every refusal (not failed, not fixable, missing, another account's) before any charge.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { TestKernel } from "../../testkit/index.ts";
import { OMNI_ERRORS as E } from "../../plugins/omni/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { balance, ledgerSum, OMNI_LIMITS, omniKernel, videoDone } from "./helpers.ts";

for (const backend of await databaseBackends()) {
  const t = suite(`omni prompt repair on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await omniKernel(backend);
  });
  t.after.each(async () => {
    await tk.close();
  });
  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: OMNI_LIMITS, ...opts });
  const submit = async (key: string, prompt: string) => {
    const res = await tk.request("POST", "/omni/video", { key, body: { prompt, duration: 4, aspect_ratio: "16:9" } });
    assert.is(res.status, 202, JSON.stringify(res.body));
    return videoDone(tk, key, res.body.job_id);
  };

  t("a blocked prompt is rewritten and the clip resubmitted: it completes with the new prompt", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const blocked = await submit(key, 'A knight in a forest [sandbox:unsafe] says "onward"');
    assert.equal([blocked.status, blocked.prompt_fixable], ["error", true]);
    const before = await balance(tk, key);
    const res = await tk.request("POST", "/omni/improve-prompt", { key, body: { job_id: blocked.job_id } });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal(Object.keys(res.body).sort(), ["credits_remaining", "credits_used", "improved_prompt", "job_id", "request_id", "source_job_id"]);
    assert.is(res.body.source_job_id, blocked.job_id);
    assert.not.equal(res.body.job_id, blocked.job_id);
    assert.not.ok(res.body.improved_prompt.includes("[sandbox:unsafe]"));
    assert.ok(res.body.improved_prompt.includes("A knight in a forest"), res.body.improved_prompt);
    // 2 for the repair (api_plus10) and 132 for the 4 s clip.
    assert.is(res.body.credits_used, 2 + 132);
    assert.is(res.body.credits_remaining, before - 134);
    const again = await videoDone(tk, key, res.body.job_id);
    assert.is(again.status, "complete", JSON.stringify(again));
    assert.is(again.prompt, res.body.improved_prompt);
    assert.equal([again.duration, again.aspect_ratio, again.resolution], [4, "16:9", "1080p"]);
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
  });

  t("a failed rewrite is refunded and answers 502; standard accounts pay 1", async () => {
    const { key } = await partner({ credits: 1000, tier: "standard" });
    // Blocked first (unsafe is checked before fail), and the text sandbox fails on [sandbox:fail].
    const blocked = await submit(key, "storm [sandbox:unsafe] [sandbox:fail]");
    assert.is(blocked.prompt_fixable, true);
    const before = await balance(tk, key);
    const res = await tk.request("POST", "/omni/improve-prompt", { key, body: { job_id: blocked.job_id } });
    assert.equal([res.status, res.body.error], [502, E.repairFailed]);
    assert.is(await balance(tk, key), before);
    const ok = await submit(key, "calm [sandbox:unsafe]");
    const repaired = await tk.request("POST", "/omni/improve-prompt", { key, body: { job_id: ok.job_id } });
    assert.is(repaired.body.credits_used, 1 + 120);
    await videoDone(tk, key, repaired.body.job_id);
  });

  t("refusals before any charge", async () => {
    const { key } = await partner({ credits: 1000 });
    const other = await partner({ credits: 1000 });
    const plain = await submit(key, "plain failure [sandbox:fail]");
    const fine = await submit(key, "all good");
    const blocked = await submit(key, "blocked [sandbox:unsafe]");
    const before = await balance(tk, key);
    const cases: Array<[string, unknown, number, string]> = [
      ["missing", {}, 400, E.jobIdRequired],
      ["wrong type", { job_id: 7 }, 400, E.jobIdRequired],
      ["not failed", { job_id: fine.job_id }, 400, E.notFailed],
      ["not fixable", { job_id: plain.job_id }, 400, E.notFixable],
      ["unknown", { job_id: "svc-00000000" }, 404, E.notFound],
      ["malformed", { job_id: "../etc" }, 404, E.notFound],
    ];
    for (const [what, body, status, error] of cases) {
      const res = await tk.request("POST", "/omni/improve-prompt", { key, body });
      assert.equal([res.status, res.body.error], [status, error], what);
    }
    const foreign = await tk.request("POST", "/omni/improve-prompt", { key: other.key, body: { job_id: blocked.job_id } });
    assert.equal([foreign.status, foreign.body.error], [404, E.notFound]);
    assert.is(await balance(tk, key), before);
    // Too poor for the repair and its clip together: 402 naming both, nothing charged.
    const poor = await partner({ credits: 133 });
    const poorBlocked = await submit(poor.key, "poor [sandbox:unsafe]");
    const res = await tk.request("POST", "/omni/improve-prompt", { key: poor.key, body: { job_id: poorBlocked.job_id } });
    assert.equal([res.status, res.body.error, res.body.credits_remaining], [402, E.repairInsufficient(134), 133]);
    assert.is(await balance(tk, poor.key), 133);
  });

  t.run();
}
