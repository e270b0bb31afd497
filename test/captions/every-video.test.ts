// Captions for every video (issue 36 item 7), through the REST API on every database backend: POST /captions
// takes the job id of any of the account's finished videos, whichever area made it, found through the
// `captionable.videos` collection. A finished Omni video is captioned from its spoken record (the words and
// their times the sandbox spoke; no recognition) into a real burned MP4. A Script Runner run's id captions
// the run's scene clips joined in scene order; those clips are made without sound (spec part 3), so the job
// reads the joined file and ends `no_speech`, refunded. Another account's video is a 404 either way, before
// any charge.
import type { Kysely } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { CAPTION_ERRORS, CAPTION_FAILURES } from "../../plugins/captions/errors.ts";
import captions from "../../plugins/captions/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import omni from "../../plugins/omni/index.ts";
import omniSandbox from "../../plugins/omni/sandbox.ts";
import scriptRunner from "../../plugins/script-runner/index.ts";
import text from "../../plugins/text/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { withKernelAndEngine } from "../helpers/kernel-engine.ts";
import { character, OMNI_LIMITS, png, voice } from "../omni/helpers.ts";
import { captionDone, lumaAt } from "./helpers/captions-kernel.ts";

const LIMITS = {
  ...OMNI_LIMITS,
  rate_limits: {
    ...OMNI_LIMITS.rate_limits,
    "POST /captions": 10_000,
    "GET /captions/<job_id>": 100_000,
    "GET /captions/<job_id>/chunks": 10_000,
    "POST /script-runner": 1000,
    "GET /script-runner/<job_id>": 100_000,
  },
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The share of pixels (0-1) of the lower half whose luma differs by more than 48: drawn text, not re-encode noise. */
function lowerHalfDiff(a: Uint8Array, b: Uint8Array, width: number, height: number): number {
  let changed = 0;
  let n = 0;
  for (let y = Math.floor(height / 2); y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (Math.abs(a[y * width + x]! - b[y * width + x]!) > 48) changed++;
      n++;
    }
  }
  return changed / n;
}

