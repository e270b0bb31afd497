// The Script Runner over GraphQL, derived from the same declarations as REST: the mutation submits a run,
// `jobUpdates` follows it to its end with the share of scenes done rising, the queries read it back, and an
// unknown model carries REST's text. On PGlite (the transports do not depend on the backend).
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { RUNNER_ERRORS as E } from "../../plugins/script-runner/errors.ts";
import scriptRunner from "../../plugins/script-runner/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { areaSuite, followToCompletion, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite("script runner over GraphQL", [account, imagesSandbox, videoSandbox, scriptRunner], 200);

const px = new Uint8Array(32 * 48 * 3).fill(120);
const image = Buffer.from(encodePng(32, 48, px, 3)).toString("base64");
const prompt = [1, 2, 3, 4, 5]
  .map((i) => `=== SCENE: S${i} ===\nPlace ${i}.\n=== DIALOGUE ${i} ===\nLine ${i}.`)
  .join("\n");

t("scriptRunner, then jobUpdates with the scenes' progress, then the run and the list", async ({ tk }) => {
  const gql = await graphqlPartner(tk, { credits: 1000 });
  const sub = await gql.data(
    "mutation($input: ScriptRunnerInput!) { scriptRunner(input: $input) { job_id status scene_count credits_used cost_per_scene } }",
    { input: { prompt, character_image_base64: image } },
  );
  const { job_id: id, scene_count, credits_used } = sub.scriptRunner;
  assert.equal([scene_count, credits_used], [5, 303]);
  const updates = await followToCompletion(tk, gql, id, "state terminal progress message");
  assert.ok(
    updates.some((u) => !u.terminal && (u.progress ?? 0) > 0 && /of 5 scenes done/.test(u.message ?? "")),
    JSON.stringify(updates),
  );
  const run = await gql.data(
    "query($id: String!) { scriptRunnerByJobId(job_id: $id) { status scenes_complete scenes { status video_url } } }",
    { id },
  );
  assert.equal([run.scriptRunnerByJobId.status, run.scriptRunnerByJobId.scenes_complete], ["complete", 5]);
  const list = await gql.data("query { scriptRunner { total runs { job_id model_used } } }");
  assert.equal(list.scriptRunner.runs, [{ job_id: id, model_used: "gamma-3.1-fast" }]);
});

refusalTest(t, "REST's texts on errors", { credits: 1000 }, [
  [mutationOf("scriptRunner"), { input: { prompt: "nothing" } }, E.noScenes],
]);

t.run();
