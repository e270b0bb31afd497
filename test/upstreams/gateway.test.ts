// The `upstreams` plugin end to end through app.fetch with the job workers running, on every database backend:
// without PROVIDERS_FILE the sandbox serves as before; with it, an image model routed to fal is drawn through
// the fal stand-in (testkit/standins/fal.ts, fal's queue API) and taken in as our own PNG, a 503 at submit
// fails over to the Replicate stand-in, a model without a route is refused before any charge, a sandbox route
// still reaches the sandbox, route state shows in /readyz and /metrics, and a forged webhook answers 401.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { IMAGE_ERRORS } from "../../plugins/images/errors.ts";
import images from "../../plugins/images/index.ts";
import { encodePng, pngInfo } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import upstreams from "../../plugins/upstreams/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { type FalStandIn, startFalStandIn } from "../../testkit/standins/fal.ts";
import { type ReplicateStandIn, startReplicateStandIn } from "../../testkit/standins/replicate.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { balance, ledgerSum, partnerRows } from "../helpers/partner-reads.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";
import { OMNI_LIMITS, OMNI_PLUGINS, omniOptions } from "../omni/helpers.ts";
import { imageFinished, providersEnv, ROUTED_ENV } from "./helpers.ts";

const plugins = [account, imagesSandbox, upstreams, images];

async function generate(tk: TestKernel, key: string, body: Record<string, unknown>) {
  const res = await tk.request("POST", "/generate-image", { key, body: { aspect_ratio: "16:9", ...body } });
  return res;
}

/** A request outside the partner API (probes, metrics, callbacks), as its client sends it. */
async function root(tk: TestKernel, path: string, init: RequestInit = {}) {
  const res = await tk.fetch(new Request(`http://mediagate.test${path}`, init));
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

async function storedPng(tk: TestKernel, url: string) {
  const raw = await tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length));
  assert.ok(raw);
  return pngInfo(raw!);
}

