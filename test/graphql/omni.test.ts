// Omni over GraphQL, derived from the same declarations as REST: a character and a voice made by mutations,
// an Omni video submitted and followed by `jobUpdates` to its end, read back by the status query and the list,
// the presets query, and REST's texts on validation errors. On PGlite (the transports do not depend on the backend).
import * as assert from "uvu/assert";
import { OMNI_ERRORS as E } from "../../plugins/omni/errors.ts";
import { OMNI_LIMITS, OMNI_PLUGINS, png } from "../omni/helpers.ts";
import { areaSuite, followToCompletion, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite("omni over GraphQL", OMNI_PLUGINS, 400);

t(
  "character and voice mutations, omniVideo, then jobUpdates to the end, then the status query and the list",
  async ({ tk }) => {
    const gql = await graphqlPartner(tk, { credits: 1000, limits: OMNI_LIMITS });
    const v = await gql.data(
      "mutation($input: OmniVoicesInput!) { omniVoices(input: $input) { voice_id base_voice_name sample_url } }",
      { input: { name: "Guide", base_voice: "aoede" } },
    );
    assert.is(v.omniVoices.base_voice_name, "Aoede");
    const c = await gql.data(
      "mutation($input: OmniCharactersInput!) { omniCharacters(input: $input) { character_id credits_used voice_id } }",
      { input: { name: "Lia", image_base64: png([30, 200, 120]), voice_id: v.omniVoices.voice_id } },
    );
    assert.is(c.omniCharacters.credits_used, 33);

    const sub = await gql.data(
      "mutation($input: OmniVideoInput!) { omniVideo(input: $input) { job_id status credits_used resolution } }",
      { input: { prompt: 'Lia: "Follow me."', character_ids: [c.omniCharacters.character_id], duration: 4 } },
    );
    const { job_id: id, status, credits_used } = sub.omniVideo;
    assert.equal([status, credits_used], ["processing", 132]);

    const updates = await followToCompletion(tk, gql, id, "job_id kind state terminal progress message");
    assert.ok(
      updates.some((u) => (u.progress ?? 0) > 0 && !u.terminal),
      JSON.stringify(updates),
    );

    const st = await gql.data(
      "query($id: String!) { omniVideo(job_id: $id) { job_id status video_url character_ids prompt_fixable } }",
      { id },
    );
    assert.equal([st.omniVideo.status, st.omniVideo.prompt_fixable], ["complete", false]);
    const list = await gql.data('query { omniVideos(status: "complete") { total videos { job_id } } }');
    assert.equal(list.omniVideos.videos, [{ job_id: id }]);
    const presets = await gql.data("query { omniVoicePresets { presets { id gender } } }");
    assert.is(presets.omniVoicePresets.presets.length, 30);
  },
);

refusalTest(t, "validation errors carry the REST texts", { credits: 1000, limits: OMNI_LIMITS }, [
  [mutationOf("omniVideo"), { input: { prompt: "x", model: "omni-9" } }, E.invalidModel],
  [mutationOf("omniVoices", "voice_id"), { input: { name: "x", base_voice: "nobody" } }, E.unknownBaseVoice],
]);

t.run();
