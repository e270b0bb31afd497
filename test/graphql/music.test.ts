// The music operations over GraphQL, derived from the same declarations as REST, with the sandbox provider:
// generateMusic, jobUpdates to the end, musicStatus and music; extendMusic (the JSON form) with its
// Idempotency-Key header, replayed; validation errors carry the REST texts. On PGlite (the transports do not
// depend on the backend).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { JobUpdate } from "../../core/jobs.ts";
import account from "../../plugins/account/index.ts";
import { MUSIC_ERRORS as E } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { createTestKernel, graphql, graphqlSubscription, type TestKernel } from "../../testkit/index.ts";

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
  const sub = await graphql(
    tk,
    "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { id job_id status model credits_used } }",
    { input: { prompt: "a bright synth-pop tune about summer" } },
    { key },
  );
  assert.is(sub.errors, undefined, JSON.stringify(sub.errors));
  const { job_id: id, status, credits_used } = sub.data.generateMusic;
  assert.is(status, "queued");
  assert.is(credits_used, 11);

  const updates: JobUpdate[] = [];
  for await (const r of graphqlSubscription(
    tk,
    "subscription($id: String!) { jobUpdates(id: $id) { job_id kind state terminal progress } }",
    { id },
    { key },
  )) {
    updates.push(r.data.jobUpdates);
    if (r.data.jobUpdates.terminal) break;
  }
  assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
  assert.is(updates.at(-1)!.kind, "music");

  const st = await graphql(
    tk,
    `query($id: String!) { musicStatus(job_id: $id) { job_id status operation ${TRACKS} } }`,
    { id },
    { key },
  );
  assert.is(st.errors, undefined, JSON.stringify(st.errors));
  assert.is(st.data.musicStatus.tracks.length, 2);
  assert.ok(st.data.musicStatus.tracks[0].duration > 0);

  const ext = await graphql(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id status operation idempotency_key deduplicated } }",
    { input: { continue_at: 5, source: { kind: "svc_music", ref: id, track: 1 } } },
    { key, headers: { "idempotency-key": "graphql-key-1" } },
  );
  assert.is(ext.errors, undefined, JSON.stringify(ext.errors));
  assert.is(ext.data.extendMusic.operation, "extend");
  assert.is(ext.data.extendMusic.deduplicated, null);
  const again = await graphql(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id deduplicated } }",
    { input: { continue_at: 5, source: { kind: "svc_music", ref: id, track: 1 } } },
    { key, headers: { "idempotency-key": "graphql-key-1" } },
  );
  assert.equal(again.data.extendMusic, { job_id: ext.data.extendMusic.job_id, deduplicated: true });

  const list = await graphql(tk, "query { music(limit: 5) { total music { job_id operation title } } }", {}, { key });
  assert.is(list.errors, undefined, JSON.stringify(list.errors));
  assert.is(list.data.music.total, 2);
  assert.equal(
    list.data.music.music.map((m: any) => m.operation),
    ["extend", "generate"],
  );
});

t("validation errors carry the REST texts", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const res = await graphql(
    tk,
    "mutation($input: GenerateMusicInput!) { generateMusic(input: $input) { job_id } }",
    { input: { style: "jazz" } },
    { key },
  );
  assert.is(res.errors?.[0]?.message, E.styleAndTitle);
  const ext = await graphql(
    tk,
    "mutation($input: ExtendMusicInput!) { extendMusic(input: $input) { job_id } }",
    { input: { continue_at: 1 } },
    { key },
  );
  assert.is(ext.errors?.[0]?.message, E.idempotencyKey);
});

t.run();