for (const backend of await databaseBackends()) {
  const plain = suite(`upstreams without PROVIDERS_FILE on ${backend.name}`);
  const tk0 = suiteKernel(plain, backend, {
    plugins,
    start: true,
    env: { SANDBOX_LATENCY_MS: "0", PUBLIC_URL: "https://media.example.test" },
  });

  plain("the sandbox serves as before, its [sandbox:flaky] failover demo included", async () => {
    const { key } = await tk0.partner({ credits: 100 });
    const res = await generate(tk0, key, { prompt: "A fox [sandbox:flaky]", model: "image-a-pro" });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await imageFinished(tk0, key, res.body.generation_id);
    assert.is(done.body.status, "success");
    const ready = await root(tk0, "/readyz");
    assert.is(ready.body.details, undefined, "no gateway routes: nothing more in /readyz");
  });
  plain.run();

  const routed = suite(`upstreams with PROVIDERS_FILE on ${backend.name}`);
  let fal: FalStandIn;
  let replicate: ReplicateStandIn;
  const env: Record<string, string> = { ...ROUTED_ENV };
  // Before the kernel's own `before`: the file names the stand-ins' ports.
  routed.before(async () => {
    fal = await startFalStandIn();
    replicate = await startReplicateStandIn();
    const routes = {
      "image-a-pro": [
        { provider: "fal", model: "fal-ai/flux/dev", input: { image_size: { width: "{width}", height: "{height}" } } },
        { provider: "replicate", model: "black-forest-labs/flux-dev" },
      ],
      "image-b-2": [{ provider: "sandbox" }],
    };
    Object.assign(env, providersEnv({ fal, replicate }, routes));
  });
  const tk = suiteKernel(routed, backend, { plugins, start: true, env });
  routed.after(async () => {
    await fal?.close();
    await replicate?.close();
  });

  routed("a routed model is drawn through fal and taken in as our PNG of the spec's size", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const res = await generate(tk, key, { prompt: "A red fox in the snow", model: "image-a-pro" });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await imageFinished(tk, key, res.body.generation_id);
    assert.is(done.body.status, "success", JSON.stringify(done.body));
    assert.ok(done.body.image_url.startsWith("https://media.example.test/media/images/"), "our URL, never fal's");
    const submitted = [...fal.submitted.values()].find((r) => r.input.prompt === "A red fox in the snow");
    assert.ok(submitted, "fal got the prompt");
    assert.is(submitted!.model, "fal-ai/flux/dev");
    const { width, height } = await storedPng(tk, done.body.image_url);
    assert.equal(submitted!.input.image_size, { width, height }, "the route's template took the request's size");
    assert.equal([width, height], [done.body.width ?? width, done.body.height ?? height]);
  });

  routed(
    "an uploaded reference reaches fal as a signed link to our own media, removed once the job is over",
    async () => {
      const { key } = await tk.partner({ credits: 100 });
      const png = encodePng(4, 4, new Uint8Array(48).fill(9), 3);
      const res = await generate(tk, key, {
        prompt: "A fox like this one",
        model: "image-a-pro",
        ref_images: [{ base64: Buffer.from(png).toString("base64"), mime_type: "image/png" }],
      });
      assert.is(res.status, 202, JSON.stringify(res.body));
      const done = await imageFinished(tk, key, res.body.generation_id);
      assert.is(done.body.status, "success", JSON.stringify(done.body));
      const submitted = [...fal.submitted.values()].find((r) => r.input.prompt === "A fox like this one");
      const urls = submitted!.input.image_urls as string[];
      assert.is(urls.length, 1);
      const link = new URL(urls[0]!);
      assert.is(link.origin, "https://media.example.test");
      assert.match(link.pathname, /^\/media\/upstreams\/private\/refs\//);
      assert.ok(link.search.length > 1, "signed: the link carries its signature and expiry");
      const stored = await tk.kernel.blobs.get(decodeURIComponent(link.pathname.slice("/media/".length)));
      assert.is(stored, null, "released when the job was over");
    },
  );

  routed("a 503 at fal's submit fails over to Replicate; nothing is submitted twice", async () => {
    const { key } = await tk.partner({ credits: 100 });
    fal.refuseSubmits(503, 1);
    const before = fal.submitted.size;
    const res = await generate(tk, key, { prompt: "A heron at dawn", model: "image-a-pro" });
    assert.is(res.status, 202);
    const done = await imageFinished(tk, key, res.body.generation_id);
    assert.is(done.body.status, "success", JSON.stringify(done.body));
    assert.is(fal.submitted.size, before, "fal took nothing");
    const predictions = [...replicate.predictions.values()].filter((p) => p.input.prompt === "A heron at dawn");
    assert.is(predictions.length, 1);
  });

  routed("a model without a route is refused before any charge", async () => {
    const { id, key } = await tk.partner({ credits: 100 });
    const res = await generate(tk, key, { prompt: "A fox", model: "image-b-2-5-flare" });
    assert.is(res.status, 500);
    assert.equal(errorBody(res), { error: IMAGE_ERRORS.notAvailable });
    assert.is(await balance(tk, key), 100);
    assert.is(await partnerRows(tk, "jobs", id), 0);
    assert.is(await ledgerSum(tk, id), 100);
  });

  routed("a sandbox route reaches the sandbox", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const submits = fal.submitted.size + replicate.predictions.size;
    const res = await generate(tk, key, { prompt: "A lighthouse", model: "image-b-2" });
    assert.is(res.status, 202);
    const done = await imageFinished(tk, key, res.body.generation_id);
    assert.is(done.body.status, "success");
    assert.is(fal.submitted.size + replicate.predictions.size, submits);
  });

  routed("route state shows in /readyz details (ready all the same) and in /metrics", async () => {
    const ready = await root(tk, "/readyz");
    assert.is(ready.status, 200);
    const routes = ready.body.details.upstreams as Array<Record<string, unknown>>;
    assert.equal(routes.map((r) => `${r.model}#${r.route}:${r.provider}`).sort(), [
      "image-a-pro#0:fal",
      "image-a-pro#1:replicate",
      "image-b-2#0:sandbox",
    ]);
    assert.ok(routes.every((r) => r.state === "closed"));
    const metrics = await root(tk, "/metrics", { headers: { authorization: `Bearer ${tk.adminToken}` } });
    assert.is(metrics.status, 200);
    assert.match(
      String(metrics.body),
      /mediagate_upstream_route_state\{model="image-a-pro",route="0",provider="fal",state="closed"\} 1/,
    );
  });

  routed("a webhook is checked by the service's signature, without UPSTREAM_CALLBACK_SECRET too", async () => {
    const body = JSON.stringify({ request_id: "no-such-request", status: "OK", payload: {} });
    const forged = await root(tk, "/upstream/upstreams.image.image-a-pro/callback", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-fal-webhook-request-id": "no-such-request",
        "x-fal-webhook-user-id": "u",
        "x-fal-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "x-fal-webhook-signature": "00".repeat(64),
      },
      body,
    });
    assert.is(forged.status, 401);
    // Signed by fal's key (the stand-in's, published at jwks_url): accepted; the same body signed long ago: 401.
    const signed = await root(tk, "/upstream/upstreams.image.image-a-pro/callback", {
      method: "POST",
      headers: fal.signWebhook("no-such-request", body),
      body,
    });
    assert.is(signed.status, 202, JSON.stringify(signed.body));
    assert.is(signed.body.woken, false, "no job waits on that id");
    const stale = await root(tk, "/upstream/upstreams.image.image-a-pro/callback", {
      method: "POST",
      headers: fal.signWebhook("no-such-request", body, { timestampS: Math.floor(Date.now() / 1000) - 3600 }),
      body,
    });
    assert.is(stale.status, 401);
    const sandboxOnly = await root(tk, "/upstream/upstreams.image.image-b-2/callback", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    assert.is(sandboxOnly.status, 404, "a sandbox chain keeps the kernel's HMAC callbacks, off without the secret");
  });

  routed.run();
}

