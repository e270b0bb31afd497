// POST /upscale-video end to end through app.fetch, on every database backend: the source downloaded and
// measured before the charge, billed per whole input second at the factor's rate on every account tier, real
// scaling polled at /video-status and listed by /videos without events, the 4K, 120 s, 50 MB and MP4/MOV
// rules before any charge, and a refund when the job fails.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine, displaySize, firstAudio, firstVideo, generateTestVideo } from "../../lib/media/index.ts";
import { UPSCALE_ERRORS } from "../../plugins/upscale/errors.ts";
import { assertAnswer, assertFields } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { testKernel } from "../helpers/kernel-suite.ts";
import { balance, ledgerSum, mediaBytes } from "../helpers/partner-reads.ts";
import { testPatternArgs } from "../helpers/test-pattern.ts";
import { ENGINE_MODES, fixture } from "../media/util.ts";
import { assertNothingChanged, count, fileServer, partner, replaceSource, upscaleOptions, videoEnd } from "./util.ts";

// Fixtures, made once on the fastest engine here (every await before the first suite: uvu starts on yield).
const BACKENDS = await databaseBackends();
const maker = createMediaEngine({ mode: ENGINE_MODES[0]! });
const make = async (args: string[], out: string, inputs: Record<string, Uint8Array> = {}) =>
  (await maker.run([...args, out], { inputs, outputs: [out], timeoutMs: 120_000 }))[out]!;
const clip = await generateTestVideo(maker, { width: 320, height: 180, seconds: 2.5, font: false }); // H.264 + AAC
const rotated = await make(["-i", "in.mp4", "-c", "copy", "-metadata:s:v:0", "rotate=90"], "rotated.mp4", {
  "in.mp4": clip,
});
const oddMov = await make(
  [
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=321x181:rate=25:duration=1",
    "-c:v",
    "mjpeg",
    "-q:v",
    "3",
    "-pix_fmt",
    "yuvj444p",
  ],
  "odd.mov",
);
const seven = await make(testPatternArgs("64x36", 5, 7), "seven.mp4");
const long = await make(testPatternArgs("64x36", 2, 121), "long.mp4");
const fullHd = await make(testPatternArgs("1920x1080", 5, 0.4), "hd.mp4");
const threeGp = await make(["-i", "in.mp4", "-c", "copy", "-f", "3gp"], "clip.3gp", { "in.mp4": clip });
const m4a = await make(["-i", "in.mp4", "-vn", "-c:a", "copy"], "sound.m4a", { "in.mp4": clip });
const mov = fixture("c.mov"); // real QuickTime file, 2750x1834
const seconds = {
  clip: (await maker.probe(clip)).durationSeconds,
  seven: (await maker.probe(seven)).durationSeconds,
  long: (await maker.probe(long)).durationSeconds,
};
await maker.close();

const hits: string[] = [];
const oversized = new Uint8Array(50_000_001);
oversized.set(clip.subarray(0, 64));
const server = await fileServer({
  "/clip.mp4": clip,
  "/rotated.mp4": rotated,
  "/odd.mov": oddMov,
  "/seven.mp4": (req, res) => {
    hits.push(req.url!);
    res.writeHead(200, { "content-length": String(seven.byteLength) }).end(seven);
  },
  "/long.mp4": long,
  "/hd.mp4": fullHd,
  "/c.mov": mov,
  "/clip.3gp": threeGp,
  "/sound.m4a": m4a,
  "/song.mp3": fixture("sample1.mp3"),
  "/notes.txt": new TextEncoder().encode("not a video\n".repeat(20)),
  "/huge.mp4": oversized,
  "/declared-huge.mp4": (_req, res) => {
    res.writeHead(200, { "content-length": String(50_000_001) });
    res.write(clip.subarray(0, 1000));
  },
  "/moved.mp4": (_req, res) => void res.writeHead(301, { location: "/clip.mp4" }).end(),
  "/broken.mp4": (_req, res) => void res.writeHead(500).end(),
});
const url = (path: string) => `${server.base}${path}`;

