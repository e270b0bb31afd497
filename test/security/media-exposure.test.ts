// What `/media` gives to anyone without a key (docs/architecture.md "Media links", issue 14 item 2). Jobs of every plugin
// run through their sandbox providers, then every stored blob key is walked and asked for under `/media`
// with no key: a file is either private (under `<plugin>/private/`, answered 404, reachable only through its
// plugin's authenticated path) or a capability URL (served, named with at least 128 random bits, not its
// content hash, and one the API handed out). A private file's media URL given to another partner's job as a source reads as missing.
// Then the names written before this rule: legacy social downloads (named after the job) are refused, and
// older 96-bit names keep working.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { RATE_LIMITS } from "../../core/rate-limits.ts";
import { createMediaEngine, generateTestVideo } from "../../lib/media/index.ts";
import { serviceMediaReader } from "../../lib/service-media.ts";
import { pcm16Wav } from "../../lib/speech/pcm.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { plugins } from "../../plugins/index.ts";
import { VOICES } from "../../plugins/voiceover/models.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";

const PUBLIC_URL = "https://media.example.test";
const MEDIA = `${PUBLIC_URL}/media/`;
/** 128 random bits, as every name we serve spells them: 32 hex digits in one segment. */
const CAPABILITY = /[0-9a-f]{32}/;
const UNLIMITED = {
  inflight_jobs: 100,
  rate_limits: Object.fromEntries(Object.keys(RATE_LIMITS).map((k) => [k, 100_000])),
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Reference media served over loopback (ALLOW_PRIVATE_URLS), made once.
const engine = createMediaEngine({ mode: "auto" });
onAfterAll(() => engine.close());
const clip = await generateTestVideo(engine, { width: 320, height: 240, seconds: 3 });
const tone = (
  await engine.run(["-i", "in.mp4", "-vn", "-c:a", "libmp3lame", "-b:a", "64k", "out.mp3"], {
    inputs: { "in.mp4": clip },
    outputs: ["out.mp3"],
    timeoutMs: 60_000,
  })
)["out.mp3"]!;

function png(rgb: [number, number, number], size = 32): Uint8Array {
  const px = new Uint8Array(size * size * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return encodePng(size, size, px, 3);
}
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** A mono 16-bit WAV of a 440 Hz tone. */
function toneWav(seconds: number, rate = 22050): Uint8Array {
  const samples = Int16Array.from({ length: Math.round(seconds * rate) }, (_, i) =>
    Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)),
  );
  return pcm16Wav(samples, rate);
}

/** Every media link in a response body, wherever it sits. */
function mediaLinks(value: unknown, into: Set<string>): void {
  if (typeof value === "string") {
    if (value.startsWith(MEDIA)) into.add(value);
  } else if (Array.isArray(value)) {
    for (const v of value) mediaLinks(v, into);
  } else if (value && typeof value === "object") {
    for (const v of Object.values(value)) mediaLinks(v, into);
  }
}

const mediaPath = (key: string) => `/media/${key.split("/").map(encodeURIComponent).join("/")}`;

