// The video operations over GraphQL, derived from the same declarations as REST: a mutation submits a clip,
// the `jobUpdates` subscription follows its progress to the end, the status and list queries read it, and
// validation errors carry the REST texts. On PGlite (the transports do not depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { VIDEO_ERRORS as E } from "../../plugins/video/errors.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { assertProgressRises, followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";

const t = suite("video over GraphQL");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({
    plugins: [account, videoSandbox, video],
    start: true,
    env: { SANDBOX_LATENCY_MS: "400" },
  });
});
t.after(async () => {
  await tk.close();
});

t("generateVideo, then jobUpdates to the end with rising progress, then videoStatus and videos", async () => {
  const { key } = await tk.partner({ credits: 500 });
  const sub = await graphqlData(
    tk,
    "mutation($input: GenerateVideoInput!) { generateVideo(input: $input) { job_id status credits_used credits_remaining } }",
    { input: { prompt: "A lantern in fog", model: "beta-2-direct", quality: "480p", duration: 2 } },
    { key },
  );
  const { job_id: id, status, credits_used } = sub.generateVideo;
  assert.is(status, "queued");
  assert.is(credits_used, 31);

  const updates = await followJobUpdates(tk, id, "job_id kind state terminal progress message", { key });
  const last = updates.at(-1)!;
  assert.is(last.state, "complete", JSON.stringify(updates));
  assert.is(last.kind, "video");
  assertProgressRises(updates);
  assert.ok(
    updates.some((u) => u.state === "processing" && (u.progress ?? 0) > 0),
    JSON.stringify(updates),
  );

  const st = await graphqlData(
    tk,
    "query($id: String!) { videoStatus(job_id: $id) { job_id status video_url duration metadata_removed } }",
    { id },
    { key },
  );
  assert.is(st.videoStatus.status, "complete");
  assert.is(st.videoStatus.duration, 2);
  const list = await graphqlData(
    tk,
    'query { videos(status: "complete") { total videos { job_id model_used } } }',
    {},
    { key },
  );
  assert.equal(list.videos.videos, [{ job_id: id, model_used: "beta-2-direct" }]);
});

t("validation errors carry the REST texts", async () => {
  const { key } = await tk.partner({ credits: 500 });
  const res = await graphqlRefusal(
    tk,
    "mutation($input: GenerateVideoInput!) { generateVideo(input: $input) { job_id } }",
    { input: { prompt: "x", duration: 7 } },
    { key },
  );
  assert.is(res, E.durationNotSupported(7, "alpha-v3-text-to-video", "5, 10"));
  const merge = await graphqlRefusal(
    tk,
    "mutation($input: MergeVideosInput!) { mergeVideos(input: $input) { merge_id } }",
    { input: { job_ids: ["svc-00000000"] } },
    { key },
  );
  assert.is(merge, E.mergeNeedTwo);
});

t.run();