const engine = createMediaEngine({ mode: "auto" });
const finished = videoEnd;

for (const backend of BACKENDS) {
  const e = suite(`upscale-video end to end on ${backend.name}`);
  const tk = testKernel(e, backend, upscaleOptions());

  e("2x of a clip with sound: real H.264 twice the size, audio kept, polled and listed, no events", async () => {
    const { key, id } = await partner(tk, { credits: 1000 });
    const res = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: url("/clip.mp4"), partner_job_id: "v-1" },
    });
    assertAnswer(
      res,
      202,
      "credits_remaining credits_used input_seconds job_id output partner_job_id request_id status upscale_factor",
    );
    assert.is(res.body.status, "queued");
    assert.is(res.body.upscale_factor, 2);
    assert.is(res.body.partner_job_id, "v-1");
    assert.is(res.body.input_seconds, Math.ceil(seconds.clip));
    assert.is(res.body.input_seconds, 3);
    assert.is(res.body.credits_used, 20); // 3 s x 6 = 18 standard; x 1.1 = 19.8, rounded up once
    assert.equal(res.body.output, { width: 640, height: 360 });

    const done = await finished(tk, key, res.body.job_id);
    assert.is(done.status, "complete", JSON.stringify(done));
    assertFields(done, "duration job_id metadata_removed request_id status video_url");
    assert.is(done.metadata_removed, false);
    assert.ok(done.video_url.startsWith("https://media.example.test/media/video/clips/"));
    const out = await engine.probe(await mediaBytes(tk, done.video_url), "out.mp4");
    const v = firstVideo(out)!;
    assert.equal([v.codec, v.width, v.height], ["h264", 640, 360]);
    assert.is(firstAudio(out)?.codec, "aac");
    assert.ok(Math.abs(out.durationSeconds - seconds.clip) < 0.1, `${out.durationSeconds} vs ${seconds.clip}`);
    assert.is(done.duration, Math.round(out.durationSeconds));

    const list = await tk.request("GET", "/videos", { key });
    assert.is(list.body.total, 1);
    const rec = list.body.videos[0];
    assert.equal(
      [rec.job_id, rec.model, rec.status, rec.aspect_ratio, rec.credits_used, rec.partner_job_id],
      [res.body.job_id, "upscale-2x", "complete", "16:9", 20, "v-1"],
    );
    assert.is(rec.video_url, done.video_url);
    assert.is(await count(tk, "webhook_events", id), 0);
    assert.is(await ledgerSum(tk, id), 980);
    assert.is(await count(tk, "retained_blobs"), 0); // the source went with the job

    // Our own output is a service URL: read from storage, no download.
    const again = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: done.video_url, upscale_factor: 1 },
    });
    assert.is(again.status, 202, JSON.stringify(again.body));
    assert.equal(again.body.output, { width: 640, height: 360 });
    const againDone = await finished(tk, key, again.body.job_id);
    assert.is(againDone.status, "complete", JSON.stringify(againDone));
  });

  e("a rotated phone clip comes out upright at 4x; an odd-sized MOV at factor 1 gains one even pixel", async () => {
    const { key } = await partner(tk, { credits: 1000 });
    const up = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: url("/rotated.mp4"), upscale_factor: 4 },
    });
    assert.is(up.status, 202, JSON.stringify(up.body));
    assert.equal(up.body.output, { width: 720, height: 1280 });
    assert.is(up.body.credits_used, 33); // 3 s x 10 x 1.1
    const odd = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: url("/odd.mov"), upscale_factor: 1 },
    });
    assert.is(odd.status, 202, JSON.stringify(odd.body));
    assert.equal(odd.body.output, { width: 322, height: 182 });
    assert.is(odd.body.input_seconds, 1);
    assert.is(odd.body.credits_used, 7); // 6.6, rounded up

    for (const [id, w, h] of [
      [up.body.job_id, 720, 1280],
      [odd.body.job_id, 322, 182],
    ] as const) {
      const done = await finished(tk, key, id);
      assert.is(done.status, "complete", JSON.stringify(done));
      const probe = await engine.probe(await mediaBytes(tk, done.video_url), "out.mp4");
      assert.equal(displaySize(probe), { width: w, height: h });
      assert.is(firstVideo(probe)!.rotation, undefined);
      assert.equal([firstVideo(probe)!.width, firstVideo(probe)!.height], [w, h]);
    }
  });

  e.run();

  // ---------------------------------------------------------------------------------------------------
  // Prices and refusals: no workers, so accepted jobs stay queued.
  {
    const p = suite(`upscale-video prices and refusals on ${backend.name}`);
    const tk = testKernel(p, backend, upscaleOptions({ start: false }));

    p("billed per measured whole second at the factor's rate, rounded once after the tier", async () => {
      assert.is(Math.round(seconds.seven * 1000), 7000);
      const expected: Array<[string, 1 | 2 | 4, number]> = [
        ["api_plus10", 2, 47], // 7 x 6 = 42 -> 46.2 -> 47 (not 7 x 7 = 49)
        ["api_plus10", 1, 47],
        ["api_plus10", 4, 77], // 7 x 10 = 70 -> 77
        ["standard", 2, 42],
        ["standard", 4, 70],
        ["custom", 2, 39], // 7 x 5.5 = 38.5 -> 39
      ];
      for (const [tier, factor, credits] of expected) {
        const { key, id } = await partner(tk, { credits: 1000, tier: tier as any });
        if (tier === "custom")
          await tk.kernel.accounts.update(id, {
            customRates: { upscale: { video: { per_second_by_factor: { 2: 5.5 } } } },
          } as any);
        const res = await tk.request("POST", "/upscale-video", {
          key,
          body: { video_url: url("/seven.mp4"), upscale_factor: factor },
        });
        assert.is(res.status, 202, JSON.stringify(res.body));
        assert.is(res.body.input_seconds, 7);
        assert.is(res.body.credits_used, credits, `${tier} ${factor}x`);
        assert.is(await balance(tk, key), 1000 - credits);
        const status = await tk.request("GET", `/video-status/${res.body.job_id}`, { key });
        assert.equal([status.body.status, status.body.progress], ["queued", 0]);
      }
      // A custom account without the rate is refused before the source is even downloaded.
      const { key, id } = await partner(tk, { credits: 1000, tier: "custom" });
      await tk.kernel.accounts.update(id, {
        customRates: { upscale: { video: { per_second_by_factor: { 2: 5.5 } } } },
      } as any);
      const before = hits.length;
      const res = await tk.request("POST", "/upscale-video", {
        key,
        body: { video_url: url("/seven.mp4"), upscale_factor: 4 },
      });
      assert.is(res.status, 400);
      assert.is(hits.length, before);
      await assertNothingChanged(tk, id, key, 1000, "custom without rate", expected.length);
    });

    p("every refusal answers the spec's text before any charge and changes nothing", async () => {
      const { key, id } = await partner(tk, { credits: 1000 });
      const cases: Array<[Record<string, unknown>, number, string]> = [
        [{}, 400, UPSCALE_ERRORS.videoUrlRequired],
        [{ video_url: "" }, 400, UPSCALE_ERRORS.videoUrlRequired],
        [{ video_url: 7 }, 400, UPSCALE_ERRORS.videoUrl],
        [{ video_url: url("/clip.mp4"), upscale_factor: 3 }, 400, UPSCALE_ERRORS.factor],
        [{ video_url: url("/clip.mp4"), upscale_factor: "4" }, 400, UPSCALE_ERRORS.factor],
        [{ video_url: "ftp://example.com/a.mp4" }, 400, UPSCALE_ERRORS.videoUrl],
        [{ video_url: "https://user@example.com/a.mp4" }, 400, UPSCALE_ERRORS.videoUrl],
        [{ video_url: "https://exämple.com/a.mp4" }, 400, UPSCALE_ERRORS.videoUrl],
        [{ video_url: url("/nothing.mp4") }, 400, UPSCALE_ERRORS.videoDownload],
        [{ video_url: url("/moved.mp4") }, 400, UPSCALE_ERRORS.videoDownload],
        [{ video_url: url("/broken.mp4") }, 400, UPSCALE_ERRORS.videoDownload],
        [
          { video_url: "https://media.example.test/media/video/clips/svc-00000000-gone.mp4" },
          400,
          UPSCALE_ERRORS.videoDownload,
        ],
        [{ video_url: url("/notes.txt") }, 400, UPSCALE_ERRORS.videoFormat],
        [{ video_url: url("/song.mp3") }, 400, UPSCALE_ERRORS.videoFormat],
        [{ video_url: url("/sound.m4a") }, 400, UPSCALE_ERRORS.videoFormat],
        [{ video_url: url("/clip.3gp") }, 400, UPSCALE_ERRORS.videoFormat],
        [{ video_url: url("/long.mp4") }, 400, UPSCALE_ERRORS.videoTooLong],
        [{ video_url: url("/hd.mp4"), upscale_factor: 4 }, 400, UPSCALE_ERRORS.over4K],
        [{ video_url: url("/c.mov") }, 400, UPSCALE_ERRORS.over4K],
        [{ video_url: url("/huge.mp4") }, 413, UPSCALE_ERRORS.videoTooLarge],
        [{ video_url: url("/declared-huge.mp4") }, 413, UPSCALE_ERRORS.videoTooLarge],
      ];
      assert.ok(seconds.long > 120);
      for (const [body, code, text] of cases) {
        const res = await tk.request("POST", "/upscale-video", { key, body });
        const label = JSON.stringify(body);
        assert.is(res.status, code, `${label}: ${JSON.stringify(res.body)}`);
        assert.is(res.body.error, text, label);
        await assertNothingChanged(tk, id, key, 1000, label);
      }
      // The 1080p rule of the spec: 2x is allowed where 4x is not; the real MOV fits at factor 1.
      for (const [path, factor, size] of [
        ["/hd.mp4", 2, { width: 3840, height: 2160 }],
        ["/c.mov", 1, { width: 2750, height: 1834 }],
      ] as const) {
        const ok = await tk.request("POST", "/upscale-video", {
          key,
          body: { video_url: url(path), upscale_factor: factor },
        });
        assert.is(ok.status, 202, JSON.stringify(ok.body));
        assert.equal(ok.body.output, size);
      }
    });

    p("a 402 carries credits_remaining and keeps no file", async () => {
      const { key, id } = await partner(tk, { credits: 19 });
      const res = await tk.request("POST", "/upscale-video", { key, body: { video_url: url("/clip.mp4") } });
      assert.is(res.status, 402);
      assert.equal(errorBody(res), { error: "Insufficient credits. Need 20 credits.", credits_remaining: 19 });
      await assertNothingChanged(tk, id, key, 19, "402");
    });

    p("a job whose source cannot be scaled ends in error with the sanitized text, refunded", async () => {
      const { key, id } = await partner(tk, { credits: 100 });
      const res = await tk.request("POST", "/upscale-video", { key, body: { video_url: url("/clip.mp4") } });
      assert.is(res.status, 202);
      // Damaged after the measurement: the header still reads, the frames do not.
      await replaceSource(tk, res.body.job_id, new TextEncoder().encode("no longer a video"));
      await tk.kernel.start();
      const done = await finished(tk, key, res.body.job_id);
      assert.equal(done, {
        request_id: done.request_id,
        job_id: res.body.job_id,
        status: "error",
        error: UPSCALE_ERRORS.failed,
      });
      assert.is(await balance(tk, key), 100);
      assert.is(await ledgerSum(tk, id), 100);
      const list = await tk.request("GET", "/videos", { key });
      assert.equal([list.body.videos[0].status, list.body.videos[0].credits_refunded], ["error", 20]);
      assert.is(await count(tk, "retained_blobs"), 0);
      assert.is(await count(tk, "webhook_events", id), 0);
    });

    p.run();
  }
}

const closing = suite("upscale-video fixtures");
closing("close the file server and the engine", async () => {
  await server.close();
  await engine.close();
});
closing.run();
