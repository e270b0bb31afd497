// The Script Runner over GraphQL, derived from the same declarations as REST: the mutation submits a run,
// `jobUpdates` follows it to its end with the share of scenes done rising, the queries read it back, and an
// unknown model carries REST's text. On PGlite (the transports do not depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { RUNNER_ERRORS as E } from "../../plugins/script-runner/errors.ts";
import scriptRunner from "../../plugins/script-runner/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { assertProgressRises, followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";

const t = suite("script runner over GraphQL");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({
    plugins: [account, imagesSandbox, videoSandbox, scriptRunner],
    start: true,
    env: { SANDBOX_LATENCY_MS: "200" },
  });
});
t.after(async () => {
  await tk.close();
});

const px = new Uint8Array(32 * 48 * 3).fill(120);
const image = Buffer.from(encodePng(32, 48, px, 3)).toString("base64");
const prompt = [1, 2, 3, 4, 5]
  .map((i) => `=== SCENE: S${i} ===\nPlace ${i}.\n=== DIALOGUE ${i} ===\nLine ${i}.`)
  .join("\n");

t("scriptRunner, then jobUpdates with the scenes' progress, then the run and the list", async () => {
  const { key } = await tk.partner({ credits: 1000 });
  const sub = await graphqlData(
    tk,
    "mutation($input: ScriptRunnerInput!) { scriptRunner(input: $input) { job_id status scene_count credits_used cost_per_scene } }",
    { input: { prompt, character_image_base64: image } },
    { key },
  );
  const { job_id: id, scene_count, credits_used } = sub.scriptRunner;
  assert.equal([scene_count, credits_used], [5, 303]);
  const updates = await followJobUpdates(tk, id, "state terminal progress message", { key });
  assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
  assertProgressRises(updates);
  assert.ok(
    updates.some((u) => !u.terminal && (u.progress ?? 0) > 0 && /of 5 scenes done/.test(u.message ?? "")),
    JSON.stringify(updates),
  );
  const run = await graphqlData(
    tk,
    "query($id: String!) { scriptRunnerByJobId(job_id: $id) { status scenes_complete scenes { status video_url } } }",
    { id },
    { key },
  );
  assert.equal([run.scriptRunnerByJobId.status, run.scriptRunnerByJobId.scenes_complete], ["complete", 5]);
  const list = await graphql(tk, "query { scriptRunner { total runs { job_id model_used } } }", {}, { key });
  assert.equal(list.data.scriptRunner.runs, [{ job_id: id, model_used: "gamma-3.1-fast" }]);
});

t("REST's texts on errors", async () => {
  const { key } = await tk.partner({ credits: 1000 });
  const res = await graphqlRefusal(
    tk,
    "mutation($input: ScriptRunnerInput!) { scriptRunner(input: $input) { job_id } }",
    { input: { prompt: "nothing" } },
    { key },
  );
  assert.is(res, E.noScenes);
});

t.run();
