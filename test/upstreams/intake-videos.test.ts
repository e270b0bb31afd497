// Video intake end to end (issue 39 item 5): gamma models routed to the fal stand-in (testkit/standins/fal.ts),
// which answers a small 16:9 MP4 with sound of the duration its input asks. The clip is taken in as the spec
// promises (H.264 at the requested frame size, the model's 8 s, no sound track for a silent model); a route
// whose template asks the upstream for 2 s gets a clip of another length class, and the job ends `error` with
// the area's sanitized text and one refund. On every database backend, workers running.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import upstreams from "../../plugins/upstreams/index.ts";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { type FalStandIn, startFalStandIn } from "../../testkit/standins/fal.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { ledgerSum } from "../helpers/partner-reads.ts";
import { videoFinished } from "../video/helpers.ts";
import { providersEnv, ROUTED_ENV } from "./helpers.ts";

// The spec's per-minute limits (60 status polls) would stop these tests, not the code they test.
const LIMITS = { rate_limits: { "GET /video-status/<job_id>": 100_000 } };

for (const backend of await databaseBackends()) {
  const t = suite(`video intake through the fal stand-in on ${backend.name}`);
  let fal: FalStandIn;
  let engine: MediaEngine;
  const env: Record<string, string> = { ...ROUTED_ENV };
  // Before the kernel's own `before`: the providers file names the stand-in's port.
  t.before(async () => {
    fal = await startFalStandIn();
    engine = createMediaEngine();
    const routes = {
      "gamma-3.1-fast": [{ provider: "fal", model: "fal-ai/test-video/fast" }],
      // A template that asks for the wrong length: what the upstream sends is another duration class.
      "gamma-3.1-quality": [{ provider: "fal", model: "fal-ai/test-video/short", input: { duration: 2 } }],
    };
    Object.assign(env, providersEnv({ fal }, routes));
  });
  const tk = suiteKernel(t, backend, { plugins: [account, videoSandbox, upstreams, video], start: true, env });
  t.after(async () => {
    await engine?.close();
    await fal?.close();
  });

  t("a routed clip is taken in as H.264 at the requested frame size and the model's length", async () => {
    const { key } = await tk.partner({ credits: 10_000, limits: LIMITS });
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "A kite over a beach", model: "gamma-3.1-fast", quality: "720p", aspect_ratio: "16:9" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete", JSON.stringify(done.body));
    assert.ok(done.body.video_url.startsWith("https://media.example.test/media/video/"), "our URL, never fal's");
    const bytes = await tk.kernel.blobs.get(new URL(done.body.video_url).pathname.slice("/media/".length));
    const probe = await engine.probe(bytes!, "clip.mp4");
    const v = probe.streams.find((s) => s.type === "video")!;
    assert.equal([v.codec, v.width, v.height], ["h264", 1280, 720], JSON.stringify(v));
    assert.is(
      probe.streams.find((s) => s.type === "audio"),
      undefined,
      "gamma is silent: the upstream's sound dropped",
    );
    assert.ok(Math.abs(probe.durationSeconds - 8) < 0.3, String(probe.durationSeconds));
    const request = [...fal.submitted.values()].find((r) => r.input.prompt === "A kite over a beach")!;
    assert.ok(request, "fal was asked");
  });

  t("a clip of another length class fails the job with the area's text and one refund", async () => {
    const { id, key } = await tk.partner({ credits: 10_000, limits: LIMITS });
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt: "A short kite", model: "gamma-3.1-quality", quality: "720p" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await videoFinished(tk, key, res.body.job_id);
    assert.is(done.body.status, "error", JSON.stringify(done.body));
    assert.is(done.body.error, VIDEO_ERRORS.failed);
    const request = [...fal.submitted.values()].find((r) => r.input.prompt === "A short kite")!;
    assert.is(request.status, "COMPLETED", "the upstream finished: intake refused its 2 s clip");
    assert.is(request.input.duration, 2);
    assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 10_000);
    assert.is(await ledgerSum(tk, id), 10_000);
  });

  t.run();
}
