// Video generation, animation and merging through app.fetch on every database backend: validation before
// charge with the spec's texts, prices per model and tier, the sandbox's real MP4 probed with the media
// engine, status and list shapes, events, failure and refund, reference media, merges.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { queuedThen } from "../../lib/job-states.ts";
import {
  createMediaEngine,
  generateTestVideo,
  type MediaEngine,
  mp4MetadataCategories,
} from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import video from "../../plugins/video/index.ts";
import { CALLBACK_URL_ERROR } from "../../plugins/video/input.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { frameColour } from "../helpers/frame-colour.ts";
import { balance, mediaBytes } from "../helpers/partner-reads.ts";
import { rowCount as count } from "../helpers/row-count.ts";
import { videoFinished } from "./helpers.ts";

/** The video record of the fake's job: another area's 1 s 2x upscale, as the videos list shows it. */
const UPSCALED = {
  kind: "upscale",
  prompt: "",
  model: "upscale-2x",
  model_used: "upscale-2x",
  quality: null,
  duration: 1,
  aspect_ratio: "4:3",
} as const;

// Another area's video jobs (video upscaling, issue 6) reach the status and list endpoints through the
// `video.records` capability; this stand-in makes one without importing the video plugin.
const fakeUpscale = definePlugin({
  name: "fake-upscale",
  requires: ["video.records", "media"],
  rateLimits: { "POST /fake-upscale": [{ limit: 1000, windowSeconds: 60 }] },
  jobs: {
    "video-upscale": {
      ...queuedThen("complete", "error"),
      failError: "Upscaling failed.",
      retries: 0,
      async run(ctx) {
        const bytes = await generateTestVideo(ctx.capability("media"), { width: 320, height: 240, seconds: 1 });
        const records = ctx.capability("video.records");
        return {
          state: "complete",
          output: (await records.storeOutput(ctx.jobId, bytes, {
            duration: 1,
            metadata_removed: false,
            width: 320,
            height: 240,
          })) as any,
        };
      },
    } satisfies JobKindDeclaration,
  },
  operations: [
    operation({
      method: "POST",
      path: "/fake-upscale",
      status: 202,
      async handle(ctx) {
        const records = ctx.capability("video.records");
        const job = await ctx.submitJob({
          kind: "video-upscale",
          state: "queued",
          credits: 7,
          insertRecords: (trx, [jobId]) =>
            records.insert(trx, { ...UPSCALED, job_id: jobId!, partner_id: ctx.partner.id }),
        });
        return { job_id: job.jobId };
      },
    }),
  ],
});

const PLUGINS = [account, videoSandbox, video, fakeUpscale];

