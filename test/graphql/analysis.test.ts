// Ad analysis over GraphQL, derived from the same declarations as REST: the mutation submits, `jobUpdates`
// follows the stages to the end with progress only rising, `status` and `analyses` read it back, and refusals
// carry REST's texts. On PGlite (the transports do not depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { ANALYSIS_ERRORS as E } from "../../plugins/analysis/errors.ts";
import analysis from "../../plugins/analysis/index.ts";
import captions from "../../plugins/captions/index.ts";
import socialSandbox from "../../plugins/social/sandbox.ts";
import text from "../../plugins/text/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { assertProgressRises, followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";

const t = suite("ad analysis over GraphQL");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({
    plugins: [account, videoSandbox, video, captions, text, socialSandbox, analysis],
    start: true,
    env: { SANDBOX_LATENCY_MS: "200" },
  });
});
t.after(async () => {
  await tk.close();
});

t("analyze, then jobUpdates through the stages, then status and the list", async () => {
  const { key } = await tk.partner({ credits: 1000 });
  const sub = await graphqlData(
    tk,
    "mutation($input: AnalyzeInput!) { analyze(input: $input) { job_id status credits_used credits_remaining } }",
    { input: { url: "https://www.facebook.com/ads/library/?id=987654321", partner_job_id: "gql-1" } },
    { key },
  );
  const { job_id: id, status, credits_used, credits_remaining } = sub.analyze;
  assert.equal([status, credits_used, credits_remaining], ["queued", 55, 945]);
  const updates = await followJobUpdates(tk, id, "kind state terminal progress message", { key });
  assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
  assert.is(updates.at(-1)!.kind, "analysis");
  assertProgressRises(updates);
  assert.ok(
    updates.some((u) => u.message === "Transcribing the speech"),
    JSON.stringify(updates),
  );

  const read = await graphqlData(
    tk,
    "query($id: String!) { status(job_id: $id) { job_id status message result { summary transcription analysis ugc_script } } }",
    { id },
    { key },
  );
  assert.is(read.status.status, "complete");
  assert.ok(read.status.result.summary.includes("horizontal facebook ad (480x270)"), read.status.result.summary);
  const list = await graphqlData(
    tk,
    "query { analyses(limit: 5) { total limit analyses { job_id partner_job_id status credits_used result { summary } } } }",
    {},
    { key },
  );
  assert.equal([list.analyses.total, list.analyses.limit], [1, 5]);
  assert.equal(list.analyses.analyses[0], {
    job_id: id,
    partner_job_id: "gql-1",
    status: "complete",
    credits_used: 55,
    result: { summary: read.status.result.summary },
  });
});

t("REST's texts on refusals", async () => {
  const { key } = await tk.partner({ credits: 1000 });
  const missing = await graphqlRefusal(
    tk,
    "mutation($input: AnalyzeInput!) { analyze(input: $input) { job_id } }",
    { input: { url: "  " } },
    { key },
  );
  assert.is(missing, E.urlMissing);
  const host = await graphqlRefusal(
    tk,
    "mutation($input: AnalyzeInput!) { analyze(input: $input) { job_id } }",
    { input: { url: "https://vt.tiktok.com/x/" } },
    { key },
  );
  assert.is(host, E.invalidUrl);
  const bad = await graphqlRefusal(tk, 'query { status(job_id: "nope") { job_id } }', {}, { key });
  assert.is(bad, E.invalidJobId);
  const gone = await graphqlRefusal(tk, 'query { status(job_id: "svc-00000000") { job_id } }', {}, { key });
  assert.is(gone, E.jobNotFound);
  assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 1000);
});

t.run();