// One backend: the keys walked are the blob store's, named the same whichever database holds the records
// (the per-backend behaviour of the same code is covered by each area's own tests), and the walk runs a job
// of every plugin, a heavy test to repeat on a shared machine.
for (const backend of (await databaseBackends()).slice(0, 1)) {
  const t = suite(`media exposure on ${backend.name}`);
  let tk: TestKernel;
  let server: Server;
  let base = "";
  t.before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/clip.mp4") return void res.writeHead(200, { "content-type": "video/mp4" }).end(clip);
      if (req.url === "/tone.mp3") return void res.writeHead(200, { "content-type": "audio/mpeg" }).end(tone);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    tk = await createTestKernel({
      plugins,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      env: { SANDBOX_LATENCY_MS: "5", PUBLIC_URL, ALLOW_PRIVATE_URLS: "1" },
    });
  });
  t.after(async () => {
    await tk.close();
    server.close();
  });

  t("every stored file is private (404 under /media) or a handed-out capability URL with 128 random bits", async () => {
    const { key } = await tk.partner({ credits: 1_000_000, limits: UNLIMITED });
    const handedOut = new Set<string>();
    const call = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      const res = await tk.request(method, path, { key, body, headers });
      mediaLinks(res.body, handedOut);
      return res;
    };
    const submitted = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      const res = await call(method, path, body, headers);
      assert.ok(res.status === 200 || res.status === 202, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    /** Polls a status path until `done` says so; every answer's media links are collected. */
    const until = async (path: string, done: (body: any) => boolean) => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const res = await call("GET", path);
        assert.is(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
        if (done(res.body)) return res.body;
        if (Date.now() > deadline) throw new Error(`${path} still ${JSON.stringify(res.body)}`);
        await sleep(100);
      }
    };
    const videoDone = (id: string) =>
      until(`/video-status/${id}`, (b) => b.status === "complete" || b.status === "error");
    const complete = (b: any) => assert.is(b.status, "complete", JSON.stringify(b));

    // images: uploaded references and the image
    const image = await submitted("POST", "/generate-image", {
      prompt: "a fox",
      ref_images: [{ base64: b64(png([200, 10, 10])), mime_type: "image/png" }],
    });
    assert.is((await until(`/image-status/${image.generation_id}`, (b) => b.status !== "pending")).status, "success");
    // video: frames (shown), reference images, videos and audio (never shown), the clip, an animation, a merge
    const framed = await submitted("POST", "/generate-video", {
      prompt: "a lighthouse",
      image_base64: b64(png([1, 2, 3])),
      image_mime: "image/png",
      duration: 5,
    });
    const referenced = await submitted("POST", "/generate-video", {
      prompt: "like [Video 1]",
      model: "beta-2-5",
      quality: "480p",
      duration: 4,
      reference_images_base64: [b64(png([9, 9, 9]))],
      reference_video_urls: [`${base}/clip.mp4`],
      reference_audio_urls: [`${base}/tone.mp3`],
    });
    const animation = await submitted("POST", "/generate-animation", {
      prompt: "morph",
      start_image_base64: b64(png([255, 0, 0])),
      end_image_base64: b64(png([0, 0, 255])),
    });
    for (const job of [framed, referenced, animation]) complete(await videoDone(job.job_id));
    await submitted("POST", "/merge-videos", { job_ids: [framed.job_id, framed.job_id] });
    // upscale: a source upload (kept until its job is done) and its outputs, and one read from our own URL
    const clipUrl = (await call("GET", `/video-status/${framed.job_id}`)).body.video_url;
    const upImage = await submitted("POST", "/upscale-image", { image_base64: b64(png([5, 6, 7])), upscale_factor: 2 });
    assert.is((await until(`/image-status/${upImage.generation_id}`, (b) => b.status !== "pending")).status, "success");
    const upVideo = await submitted("POST", "/upscale-video", { video_url: clipUrl, upscale_factor: 1 });
    complete(await videoDone(upVideo.job_id));
    // voiceover, music (a generation and an uploaded source), metadata, social
    await submitted("POST", "/generate-voiceover", { text: "Hello there.", voice_id: VOICES[0]!.voice_id });
    const music = await submitted(
      "POST",
      "/generate-music",
      { prompt: "calm piano" },
      { "idempotency-key": "exposure-1" },
    );
    complete(await until(`/music-status/${music.job_id}`, (b) => b.status === "complete" || b.status === "error"));
    const form = new FormData();
    form.set(
      "parameters",
      JSON.stringify({ continue_at: 2, mode: "custom", style: "ambient", title: "Drift", instrumental: true }),
    );
    form.set("audio", new Blob([toneWav(4) as Uint8Array<ArrayBuffer>]), "drift.wav");
    const extended = await submitted("POST", "/extend-music", form, { "idempotency-key": "exposure-2" });
    complete(await until(`/music-status/${extended.job_id}`, (b) => b.status === "complete" || b.status === "error"));
    await submitted("POST", "/remove-metadata", { image_base64: b64(png([3, 3, 3])) });
    const social = await submitted("POST", "/social-download", {
      url: "https://www.tiktok.com/@someone/video/7300000000000000001",
    });
    assert.is(
      (await until(`/social-download/${social.download_id}`, (b) => b.status !== "pending")).status,
      "complete",
    );
    // The lists hand out links too (GET /images lists the uploaded references).
    for (const path of ["/images", "/videos", "/music", "/voiceovers", "/social-downloads"])
      await submitted("GET", path);

    const keys = (await tk.kernel.blobs.keys()).sort();
    const byPlugin = new Map<string, { served: string[]; hidden: string[] }>();
    const problems: string[] = [];
    for (const k of keys) {
      const segments = k.split("/");
      const entry = byPlugin.get(segments[0]!) ?? { served: [], hidden: [] };
      byPlugin.set(segments[0]!, entry);
      const res = await tk.request("GET", mediaPath(k), { userAgent: "anyone/1.0" });
      const isPrivate = segments[1] === "private";
      if (isPrivate) {
        if (res.status !== 404) problems.push(`${k}: private, but /media answers ${res.status}`);
        entry.hidden.push(k);
        continue;
      }
      if (res.status !== 200) {
        problems.push(`${k}: neither private nor served (/media answers ${res.status})`);
        continue;
      }
      entry.served.push(k);
      if (!segments.slice(1).some((s) => CAPABILITY.test(s)))
        problems.push(`${k}: served without 128 random bits in its name`);
      // Hex, but not random: a name derived from the bytes is known to anyone who has them.
      if (
        k.includes(
          createHash("sha256")
            .update((await tk.kernel.blobs.get(k))!)
            .digest("hex"),
        )
      )
        problems.push(`${k}: served under its content hash`);
      if (!handedOut.has(PUBLIC_URL + mediaPath(k)))
        problems.push(`${k}: served, but no response ever handed it out (should it be private?)`);
    }
    assert.equal(problems, [], `\n${problems.join("\n")}\nkeys:\n${keys.join("\n")}`);

    // Every plugin that keeps files was exercised, on both sides of the line where it has both.
    const served = (p: string) => byPlugin.get(p)?.served.length ?? 0;
    const hidden = (p: string) => byPlugin.get(p)?.hidden.length ?? 0;
    for (const p of ["images", "video", "voiceover", "music", "metadata"])
      assert.ok(served(p) > 0, `${p} serves files`);
    for (const p of ["video", "music", "social"]) assert.ok(hidden(p) > 0, `${p} keeps private files`);
    assert.is(served("social"), 0, "social downloads are never media links");

    // Every link handed out works without a key (the rule refuses nothing it should serve).
    for (const url of handedOut) assert.is((await tk.request("GET", new URL(url).pathname)).status, 200, url);

    // A private file's media URL given as a source by another partner is not read from storage.
    const stranger = await tk.partner({ credits: 1000, limits: UNLIMITED });
    const socialVideo = byPlugin.get("social")!.hidden.find((k) => k.endsWith(".mp4"))!;
    const stolen = await tk.request("POST", "/remove-metadata", {
      key: stranger.key,
      body: { video_url: PUBLIC_URL + mediaPath(socialVideo) },
    });
    assert.is(stolen.status, 404, JSON.stringify(stolen.body));
    // A reference video is kept as downloaded (`.bin`) until its job normalizes it (plugins/video/index.ts).
    const refVideo = byPlugin.get("video")!.hidden.find((k) => /\/ref-video-\d+\.(mp4|bin)$/.test(k))!;
    const upscaled = await tk.request("POST", "/upscale-video", {
      key: stranger.key,
      body: { video_url: PUBLIC_URL + mediaPath(refVideo) },
    });
    assert.ok(upscaled.status >= 400 && upscaled.status < 500, JSON.stringify(upscaled.body));
  });

  t.run();
}