/** A solid-colour PNG as base64. */
function png(rgb: [number, number, number], width = 64, height = 64): string {
  const px = new Uint8Array(width * height * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return Buffer.from(encodePng(width, height, px, 3)).toString("base64");
}

let engine: MediaEngine;

// The spec's per-minute limits (5 submits, 60 polls) would stop these tests, not the code they test.
const UNLIMITED = {
  rate_limits: {
    "POST /generate-video": 10_000,
    "POST /generate-animation": 10_000,
    "POST /merge-videos": 10_000,
    "GET /video-status/<job_id>": 100_000,
    "GET /videos": 10_000,
    "GET /credits": 10_000,
  },
};

for (const backend of await databaseBackends()) {
  const partner = (o: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ ...o, limits: UNLIMITED });
  /** A POST of `body` to `path` as the partner, its 202 asserted. */
  const accepted = async (key: string, path: string, body: Record<string, unknown>) => {
    const res = await tk.request("POST", path, { key, body });
    assert.is(res.status, 202, JSON.stringify(res.body));
    return res;
  };
  // ---------------------------------------------------------------------------------------------------
  // Validation and prices: no workers, so accepted jobs stay queued and nothing renders.
  const v = suite(`video validation and prices on ${backend.name}`);
  let tk: TestKernel;
  v.before.each(async () => {
    tk = await createTestKernel({
      plugins: PLUGINS,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  v.after.each(async () => {
    await tk.close();
  });

  v("every rule answers the spec's 400 and changes nothing", async () => {
    const { key } = await partner({ credits: 10_000 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, VIDEO_ERRORS.promptMissing],
      [{ prompt: "   " }, VIDEO_ERRORS.promptMissing],
      [{ prompt: "x", model: "nope" }, VIDEO_ERRORS.invalidModel],
      [{ prompt: "x".repeat(2501) }, VIDEO_ERRORS.promptTooLong(2500)],
      [{ prompt: "x".repeat(50001), model: "beta-2-5", duration: 5 }, VIDEO_ERRORS.promptTooLong(50000)],
      [{ prompt: "x", model: "alpha-v3-motion-control" }, VIDEO_ERRORS.motionControl],
      [{ prompt: "x", quality: "4K" }, VIDEO_ERRORS.invalidQuality("alpha-v3-text-to-video", ["720p", "1080p"])],
      [
        { prompt: "x", model: "beta-2-5", quality: "4K", duration: 5 },
        VIDEO_ERRORS.invalidQuality("beta-2-5", ["480p", "720p", "1080p"]),
      ],
      [{ prompt: "x", aspect_ratio: "4:3" }, VIDEO_ERRORS.invalidAspectRatio],
      [{ prompt: "x", duration: "10" }, VIDEO_ERRORS.invalidDuration],
      [{ prompt: "x", duration: 7.5 }, VIDEO_ERRORS.invalidDuration],
      [{ prompt: "x", duration: 7 }, VIDEO_ERRORS.durationNotSupported(7, "alpha-v3-text-to-video", "5, 10")],
      [
        { prompt: "x", model: "gamma-3.1-fast", duration: 10 },
        VIDEO_ERRORS.durationNotSupported(10, "gamma-3.1-fast", "4, 6, 8"),
      ],
      [{ prompt: "x", model: "beta-2-5", duration: 31 }, VIDEO_ERRORS.durationNotSupported(31, "beta-2-5", "4-30")],
      [{ prompt: "x", model: "beta-2-5", duration: 5, sound: true }, VIDEO_ERRORS.soundNotSupported("beta-2-5")],
      [{ prompt: "x", strip_metadata: "yes" }, VIDEO_ERRORS.stripMetadata],
      [{ prompt: "x", strip_metadata: null }, VIDEO_ERRORS.stripMetadata],
      [{ prompt: "x", image_url: "http://example.com/a.png" }, VIDEO_ERRORS.imageUrlHttps],
      [
        { prompt: "x", image_url: "https://user@example.com/a.png" },
        VIDEO_ERRORS.invalidImageUrl("https://user@example.com/a.png"),
      ],
      [{ prompt: "x", image_url: "https://10.0.0.1/a.png" }, VIDEO_ERRORS.invalidImageUrl("https://10.0.0.1/a.png")],
      [
        { prompt: "x", image_url: "https://example.com/a.png", end_image_url: "http://example.com/b.png" },
        VIDEO_ERRORS.endImageUrlHttps,
      ],
      [{ prompt: "x", end_image_url: "https://example.com/b.png" }, VIDEO_ERRORS.endFrameNeedsStart],
      [{ prompt: "x", end_image_base64: png([1, 2, 3]) }, VIDEO_ERRORS.endFrameNeedsStart],
      [{ prompt: "x", image_base64: "!!!" }, VIDEO_ERRORS.imageBase64],
      [{ prompt: "x", image_base64: png([1, 2, 3]), image_mime: "image/gif" }, VIDEO_ERRORS.imageMime],
      // The bytes decide, not the _mime: an SVG or a manifest sent as a frame is refused before the charge.
      [
        {
          prompt: "x",
          image_base64: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString("base64"),
          image_mime: "image/png",
        },
        VIDEO_ERRORS.notAnImage("image_base64"),
      ],
      [
        {
          prompt: "x",
          image_base64: png([1, 2, 3]),
          end_image_base64: Buffer.from("#EXTM3U\n#EXT-X-ENDLIST\n").toString("base64"),
        },
        VIDEO_ERRORS.notAnImage("end_image_base64"),
      ],
      [
        {
          prompt: "x",
          model: "beta-2-5",
          duration: 5,
          reference_images_base64: [png([1, 1, 1]), Buffer.from("<?xml version='1.0'?><x/>").toString("base64")],
        },
        VIDEO_ERRORS.notAnImage("reference_images_base64"),
      ],
      [{ prompt: "x", reference_image_urls: ["https://example.com/a.png"] }, VIDEO_ERRORS.referencesBetaOnly("images")],
      [
        { prompt: "x", model: "gamma-3.1-fast", reference_video_urls: ["https://example.com/a.mp4"] },
        VIDEO_ERRORS.referencesBetaOnly("videos"),
      ],
      [
        {
          prompt: "x",
          model: "beta-2-5",
          duration: 5,
          image_url: "https://example.com/a.png",
          reference_image_urls: ["https://example.com/b.png"],
        },
        VIDEO_ERRORS.referencesWithFrames,
      ],
      [
        {
          prompt: "x",
          model: "beta-2-direct",
          duration: 5,
          reference_image_urls: Array(10).fill("https://example.com/a.png"),
        },
        VIDEO_ERRORS.tooManyReferenceImages(10, 9, "beta-2-direct"),
      ],
      [
        {
          prompt: "x",
          model: "beta-2-5",
          duration: 5,
          reference_image_urls: Array(20).fill("https://example.com/a.png"),
          reference_images_base64: Array(11).fill(png([1, 1, 1])),
        },
        VIDEO_ERRORS.tooManyReferenceImages(31, 30, "beta-2-5"),
      ],
      [
        {
          prompt: "x",
          model: "beta-2-direct",
          duration: 5,
          reference_video_urls: Array(4).fill("https://example.com/a.mp4"),
        },
        VIDEO_ERRORS.tooManyReferenceVideos(4, 3, "beta-2-direct"),
      ],
      [
        { prompt: "x", model: "beta-2-direct", duration: 5, reference_audio_urls: ["https://example.com/a.mp3"] },
        VIDEO_ERRORS.referenceAudioNeedsVisual("beta-2-direct"),
      ],
      [
        { prompt: "x", model: "beta-2-5", duration: 5, reference_video_urls: ["https://127.0.0.1/a.mp4"] },
        VIDEO_ERRORS.invalidReferenceVideoUrl("https://127.0.0.1/a.mp4"),
      ],
      [
        { prompt: "x", model: "beta-2-5", duration: 5, reference_video_urls: "https://example.com/a.mp4" },
        VIDEO_ERRORS.referenceShape("reference_video_urls"),
      ],
      [{ prompt: "x", callback_url: "http://example.com/hook" }, CALLBACK_URL_ERROR],
      [{ prompt: "x", callback_url: "https://192.168.1.1/hook" }, CALLBACK_URL_ERROR],
      [{ prompt: "x", partner_job_id: "bad id!" }, KERNEL_ERRORS.invalidPartnerJobId],
    ];
    for (const [body, text] of cases) {
      const res = await tk.request("POST", "/generate-video", { key, body });
      assert.is(res.status, 400, `${JSON.stringify(body).slice(0, 120)} -> ${res.status} ${JSON.stringify(res.body)}`);
      assert.is(res.body.error, text, JSON.stringify(body).slice(0, 120));
    }
    assert.is(await balance(tk, key), 10_000);
    assert.is(await count(tk, "jobs"), 0);
    assert.is(await count(tk, "video_jobs"), 0);
  });

  v("base64 frames over 20 MB answer 413 without a charge", async () => {
    const { key } = await partner({ credits: 10_000 });
    // A PNG signature ("iVBORw0KGgoA": its 8 bytes and a zero) then zeros: an image by its first bytes, too big.
    const big = `iVBORw0KGgoA${"A".repeat(Math.ceil((20 * 1024 * 1024 + 3) / 3) * 4)}`;
    const start = await tk.request("POST", "/generate-video", { key, body: { prompt: "x", image_base64: big } });
    assert.is(start.status, 413);
    assert.is(start.body.error, VIDEO_ERRORS.imageTooLarge);
    const end = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", image_base64: png([1, 2, 3]), end_image_base64: big },
    });
    assert.is(end.status, 413);
    assert.is(end.body.error, VIDEO_ERRORS.endImageTooLarge);
    const ref = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", model: "beta-2-5", duration: 5, reference_images_base64: [big] },
    });
    assert.is(ref.status, 413);
    assert.is(ref.body.error, VIDEO_ERRORS.referenceImageTooLarge);
    assert.is(await balance(tk, key), 10_000);
    assert.is(await count(tk, "jobs"), 0);
  });

  v("prices follow the tables on every tier, rounded once", async () => {
    const cases: Array<[Record<string, unknown>, number, number]> = [
      // [body, api_plus10, standard]
      [{ model: "alpha-v3-text-to-video", quality: "720p", duration: 5 }, 55, 50],
      [{ model: "alpha-v3-text-to-video", quality: "720p", duration: 10 }, 110, 100],
      [{ model: "alpha-v3-image-to-video", quality: "1080p", duration: 5 }, 72, 65],
      [{ model: "alpha-v3-image-to-video", quality: "1080p", duration: 10 }, 165, 150],
      [{ model: "alpha-v3-text-to-video", quality: "720p", duration: 5, sound: true }, 83, 75],
      [{ model: "alpha-v3-text-to-video", quality: "720p", duration: 10, sound: true }, 160, 145],
      [{ model: "alpha-v3-text-to-video", quality: "1080p", duration: 5, sound: true }, 110, 100],
      [{ model: "alpha-v3-text-to-video", quality: "1080p", duration: 10, sound: true }, 220, 200],
      [{ model: "beta-2-direct", quality: "480p", duration: 3 }, 47, 42], // 15.4 x 3 = 46.2
      [{ model: "beta-2-direct", quality: "4K", duration: 5 }, 803, 730], // 160.6 x 5
      [{ model: "beta-2-5", quality: "720p", duration: 5 }, 248, 225], // 49.5 x 5 = 247.5
      [{ model: "beta-2-5", quality: "1080p", duration: 30 }, 3663, 3330],
      [{ model: "gamma-3.1-quality", quality: "1080p", duration: 4 }, 196, 178],
      [{ model: "gamma-3.1-quality", quality: "4K" }, 220, 200],
      [{ model: "gamma-3.1-fast", quality: "720p", duration: 6 }, 46, 41],
      [{ model: "gamma-3.1-fast", quality: "1080p" }, 54, 49],
    ];
    const plus = await partner({ credits: 100_000 });
    const std = await partner({ credits: 100_000, tier: "standard" });
    for (const [body, plus10, standard] of cases) {
      for (const [who, want] of [
        [plus, plus10],
        [std, standard],
      ] as const) {
        const res = await tk.request("POST", "/generate-video", {
          key: who.key,
          body: { prompt: "a lighthouse at dusk", ...body },
        });
        assert.is(res.status, 202, JSON.stringify(res.body));
        assert.is(res.body.credits_used, want, JSON.stringify(body));
        assert.is(res.body.status, "queued");
        assert.match(res.body.job_id, /^svc-[0-9a-f]{8}$/);
        // Cancel the in-flight slot for the next submit: the test partner's cap is 10.
        await tk.kernel.finishJob(res.body.job_id, { state: "error", refund: true, error: "test" });
      }
    }
    const anim = await tk.request("POST", "/generate-animation", {
      key: plus.key,
      body: { prompt: "morph", start_image_base64: png([255, 0, 0]), end_image_base64: png([0, 0, 255]) },
    });
    assert.is(anim.status, 202, JSON.stringify(anim.body));
    assert.is(anim.body.credits_used, 172);
    const animStd = await tk.request("POST", "/generate-animation", {
      key: std.key,
      body: { prompt: "morph", start_image_base64: png([255, 0, 0]), end_image_base64: png([0, 0, 255]) },
    });
    assert.is(animStd.body.credits_used, 156);
  });

  v("gamma clips are 8 s whatever is sent; text-to-video with a frame uses image-to-video", async () => {
    const { key } = await partner({ credits: 10_000 });
    const g = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", model: "gamma-3.1-fast", duration: 4 },
    });
    const a = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", image_base64: png([9, 9, 9]), duration: 5 },
    });
    const list = await tk.request("GET", "/videos", { key });
    const byId = Object.fromEntries(list.body.videos.map((x: any) => [x.job_id, x]));
    assert.is(byId[g.body.job_id].duration, 8);
    assert.is(byId[a.body.job_id].model, "alpha-v3-text-to-video");
    assert.is(byId[a.body.job_id].model_used, "alpha-v3-image-to-video");
    assert.match(byId[a.body.job_id].start_frame_url, /\/media\/video\/inputs\//);
    assert.is(byId[a.body.job_id].end_frame_url, null);
  });

  v("custom accounts need a negotiated rate", async () => {
    const { key, id } = await partner({ credits: 10_000, tier: "custom" });
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", quality: "1080p", duration: 5 },
    });
    assert.is(res.status, 400);
    assert.is(res.body.error, VIDEO_ERRORS.customNoRate("1080p", 5));
    const ref = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", model: "beta-2-5", duration: 5, reference_video_urls: ["https://example.com/a.mp4"] },
    });
    assert.is(ref.status, 400);
    assert.is(ref.body.error, VIDEO_ERRORS.customNoReferenceRate);
    const set = await tk.request("PATCH", `/api/v1/admin/partners/${id}`, {
      headers: { authorization: `Bearer ${tk.adminToken}` },
      body: { custom_rates: { video: { "alpha-v3-text-to-video": { combos: { "1080p_5s_noaudio": 40 } } } } },
    });
    assert.ok(set.status < 300, JSON.stringify(set.body));
    const ok = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "x", quality: "1080p", duration: 5 },
    });
    assert.is(ok.status, 202, JSON.stringify(ok.body));
    assert.is(ok.body.credits_used, 40);
    assert.is(await balance(tk, key), 10_000 - 40);
  });

  v("402 with the video's price, and the in-flight cap", async () => {
    const { key } = await partner({ credits: 54 });
    const res = await tk.request("POST", "/generate-video", { key, body: { prompt: "x", duration: 5 } });
    assert.is(res.status, 402);
    assert.is(res.body.error, VIDEO_ERRORS.insufficient(55));
    const anim = await tk.request("POST", "/generate-animation", {
      key,
      body: { prompt: "x", start_image_base64: png([1, 1, 1]), end_image_base64: png([2, 2, 2]) },
    });
    assert.is(anim.status, 402);
    assert.is(anim.body.error, VIDEO_ERRORS.animationInsufficient(172));
    assert.is(await count(tk, "jobs"), 0);
  });

  v("animation needs both frames", async () => {
    const { key } = await partner({ credits: 1000 });
    for (const body of [
      { prompt: "x" },
      { prompt: "x", start_image_base64: png([1, 1, 1]) },
      { prompt: "x", end_image_url: "https://example.com/b.png" },
    ]) {
      const res = await tk.request("POST", "/generate-animation", { key, body });
      assert.is(res.status, 400);
      assert.is(res.body.error, VIDEO_ERRORS.animationFramesRequired);
    }
    const long = await tk.request("POST", "/generate-animation", {
      key,
      body: { prompt: "x".repeat(2501), start_image_base64: png([1, 1, 1]), end_image_base64: png([2, 2, 2]) },
    });
    assert.is(long.body.error, VIDEO_ERRORS.animationPromptTooLong);
    assert.is(await balance(tk, key), 1000);
  });

  v("GET /videos filters by status and since, and caps limit at 200", async () => {
    const { key } = await partner({ credits: 10_000 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await tk.request("POST", "/generate-video", {
        key,
        body: { prompt: `clip ${i}`, model: "beta-2-direct", quality: "480p", duration: 2 },
      });
      ids.push(res.body.job_id);
      tk.clock.advance(60_000);
    }
    await tk.kernel.finishJob(ids[0]!, { state: "error", refund: true, error: VIDEO_ERRORS.failed });
    const all = await tk.request("GET", "/videos?limit=500", { key });
    assert.is(all.body.limit, 200);
    assert.is(all.body.total, 3);
    assert.equal(
      all.body.videos.map((x: any) => x.job_id),
      [...ids].reverse(),
    );
    const failed = await tk.request("GET", "/videos?status=failed", { key });
    assert.equal(
      failed.body.videos.map((x: any) => x.job_id),
      [ids[0]],
    );
    assert.is(failed.body.videos[0].status, "error");
    assert.is(failed.body.videos[0].credits_refunded, 31); // 15.4 x 2 = 30.8
    const running = await tk.request("GET", "/videos?status=processing", { key });
    assert.equal(
      running.body.videos.map((x: any) => x.job_id),
      [ids[2], ids[1]],
    );
    const bad = await tk.request("GET", "/videos?status=done", { key });
    assert.is(bad.status, 400);
    assert.is(bad.body.error, VIDEO_ERRORS.listStatus);
    const other = await partner({ credits: 10 });
    assert.is((await tk.request("GET", "/videos", { key: other.key })).body.total, 0);
    assert.is((await tk.request("GET", `/video-status/${ids[1]}`, { key: other.key })).status, 404);
    const queued = await tk.request("GET", `/video-status/${ids[1]}`, { key });
    assert.equal(Object.keys(queued.body).sort(), ["job_id", "message", "progress", "request_id", "status"]);
    assert.is(queued.body.status, "queued");
  });

  v.run();

  // ---------------------------------------------------------------------------------------------------
  // End to end with the workers and the sandbox provider.
  const e = suite(`video end to end on ${backend.name}`);
  e.before(async () => {
    engine = createMediaEngine({ mode: "auto" });
  });
  e.after(async () => {
    await engine.close();
  });
  e.before.each(async () => {
    tk = await createTestKernel({
      plugins: PLUGINS,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      env: { SANDBOX_LATENCY_MS: "40", PUBLIC_URL: "https://media.example.test", ALLOW_PRIVATE_URLS: "1" },
    });
  });
  e.after.each(async () => {
    await tk.close();
  });

  e("a clip renders as a real MP4 of the asked size and length, with its event", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const res = await accepted(key, "/generate-video", {
      prompt: "A paper boat on a stream",
      model: "beta-2-direct",
      quality: "480p",
      duration: 2,
      aspect_ratio: "16:9",
      partner_job_id: "boat-1",
    });
    assert.is(res.body.partner_job_id, "boat-1");
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    assert.is(done.body.duration, 2);
    assert.is(done.body.metadata_removed, false);
    assert.ok(done.body.video_url.startsWith("https://media.example.test/media/video/clips/"));
    const bytes = await mediaBytes(tk, done.body.video_url);
    const probe = await engine.probe(bytes, "clip.mp4");
    const v0 = probe.streams.find((s) => s.type === "video")!;
    assert.is(v0.codec, "h264");
    assert.is(v0.width, 854);
    assert.is(v0.height, 480);
    assert.ok(Math.abs(probe.durationSeconds - 2) < 0.15, String(probe.durationSeconds));
    assert.is(
      probe.streams.some((s) => s.type === "audio"),
      false,
    );
    // Provenance metadata is there unless strip_metadata asked otherwise.
    assert.ok(mp4MetadataCategories(bytes).length > 0);

    const events = await tk.kernel.database.kysely
      .selectFrom("webhook_events")
      .selectAll()
      .where("partner_id", "=", id)
      .execute();
    assert.is(events.length, 1);
    const body = JSON.parse(events[0]!.body);
    assert.is(body.event, "video.completed");
    assert.equal(Object.keys(body.data).sort(), [
      "aspect_ratio",
      "created_at",
      "credits_refunded",
      "credits_used",
      "duration",
      "error",
      "job_id",
      "model",
      "partner_job_id",
      "status",
      "video_url",
    ]);
    assert.is(body.data.status, "complete");
    assert.is(body.data.video_url, done.body.video_url);
    assert.is(body.data.credits_used, 31);
  });

  e("strip_metadata stores a file without provenance, and says so from the file", async () => {
    const { key } = await partner({ credits: 1000 });
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "clean", model: "beta-2-direct", quality: "480p", duration: 2, strip_metadata: true },
    });
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.metadata_removed, true);
    assert.equal(mp4MetadataCategories(await mediaBytes(tk, done.body.video_url)), []);
  });

  e("sound gives an AAC track; frames are the first and last pictures", async () => {
    const { key } = await partner({ credits: 1000 });
    const res = await accepted(key, "/generate-video", {
      prompt: "red to blue",
      duration: 5,
      sound: true,
      aspect_ratio: "1:1",
      image_base64: png([250, 0, 0]),
      end_image_base64: png([0, 0, 250]),
      image_mime: "image/png",
      end_image_mime: "image/png",
    });
    assert.is(res.body.credits_used, 83);
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    const bytes = await mediaBytes(tk, done.body.video_url);
    const probe = await engine.probe(bytes, "clip.mp4");
    const a = probe.streams.find((s) => s.type === "audio");
    assert.is(a?.codec, "aac");
    const vs = probe.streams.find((s) => s.type === "video")!;
    assert.equal([vs.width, vs.height], [720, 720]);
    const first = await frameColour(engine, bytes, 0);
    const last = await frameColour(engine, bytes, probe.durationSeconds - 0.08);
    assert.ok(first.r > 150 && first.b < 100, JSON.stringify(first));
    assert.ok(last.b > 150 && last.r < 100, JSON.stringify(last));
  });

  e("[sandbox:fail] ends error, refunded, with a video.failed event", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "boom [sandbox:fail]", model: "gamma-3.1-fast" },
    });
    assert.is(res.body.credits_used, 46);
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.equal(Object.keys(done.body).sort(), ["error", "job_id", "request_id", "status"]);
    assert.is(done.body.status, "error");
    assert.is(done.body.error, VIDEO_ERRORS.failed);
    assert.is(await balance(tk, key), 1000);
    const events = await tk.kernel.database.kysely
      .selectFrom("webhook_events")
      .selectAll()
      .where("partner_id", "=", id)
      .execute();
    const body = JSON.parse(events[0]!.body);
    assert.is(body.event, "video.failed");
    assert.is(body.data.credits_refunded, 46);
    assert.is(body.data.video_url, null);
    assert.is(body.data.duration, 8);
  });

  e("animation: 8 s of 1080p with audio from two frames", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const res = await accepted(key, "/generate-animation", {
      prompt: "sunrise",
      start_image_base64: png([10, 10, 60]),
      end_image_base64: png([250, 200, 40]),
      start_image_mime: "image/png",
      end_image_mime: "image/png",
      aspect_ratio: "16:9",
    });
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    assert.is(done.body.duration, 8);
    const probe = await engine.probe(await mediaBytes(tk, done.body.video_url), "a.mp4");
    const vs = probe.streams.find((s) => s.type === "video")!;
    assert.equal([vs.width, vs.height], [1920, 1080]);
    assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "aac");
    const events = await tk.kernel.database.kysely
      .selectFrom("webhook_events")
      .select("body")
      .where("partner_id", "=", id)
      .execute();
    assert.is(JSON.parse(events[0]!.body).event, "video.completed");
  });

  e("merge joins completed clips in order, charges 110, and refunds on a 502", async () => {
    const { key } = await partner({ credits: 1000 });
    const ids: string[] = [];
    for (const d of [2, 3]) {
      const res = await tk.request("POST", "/generate-video", {
        key,
        body: { prompt: `part ${d}`, model: "beta-2-direct", quality: "480p", duration: d },
      });
      ids.push(res.body.job_id);
    }
    for (const id of ids) assert.is((await videoFinished(tk, key, id)).body.status, "complete");
    const before = await balance(tk, key);

    for (const [body, status, text] of [
      [{ job_ids: [ids[0]] }, 400, VIDEO_ERRORS.mergeNeedTwo],
      [{}, 400, VIDEO_ERRORS.mergeNeedTwo],
      [{ job_ids: [ids[0], "nope"] }, 400, VIDEO_ERRORS.mergeInvalidJobId("nope")],
      [{ job_ids: [ids[0], "svc-00000000"] }, 404, VIDEO_ERRORS.mergeNotFound],
    ] as const) {
      const res = await tk.request("POST", "/merge-videos", { key, body });
      assert.is(res.status, status);
      assert.is(res.body.error, text);
    }
    const stranger = await partner({ credits: 1000 });
    assert.is((await tk.request("POST", "/merge-videos", { key: stranger.key, body: { job_ids: ids } })).status, 404);

    const res = await tk.request("POST", "/merge-videos", {
      key,
      body: { job_ids: [ids[1], ids[0]], partner_job_id: "m-1" },
    });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.merge_id, /^svc-[0-9a-f]{8}$/);
    assert.is(res.body.partner_job_id, "m-1");
    assert.is(res.body.credits_used, 110);
    assert.is(res.body.credits_remaining, before - 110);
    const merged = await engine.probe(await mediaBytes(tk, res.body.merged_url), "m.mp4");
    assert.ok(Math.abs(merged.durationSeconds - 5) < 0.5, String(merged.durationSeconds));
    // The merge is not a video job.
    assert.is((await tk.request("GET", "/videos", { key })).body.total, 2);

    const poor = await partner({ credits: 1000 });
    const p1 = await tk.request("POST", "/generate-video", {
      key: poor.key,
      body: { prompt: "a", model: "beta-2-direct", quality: "480p", duration: 2 },
    });
    const p2 = await tk.request("POST", "/generate-video", {
      key: poor.key,
      body: { prompt: "b", model: "beta-2-direct", quality: "480p", duration: 2 },
    });
    await videoFinished(tk, poor.key, p1.body.job_id);
    await videoFinished(tk, poor.key, p2.body.job_id);
    await tk.kernel.database.kysely
      .updateTable("partners")
      .set({ credits_remaining: 100 })
      .where("id", "=", poor.id)
      .execute();
    await tk.kernel.accounts.changed(poor.id);
    const broke = await tk.request("POST", "/merge-videos", {
      key: poor.key,
      body: { job_ids: [p1.body.job_id, p2.body.job_id] },
    });
    assert.is(broke.status, 402);
    assert.is(broke.body.error, VIDEO_ERRORS.mergeInsufficient(110));

    // A clip whose file is damaged: the merge fails for real, 502, and the charge comes back.
    const status = await tk.request("GET", `/video-status/${ids[0]}`, { key });
    const blobKey = new URL(status.body.video_url).pathname.replace(/^\/media\//, "");
    await tk.kernel.blobs.put(blobKey, new TextEncoder().encode("not a video at all"));
    const mid = await balance(tk, key);
    const failed = await tk.request("POST", "/merge-videos", { key, body: { job_ids: ids } });
    assert.is(failed.status, 502);
    assert.is(failed.body.error, VIDEO_ERRORS.mergeFailed);
    assert.is(await balance(tk, key), mid);
    await tk.kernel.blobs.remove(blobKey);
    const missing = await tk.request("POST", "/merge-videos", { key, body: { job_ids: ids } });
    assert.is(missing.status, 404);
    assert.is(missing.body.error, VIDEO_ERRORS.mergeFileMissing(ids[0]!));
  });

  e("another area's video jobs are served by video-status and videos, without events", async () => {
    const { key, id } = await partner({ credits: 100 });
    const res = await accepted(key, "/fake-upscale", {});
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete");
    assert.is(done.body.duration, 1);
    assert.ok(done.body.video_url.startsWith("https://media.example.test/media/video/clips/"));
    assert.is((await mediaBytes(tk, done.body.video_url)).length > 0, true);
    const list = await tk.request("GET", "/videos", { key });
    assert.equal(
      list.body.videos.map((x: any) => [x.job_id, x.model]),
      [[res.body.job_id, "upscale-2x"]],
    );
    assert.is(
      (await tk.kernel.database.kysely.selectFrom("webhook_events").selectAll().where("partner_id", "=", id).execute())
        .length,
      0,
    );
  });

  e("reference videos are downloaded, measured and billed before the charge", async () => {
    const clip = await generateTestVideo(engine, { width: 320, height: 240, seconds: 3 });
    const server: Server = createServer((req, res) => {
      if (req.url === "/clip.mp4") return void res.writeHead(200, { "content-type": "video/mp4" }).end(clip);
      if (req.url === "/notes.txt") return void res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      if (req.url === "/huge.mp4")
        return void res
          .writeHead(200, { "content-type": "video/mp4", "content-length": String(200 * 1024 * 1024) })
          .end();
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { key } = await partner({ credits: 1000 });
      const bad: Array<[string, number, string]> = [
        [`${base}/missing.mp4`, 400, VIDEO_ERRORS.referenceVideoDownload(404)],
        [`${base}/notes.txt`, 400, VIDEO_ERRORS.referenceVideoUnusable],
        [`${base}/huge.mp4`, 413, VIDEO_ERRORS.referenceVideoTooLarge],
      ];
      for (const [url, status, text] of bad) {
        const res = await tk.request("POST", "/generate-video", {
          key,
          body: { prompt: "x", model: "beta-2-5", quality: "480p", duration: 4, reference_video_urls: [url] },
        });
        assert.is(res.status, status, url);
        assert.is(res.body.error, text, url);
      }
      assert.is(await balance(tk, key), 1000);
      assert.is(await count(tk, "jobs"), 0);
      const res = await accepted(key, "/generate-video", {
        prompt: "like [Video 1]",
        model: "beta-2-5",
        quality: "480p",
        duration: 4,
        reference_video_urls: [`${base}/clip.mp4`],
      });
      // 13.2 x (3 measured + 4 output) = 92.4 -> 93 (rounded once)
      assert.is(res.body.credits_used, 93);
      const done = await videoFinished(tk, key, res.body.job_id);
      assert.is(done.body.status, "complete", JSON.stringify(done.body));
    } finally {
      server.close();
    }
  });

  e.run();
}
