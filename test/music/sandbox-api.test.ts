// Music end to end with the sandbox provider, through the REST API: a generation's two tracks decode as
// stated, an owned track extends directly, a real MP3 nobody here made (the fixture) extends as an upload,
// and the markers end jobs `error` with their error_code, refunded: `[sandbox:timeout]` by the job's own
// deadline, the fake clock moved past it while the job waits on the sandbox. On PGlite: what depends on the
// backend is in music.test.ts.
import { readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { FAILURE_TEXTS } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import { PROVIDER_TIMEOUT_MS } from "../../plugins/music/limits.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";

const FIXTURE = new URL("../../../shared/fixtures/media/sample1.mp3", import.meta.url);
const LIMITS = {
  rate_limits: {
    "POST /generate-music": 10_000,
    "POST /extend-music": 10_000,
    "GET /music-status/<job_id>": 100_000,
    "GET /credits": 10_000,
  },
};

const t = suite("music with the sandbox, through REST");
const tk = suiteKernel(
  t,
  { name: "pglite" },
  {
    plugins: [account, musicSandbox, music],
    start: true,
    env: { SANDBOX_LATENCY_MS: "5", PUBLIC_URL: "https://media.example.test" },
  },
);
let engine: MediaEngine;
t.before(() => {
  engine = createMediaEngine();
});
t.after(async () => {
  await engine.close();
});

/** Polls the job until it ends; a ceiling, not a wait (a loaded CI machine renders slowly). */
async function done(key: string, id: string, timeoutMs = 240_000) {
  return (await pollStatus(tk, key, `/music-status/${id}`, ended, timeoutMs)).body;
}

const blobOf = async (url: string) => (await tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length)))!;

async function assertTracks(tracks: any[], minSeconds: number) {
  assert.is(tracks.length, 2);
  for (const tr of tracks) {
    const probe = await engine.probe(await blobOf(tr.audio_url), "t.mp3");
    const audio = probe.streams.find((s) => s.type === "audio")!;
    assert.equal([audio.codec, audio.sampleRate, audio.channels], ["mp3", 44100, 2]);
    assert.ok(Math.abs(probe.durationSeconds - tr.duration) < 0.05);
    assert.ok(tr.duration > minSeconds, `${tr.duration} > ${minSeconds}`);
    assert.is(Buffer.from((await blobOf(tr.image_url)).subarray(1, 4)).toString(), "PNG");
  }
}

t("generate, extend an owned track, extend the fixture MP3 as an upload", async () => {
  const { key } = await tk.partner({ credits: 100, limits: LIMITS });
  const gen = await tk.request("POST", "/generate-music", { key, body: { prompt: "lofi beats for a rainy night" } });
  assert.is(gen.status, 202);
  const song = await done(key, gen.body.job_id);
  assert.is(song.status, "complete", JSON.stringify(song));
  await assertTracks(song.tracks, 25);

  const ext = await tk.request("POST", "/extend-music", {
    key,
    headers: { "idempotency-key": "sandbox-ext-1" },
    body: { continue_at: 10, source: { kind: "svc_music", ref: gen.body.job_id, track: 1 } },
  });
  assert.is(ext.status, 202, JSON.stringify(ext.body));
  assert.is(ext.body.operation, "extend");
  const extended = await done(key, ext.body.job_id);
  assert.is(extended.status, "complete", JSON.stringify(extended));
  await assertTracks(extended.tracks, 25);

  const fixture = new Uint8Array(readFileSync(FIXTURE));
  const form = new FormData();
  form.set("parameters", JSON.stringify({ continue_at: 5, prompt: "carry on with strings", model: "V5" }));
  form.set("audio", new Blob([fixture]), "sample1.mp3");
  const up = await tk.request("POST", "/extend-music", {
    key,
    headers: { "idempotency-key": "sandbox-upload-1" },
    body: form,
  });
  assert.is(up.status, 202, JSON.stringify(up.body));
  assert.equal([up.body.operation, up.body.model], ["upload_extend", "V5"]);
  const uploaded = await done(key, up.body.job_id);
  assert.is(uploaded.status, "complete", JSON.stringify(uploaded));
  await assertTracks(uploaded.tracks, 5 + 15);
});

t("markers end jobs error with their error_code, refunded", async () => {
  const { key } = await tk.partner({ credits: 100, limits: LIMITS });
  const cases = [
    ["x [sandbox:fail]", "provider_down"],
    ["x [sandbox:unsafe]", "safety_filter"],
    ["x [sandbox:reject]", "input_rejected"],
  ] as const;
  const ids = await Promise.all(
    cases.map(
      async ([prompt]) =>
        (await tk.request("POST", "/generate-music", { key, body: { prompt } })).body.job_id as string,
    ),
  );
  for (const [i, [, code]] of cases.entries()) {
    const body = await done(key, ids[i]!);
    assert.equal([body.status, body.error_code, body.error], ["error", code, FAILURE_TEXTS[code]]);
  }
  assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 100);
});

t("[sandbox:timeout]: the job waits on the sandbox until its deadline, then ends timeout, refunded", async () => {
  const { key } = await tk.partner({ credits: 100, limits: LIMITS });
  const res = await tk.request("POST", "/generate-music", { key, body: { prompt: "x [sandbox:timeout]" } });
  const id = res.body.job_id as string;
  const db = tk.kernel.database.kysely as any;
  /** The job's wait once it has been polled more than `polls` times (each poll answered pending). */
  const polledPast = async (polls: number) => {
    for (let until = Date.now() + 30_000; ; ) {
      const w = await db.selectFrom("job_waits").selectAll().where("job_id", "=", id).executeTakeFirst();
      if (w && w.polls > polls) return w;
      if (Date.now() > until) throw new Error(`job ${id} was not polled past ${polls}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  // Polled and answered pending: the job is processing, parked on its upstream.
  const { upstream_id, polls } = await polledPast(0);
  const recorded = `music-sandbox/private/upstream/${upstream_id}.bin`;
  assert.ok(await tk.kernel.blobs.has(recorded), "the sandbox keeps the submitted request");
  const waiting = await tk.request("GET", `/music-status/${id}`, { key });
  assert.is(waiting.body.status, "processing");
  // Short of the deadline, still waiting; past it (read from the kernel's clock), cancelled and failed.
  tk.clock.advance(PROVIDER_TIMEOUT_MS - 60_000);
  await polledPast(polls);
  assert.is((await tk.request("GET", `/music-status/${id}`, { key })).body.status, "processing");
  tk.clock.advance(61_000);
  const body = await done(key, id);
  assert.equal([body.status, body.error_code, body.error], ["error", "timeout", FAILURE_TEXTS.timeout]);
  assert.is(await tk.kernel.blobs.has(recorded), false, "the sandbox's work was cancelled");
  assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 100);
});

t.run();