// ---------------------------------------------------------------------------------------------------------
// Names written before the rule, put straight into storage: the route and the reader agree on each.

const legacy = suite("media exposure: names written before the 128-bit rule");
legacy("legacy social downloads are refused; older 96-bit names still served; private never", async () => {
  const tk = await createTestKernel({ plugins, env: { PUBLIC_URL } });
  try {
    const bytes = png([1, 1, 1]);
    const cases: Array<[string, number]> = [
      ["social/downloads/svc-0123abcd/0.mp4", 404], // the job id is 32 bits and the index is counted
      ["social/downloads/svc-0123abcd/1.jpg", 404],
      ["images/svc-0123abcd-0123456789abcdef01234567.png", 200], // 96 random bits beside the job id
      ["video/inputs/0123456789abcdef01234567/start.png", 200],
      ["images/refs/svc-0123abcd.png", 404], // no random token at all
      [`social/private/downloads/svc-0123abcd/0.mp4`, 404],
      [`upscale/private/sources/${"ab".repeat(16)}.png`, 404],
      [`video/private/inputs/${"cd".repeat(16)}/ref-video-1.mp4`, 404],
      [`metadata/clean/${"ef".repeat(16)}.png`, 200],
    ];
    const reader = serviceMediaReader(PUBLIC_URL, tk.kernel.blobs);
    const app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
    const head = async (path: string) =>
      (
        await app.fetch(
          new Request(`http://mediagate.test${path}`, { method: "HEAD", headers: { "user-agent": "anyone/1.0" } }),
        )
      ).status;
    for (const [k, status] of cases) {
      await tk.kernel.blobs.put(k, bytes);
      assert.is((await tk.request("GET", mediaPath(k))).status, status, k);
      assert.is(await head(mediaPath(k)), status, `HEAD ${k}`);
      assert.is((await reader.read(PUBLIC_URL + mediaPath(k))).kind, status === 200 ? "found" : "missing", `read ${k}`);
    }
    // Spelled with an encoded slash or dot segments, a private key is still not served.
    assert.is((await tk.request("GET", "/media/social/private%2Fdownloads%2Fsvc-0123abcd%2F0.mp4")).status, 404);
    assert.is((await tk.request("GET", `/media/social/x/../private/downloads/${"ab".repeat(16)}.mp4`)).status, 404);
  } finally {
    await tk.close();
  }
});
legacy.run();
