// Ad analysis over GraphQL, derived from the same declarations as REST: the mutation submits, `jobUpdates`
// follows the stages to the end with progress only rising, `status` and `analyses` read it back, and refusals
// carry REST's texts. On PGlite (the transports do not depend on the backend).
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { ANALYSIS_ERRORS as E } from "../../plugins/analysis/errors.ts";
import analysis from "../../plugins/analysis/index.ts";
import captions from "../../plugins/captions/index.ts";
import socialSandbox from "../../plugins/social/sandbox.ts";
import text from "../../plugins/text/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { areaSuite, followToCompletion, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite(
  "ad analysis over GraphQL",
  [account, videoSandbox, video, captions, text, socialSandbox, analysis],
  200,
);

t("analyze, then jobUpdates through the stages, then status and the list", async ({ tk }) => {
  const gql = await graphqlPartner(tk, { credits: 1000 });
  const sub = await gql.data(
    "mutation($input: AnalyzeInput!) { analyze(input: $input) { job_id status credits_used credits_remaining } }",
    { input: { url: "https://www.facebook.com/ads/library/?id=987654321", partner_job_id: "gql-1" } },
  );
  const { job_id: id, status, credits_used, credits_remaining } = sub.analyze;
  assert.equal([status, credits_used, credits_remaining], ["queued", 55, 945]);
  const updates = await followToCompletion(tk, gql, id, "kind state terminal progress message");
  assert.is(updates.at(-1)!.kind, "analysis");
  assert.ok(
    updates.some((u) => u.message === "Transcribing the speech"),
    JSON.stringify(updates),
  );

  const read = await gql.data(
    "query($id: String!) { status(job_id: $id) { job_id status message result { summary transcription analysis ugc_script } } }",
    { id },
  );
  assert.is(read.status.status, "complete");
  assert.ok(read.status.result.summary.includes("horizontal facebook ad (480x270)"), read.status.result.summary);
  const list = await gql.data(
    "query { analyses(limit: 5) { total limit analyses { job_id partner_job_id status credits_used result { summary } } } }",
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

refusalTest(t, "REST's texts on refusals", { credits: 1000 }, [
  [mutationOf("analyze"), { input: { url: "  " } }, E.urlMissing],
  [mutationOf("analyze"), { input: { url: "https://vt.tiktok.com/x/" } }, E.invalidUrl],
  ['query { status(job_id: "nope") { job_id } }', {}, E.invalidJobId],
  ['query { status(job_id: "svc-00000000") { job_id } }', {}, E.jobNotFound],
]);

t.run();
