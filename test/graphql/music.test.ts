// The music operations over GraphQL, derived from the same declarations as REST, with the sandbox provider:
// generateMusic, jobUpdates to the end, musicStatus and music; extendMusic (the JSON form) with its
// Idempotency-Key header, replayed; validation errors carry the REST texts. On PGlite (the transports do not
// depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { MUSIC_ERRORS as E } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { followJobUpdates, graphqlData, graphqlRefusal } from "../helpers/graphql.ts";

const t = suite("music over GraphQL");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({
    plugins: [account, musicSandbox, music],
    start: true,
    env: { SANDBOX_LATENCY_MS: "200" },
  });
});
t.after(async () => {
  await tk.close();
});

const TRACKS = "tracks { audio_url image_url title duration }";

t("generateMusic, jobUpdates to the end, musicStatus, music; extendMusic replayed by its Idempotency-Key", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const sub = await graphqlData(
    tk,
    "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { id job_id status model credits_used } }",
    { input: { prompt: "a bright synth-pop tune about summer" } },
    { key },
  );
  const { job_id: id, status, credits_used } = sub.generateMusic;
  assert.is(status, "queued");
  assert.is(credits_used, 11);

  const updates = await followJobUpdates(tk, id, "job_id kind state terminal progress", { key });
  assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
  assert.is(updates.at(-1)!.kind, "music");

  const st = await graphqlData(
    tk,
    `query($id: String!) { musicStatus(job_id: $id) { job_id status operation ${TRACKS} } }`,
    { id },
    { key },
  );
  assert.is(st.musicStatus.tracks.length, 2);
  assert.ok(st.musicStatus.tracks[0].duration > 0);

  const ext = await graphqlData(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id status operation idempotency_key deduplicated } }",
    { input: { continue_at: 5, source: { kind: "svc_music", ref: id, track: 1 } } },
    { key, headers: { "idempotency-key": "graphql-key-1" } },
  );
  assert.is(ext.extendMusic.operation, "extend");
  assert.is(ext.extendMusic.deduplicated, null);
  const again = await graphql(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id deduplicated } }",
    { input: { continue_at: 5, source: { kind: "svc_music", ref: id, track: 1 } } },
    { key, headers: { "idempotency-key": "graphql-key-1" } },
  );
  assert.equal(again.data.extendMusic, { job_id: ext.extendMusic.job_id, deduplicated: true });

  const list = await graphqlData(
    tk,
    "query { music(limit: 5) { total music { job_id operation title } } }",
    {},
    { key },
  );
  assert.is(list.music.total, 2);
  assert.equal(
    list.music.music.map((m: any) => m.operation),
    ["extend", "generate"],
  );
});

t("validation errors carry the REST texts", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const res = await graphqlRefusal(
    tk,
    "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { job_id } }",
    { input: { style: "jazz" } },
    { key },
  );
  assert.is(res, E.styleAndTitle);
  const ext = await graphqlRefusal(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id } }",
    { input: { continue_at: 1 } },
    { key },
  );
  assert.is(ext, E.idempotencyKey);
});

t.run();