for (const backend of await databaseBackends()) {
  const t = suite(`captions for every video on ${backend.name}`);
  let tk: TestKernel;
  let engine: MediaEngine;
  const open = async () =>
    createTestKernel({
      plugins: [account, text, omniSandbox, omni, imagesSandbox, videoSandbox, video, scriptRunner, captions],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      env: { SANDBOX_LATENCY_MS: "20", PUBLIC_URL: "https://media.example.test" },
    });
  withKernelAndEngine(t, open, (k, e) => ((tk = k), (engine = e)));

  async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string): Promise<T> {
    const end = Date.now() + 240_000;
    for (;;) {
      const v = await read();
      if (done(v)) return v;
      if (Date.now() > end) throw new Error(`${what}: still not done: ${JSON.stringify(v).slice(0, 400)}`);
      await sleep(100);
    }
  }
  const blob = async (url: string) =>
    (await tk.kernel.blobs.get(
      new URL(url).pathname.slice("/media/".length).split("/").map(decodeURIComponent).join("/"),
    ))!;
  const credits = async (key: string) =>
    (await tk.request("GET", "/credits", { key })).body.credits_remaining as number;

  /** A finished Omni clip (4 s, the shortest) in which a character says a line with its voice. */
  async function omniVideo(key: string): Promise<{ jobId: string; url: string }> {
    const mia = await character(tk, key, "Mia", [40, 90, 160], await voice(tk, key, "Narrator", "charon"));
    const res = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: 'Mia looks up. Mia: "Hello there, welcome to the show."', character_ids: [mia], duration: 4 },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await until(
      () => tk.request("GET", `/omni/video/${res.body.job_id}`, { key }),
      (r) => r.body.status !== "processing",
      "omni video",
    );
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    return { jobId: res.body.job_id, url: done.body.video_url };
  }

  /** A finished Script Runner run of two scenes on the 5 s model; its job id is what the partner holds. */
  async function scriptRun(key: string): Promise<string> {
    const prompt =
      "=== SCENE: Harbour ===\nA harbour at dawn.\n=== SCENE: Market ===\nA busy market.\n=== DIALOGUE 1 ===\nWe sail at noon.\n=== DIALOGUE 2 ===\nFresh fish!";
    const res = await tk.request("POST", "/script-runner", {
      key,
      body: { prompt, model: "beta-2-direct", character_image_base64: png([200, 60, 60]) },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await until(
      () => tk.request("GET", `/script-runner/${res.body.job_id}`, { key }),
      (r) => r.body.status !== "processing",
      "script run",
    );
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    return res.body.job_id;
  }

  t(
    "a finished Omni video: 202, captioned from its spoken record into a burned MP4; another account's is 404",
    async () => {
      const { key } = await tk.partner({ credits: 2000, limits: LIMITS });
      const other = await tk.partner({ credits: 2000, limits: LIMITS });
      const clip = await omniVideo(key);

      const before = await credits(key);
      const res = await tk.request("POST", "/captions", { key, body: { video_job_id: clip.jobId } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      assert.is(res.body.status, "pending");
      // The default tier's price (api_plus10: 28), charged once.
      assert.is(res.body.credits_used, 28);
      assert.is(await credits(key), before - 28);

      // Another account holding the id gets the 404 of a missing video, and is charged nothing.
      const foreignBefore = await credits(other.key);
      const foreign = await tk.request("POST", "/captions", { key: other.key, body: { video_job_id: clip.jobId } });
      assert.is(foreign.status, 404, JSON.stringify(foreign.body));
      assert.is(foreign.body.error, CAPTION_ERRORS.videoNotFound);
      assert.is(await credits(other.key), foreignBefore);

      const done = await captionDone(tk, key, res.body.job_id);
      assert.is(done.status, "complete", JSON.stringify(done));
      assert.is(done.credits_refunded, false);
      assert.is(done.source_available, true);
      // The record's words, as spoken: no recognizer guessed them.
      const chunks = (await tk.request("GET", `/captions/${res.body.job_id}/chunks`, { key })).body;
      const said = chunks.chunks
        .map((c: { text: string }) => c.text)
        .join(" ")
        .toLowerCase()
        .replace(/[^a-z ]/g, "");
      assert.is(said, "hello there welcome to the show", JSON.stringify(chunks.chunks));

      const src = await blob(clip.url);
      const out = await blob(done.captioned_url);
      const probe = await engine.probe(out, "out.mp4");
      const vs = probe.streams.find((s) => s.type === "video")!;
      assert.equal([vs.codec, vs.width, vs.height], ["h264", 1080, 1920]);
      assert.ok(
        probe.streams.some((s) => s.type === "audio"),
        "the sound is kept",
      );
      assert.ok(Math.abs(probe.durationSeconds - 4) < 0.3, String(probe.durationSeconds));
      // Text is drawn in the lower half while the first card shows, over the source's own picture.
      const first = chunks.chunks[0];
      const at = (first.start + first.end) / 2;
      const drawn = lowerHalfDiff(await lumaAt(engine, src, at), await lumaAt(engine, out, at), 1080, 1920);
      assert.ok(drawn > 0.003, `captions drawn at ${at}s (${drawn})`);
    },
  );

  t(
    "a Script Runner run: its scene clips joined and read; silent clips end no_speech, refunded; another account's run is 404",
    async () => {
      const { key } = await tk.partner({ credits: 2000, limits: LIMITS });
      const other = await tk.partner({ credits: 2000, limits: LIMITS });
      const runId = await scriptRun(key);

      const foreign = await tk.request("POST", "/captions", { key: other.key, body: { video_job_id: runId } });
      assert.is(foreign.status, 404, JSON.stringify(foreign.body));
      assert.is(foreign.body.error, CAPTION_ERRORS.videoNotFound);

      const before = await credits(key);
      const res = await tk.request("POST", "/captions", { key, body: { video_job_id: runId } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      assert.is(await credits(key), before - 28);
      const done = await captionDone(tk, key, res.body.job_id);
      assert.is(done.status, "no_speech", JSON.stringify(done));
      assert.is(done.error, CAPTION_FAILURES.noSpeech);
      assert.is(done.credits_refunded, true);
      assert.is(await credits(key), before);
      // The job read the run's film: both 5 s scenes end to end, in the clips' 720 x 1280.
      const row = await (tk.kernel.database.kysely as Kysely<any>)
        .selectFrom("captions_jobs")
        .select("media")
        .where("job_id", "=", res.body.job_id)
        .executeTakeFirstOrThrow();
      const media = typeof row.media === "string" ? JSON.parse(row.media) : row.media;
      assert.equal([media.width, media.height], [720, 1280]);
      assert.ok(Math.abs(media.duration - 10) < 0.3, JSON.stringify(media));
    },
  );

  t.run();
}
