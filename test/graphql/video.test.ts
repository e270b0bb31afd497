// The video operations over GraphQL, derived from the same declarations as REST: a mutation submits a clip,
// the `jobUpdates` subscription follows its progress to the end, the status and list queries read it, and
// validation errors carry the REST texts. On PGlite (the transports do not depend on the backend).
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { VIDEO_ERRORS as E } from "../../plugins/video/errors.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { areaSuite, followToCompletion, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite("video over GraphQL", [account, videoSandbox, video], 400);

t("generateVideo, then jobUpdates to the end with rising progress, then videoStatus and videos", async ({ tk }) => {
  const gql = await graphqlPartner(tk, { credits: 500 });
  const sub = await gql.data(
    "mutation($input: GenerateVideoInput!) { generateVideo(input: $input) { job_id status credits_used credits_remaining } }",
    { input: { prompt: "A lantern in fog", model: "beta-2-direct", quality: "480p", duration: 2 } },
  );
  const { job_id: id, status, credits_used } = sub.generateVideo;
  assert.is(status, "queued");
  assert.is(credits_used, 31);

  const updates = await followToCompletion(tk, gql, id, "job_id kind state terminal progress message");
  assert.is(updates.at(-1)!.kind, "video");
  assert.ok(
    updates.some((u) => u.state === "processing" && (u.progress ?? 0) > 0),
    JSON.stringify(updates),
  );

  const st = await gql.data(
    "query($id: String!) { videoStatus(job_id: $id) { job_id status video_url duration metadata_removed } }",
    { id },
  );
  assert.is(st.videoStatus.status, "complete");
  assert.is(st.videoStatus.duration, 2);
  const list = await gql.data('query { videos(status: "complete") { total videos { job_id model_used } } }');
  assert.equal(list.videos.videos, [{ job_id: id, model_used: "beta-2-direct" }]);
});

const sevenSeconds = E.durationNotSupported(7, "alpha-v3-text-to-video", "5, 10");
refusalTest(t, "validation errors carry the REST texts", { credits: 500 }, [
  [mutationOf("generateVideo"), { input: { prompt: "x", duration: 7 } }, sevenSeconds],
  [mutationOf("mergeVideos", "merge_id"), { input: { job_ids: ["svc-00000000"] } }, E.mergeNeedTwo],
]);

t.run();
