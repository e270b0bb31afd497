// The music operations over GraphQL, derived from the same declarations as REST, with the sandbox provider:
// generateMusic, jobUpdates to the end, musicStatus and music; extendMusic (the JSON form) with its
// Idempotency-Key header, replayed; validation errors carry the REST texts. On PGlite (the transports do not
// depend on the backend).
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { MUSIC_ERRORS as E } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { areaSuite, followToCompletion, graphqlPartner, mutationOf, refusalTest } from "./helpers.ts";

const t = areaSuite("music over GraphQL", [account, musicSandbox, music], 200);

const TRACKS = "tracks { audio_url image_url title duration }";

t(
  "generateMusic, jobUpdates to the end, musicStatus, music; extendMusic replayed by its Idempotency-Key",
  async ({ tk }) => {
    const gql = await graphqlPartner(tk, { credits: 100 });
    const sub = await gql.data(
      "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { id job_id status model credits_used } }",
      { input: { prompt: "a bright synth-pop tune about summer" } },
    );
    const { job_id: id, status, credits_used } = sub.generateMusic;
    assert.is(status, "queued");
    assert.is(credits_used, 11);

    const updates = await followToCompletion(tk, gql, id, "job_id kind state terminal progress");
    assert.is(updates.at(-1)!.kind, "music");

    const st = await gql.data(
      `query($id: String!) { musicStatus(job_id: $id) { job_id status operation ${TRACKS} } }`,
      { id },
    );
    assert.is(st.musicStatus.tracks.length, 2);
    assert.ok(st.musicStatus.tracks[0].duration > 0);

    const extend = { input: { continue_at: 5, source: { kind: "svc_music", ref: id, track: 1 } } };
    const replayKey = { "idempotency-key": "graphql-key-1" };
    const ext = await gql.data(
      "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id status operation idempotency_key deduplicated } }",
      extend,
      replayKey,
    );
    assert.is(ext.extendMusic.operation, "extend");
    assert.is(ext.extendMusic.deduplicated, null);
    const again = await gql.data(
      "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id deduplicated } }",
      extend,
      replayKey,
    );
    assert.equal(again.extendMusic, { job_id: ext.extendMusic.job_id, deduplicated: true });

    const list = await gql.data("query { music(limit: 5) { total music { job_id operation title } } }");
    assert.is(list.music.total, 2);
    assert.equal(
      list.music.music.map((m: any) => m.operation),
      ["extend", "generate"],
    );
  },
);

refusalTest(t, "validation errors carry the REST texts", { credits: 100 }, [
  [mutationOf("generateMusic"), { input: { style: "jazz" } }, E.styleAndTitle],
  [mutationOf("extendMusic"), { input: { continue_at: 1 } }, E.idempotencyKey],
]);

t.run();
