// Omni over GraphQL, derived from the same declarations as REST: a character and a voice made by mutations,
// an Omni video submitted and followed by `jobUpdates` to its end, read back by the status query and the list,
// the presets query, and REST's texts on validation errors. On PGlite (the transports do not depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OMNI_ERRORS as E } from "../../plugins/omni/errors.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { assertProgressRises, followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";
import { OMNI_LIMITS, OMNI_PLUGINS, png } from "../omni/helpers.ts";

const t = suite("omni over GraphQL");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({ plugins: OMNI_PLUGINS, start: true, env: { SANDBOX_LATENCY_MS: "400" } });
});
t.after(async () => {
  await tk.close();
});

t(
  "character and voice mutations, omniVideo, then jobUpdates to the end, then the status query and the list",
  async () => {
    const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const v = await graphqlData(
      tk,
      "mutation($input: OmniVoicesInput!) { omniVoices(input: $input) { voice_id base_voice_name sample_url } }",
      { input: { name: "Guide", base_voice: "aoede" } },
      { key },
    );
    assert.is(v.omniVoices.base_voice_name, "Aoede");
    const c = await graphqlData(
      tk,
      "mutation($input: OmniCharactersInput!) { omniCharacters(input: $input) { character_id credits_used voice_id } }",
      { input: { name: "Lia", image_base64: png([30, 200, 120]), voice_id: v.omniVoices.voice_id } },
      { key },
    );
    assert.is(c.omniCharacters.credits_used, 33);

    const sub = await graphqlData(
      tk,
      "mutation($input: OmniVideoInput!) { omniVideo(input: $input) { job_id status credits_used resolution } }",
      { input: { prompt: 'Lia: "Follow me."', character_ids: [c.omniCharacters.character_id], duration: 4 } },
      { key },
    );
    const { job_id: id, status, credits_used } = sub.omniVideo;
    assert.equal([status, credits_used], ["processing", 132]);

    const updates = await followJobUpdates(tk, id, "job_id kind state terminal progress message", { key });
    assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
    assertProgressRises(updates);
    assert.ok(
      updates.some((u) => (u.progress ?? 0) > 0 && !u.terminal),
      JSON.stringify(updates),
    );

    const st = await graphqlData(
      tk,
      "query($id: String!) { omniVideo(job_id: $id) { job_id status video_url character_ids prompt_fixable } }",
      { id },
      { key },
    );
    assert.equal([st.omniVideo.status, st.omniVideo.prompt_fixable], ["complete", false]);
    const list = await graphql(tk, 'query { omniVideos(status: "complete") { total videos { job_id } } }', {}, { key });
    assert.equal(list.data.omniVideos.videos, [{ job_id: id }]);
    const presets = await graphql(tk, "query { omniVoicePresets { presets { id gender } } }", {}, { key });
    assert.is(presets.data.omniVoicePresets.presets.length, 30);
  },
);

t("validation errors carry the REST texts", async () => {
  const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
  const res = await graphqlRefusal(
    tk,
    "mutation($input: OmniVideoInput!) { omniVideo(input: $input) { job_id } }",
    { input: { prompt: "x", model: "omni-9" } },
    { key },
  );
  assert.is(res, E.invalidModel);
  const voice = await graphqlRefusal(
    tk,
    "mutation($input: OmniVoicesInput!) { omniVoices(input: $input) { voice_id } }",
    { input: { name: "x", base_voice: "nobody" } },
    { key },
  );
  assert.is(voice, E.unknownBaseVoice);
});

t.run();