const omniSuite = suite("upstreams: an Omni model without a route");

omniSuite("is refused before any charge with Omni's 503; a routed one is taken", async () => {
  const { env } = omniOptions(providersEnv({}, { "omni-1.1": [{ provider: "sandbox" }] }));
  const tk = await createTestKernel({ plugins: [...OMNI_PLUGINS, upstreams], start: true, env });
  try {
    const { id, key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const refused = await tk.request("POST", "/omni/video", { key, body: { prompt: "a quiet street", model: "omni" } });
    assert.is(refused.status, 503);
    assert.equal(errorBody(refused), { error: OMNI_ERRORS.unavailable });
    assert.is(await balance(tk, key), 1000);
    assert.is(await partnerRows(tk, "jobs", id), 0);
    const taken = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "a quiet street", model: "omni-1.1" },
    });
    assert.is(taken.status, 202, JSON.stringify(taken.body));
  } finally {
    await tk.close();
  }
});

omniSuite.run();

const videoSuite = suite("upstreams: a video model routed to fal");

videoSuite(
  "completes through the fal stand-in with the request's duration and resolution; an unrouted model is refused",
  async () => {
    const fal = await startFalStandIn();
    const routes = {
      "alpha-v3-text-to-video": [{ provider: "fal", model: "fal-ai/kling-video/v2/master/text-to-video" }],
    };
    const tk = await createTestKernel({
      plugins: [account, videoSandbox, upstreams, video],
      start: true,
      env: { ...ROUTED_ENV, ...providersEnv({ fal }, routes) },
    });
    try {
      // The spec's per-minute limits would stop the polls of this test, not the code it tests.
      const limits = { rate_limits: { "GET /video-status/<job_id>": 100_000, "POST /generate-video": 1_000 } };
      const { key } = await tk.partner({ credits: 10_000, limits });
      const res = await tk.request("POST", "/generate-video", {
        key,
        body: { prompt: "A tram in the rain", model: "alpha-v3-text-to-video", duration: 5, quality: "720p" },
      });
      assert.is(res.status, 202, JSON.stringify(res.body));
      const done = await pollStatus(
        tk,
        key,
        `/video-status/${res.body.job_id}`,
        (b) => b.status !== "queued" && b.status !== "processing",
        120_000,
      );
      assert.is(done.body.status, "complete", JSON.stringify(done.body));
      const submitted = [...fal.submitted.values()].find((r) => r.input.prompt === "A tram in the rain");
      assert.ok(submitted);
      assert.is(submitted!.input.duration, 5);
      assert.is(submitted!.input.resolution, "720p");
      const other = await tk.request("POST", "/generate-video", {
        key,
        body: { prompt: "x", model: "gamma-3.1-fast", duration: 4, quality: "720p" },
      });
      assert.is(other.status, 500, "a model without a route is refused before any charge");
      assert.is(other.body.error, "Video generation not available");
    } finally {
      await tk.close();
      await fal.close();
    }
  },
);

videoSuite.run();

const musicSuite = suite("upstreams: a music model routed to Replicate");

musicSuite("completes through the Replicate stand-in with its MP3 taken in; an unrouted model is refused", async () => {
  const replicate = await startReplicateStandIn({ output: "mp3" });
  const tk = await createTestKernel({
    plugins: [account, musicSandbox, upstreams, music],
    start: true,
    env: {
      ...ROUTED_ENV,
      ...providersEnv({ replicate }, { V5_5: [{ provider: "replicate", model: "owner/song-model" }] }),
    },
  });
  try {
    const limits = { rate_limits: { "GET /music-status/<job_id>": 100_000, "POST /generate-music": 1_000 } };
    const { key } = await tk.partner({ credits: 10_000, limits });
    const res = await tk.request("POST", "/generate-music", {
      key,
      body: { prompt: "A calm piano piece", model: "V5_5" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await pollStatus(tk, key, `/music-status/${res.body.job_id}`, ended, 120_000);
    assert.ok(["complete", "success"].includes(done.body.status), JSON.stringify(done.body));
    const prediction = [...replicate.predictions.values()].find((p) => p.input.prompt === "A calm piano piece");
    assert.ok(prediction);
    assert.is(prediction!.model, "owner/song-model");
    const other = await tk.request("POST", "/generate-music", { key, body: { prompt: "x", model: "V5" } });
    assert.is(other.status, 503);
    assert.is(other.body.error, "Music generation is not configured.");
  } finally {
    await tk.close();
    await replicate.close();
  }
});

musicSuite.run();
