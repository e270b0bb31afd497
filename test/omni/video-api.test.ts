// POST /omni/video through the REST API on every database backend: prices on all three tiers (the reference-
// video surcharge flat on every tier, a custom account's all-in rate replacing clip + surcharge), read from
// 402 answers so no clip renders for them; a clip rendered for real with a character speaking with its voice,
// probed; status, list and the `omni_video.*` events delivered to a local receiver; failure and the
// prompt-fixable block refunded once; another account's character, voice and video answer as missing. On
// PGlite, with a 2 s sandbox latency: clips waiting on the upstream hold no worker slot (three wait at once
// where the job kind runs two), a clip's progress only moves forward ("Preparing" only before it submits),
// and the markers' failures come out of the wait as the job's texts.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine, mp4MetadataCategories } from "../../lib/media/index.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import { REFERENCE_VIDEO_SURCHARGE, VIDEO_PRICE } from "../../plugins/omni/prices.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { assertAnswer } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { frameColour } from "../helpers/frame-colour.ts";
import { newRunCache } from "../helpers/memo-engine.ts";
import { balance, ledgerSum, mediaBytes } from "../helpers/partner-reads.ts";
import { testPatternArgs } from "../helpers/test-pattern.ts";
import {
  character,
  OMNI_LIMITS,
  omniKernel,
  omniPluginsSharingRenders,
  onPgliteKernel,
  png,
  sleep,
  until,
  videoDone,
  voice,
} from "./helpers.ts";

const engine = createMediaEngine({ mode: "native" });

/** A local HTTP server: `/clip.mp4` a 12 s test clip made by the engine, `/hook` a webhook receiver. */
async function localServer() {
  const made = await engine.run([...testPatternArgs("320x240", 25, 12, true), "clip.mp4"], { outputs: ["clip.mp4"] });
  const clip = made["clip.mp4"]!;
  const hooks: Array<{ event: string; data: any }> = [];
  const server: Server = createServer((req, res) => {
    if (req.url === "/clip.mp4")
      return res.writeHead(200, { "content-type": "video/mp4", "content-length": clip.byteLength }).end(clip);
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/hook") hooks.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    hooks,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const SHARED_RENDERS = omniPluginsSharingRenders(newRunCache());

for (const backend of await databaseBackends()) {
  const t = suite(`omni video API on ${backend.name}`);
  let tk: TestKernel;
  let local: Awaited<ReturnType<typeof localServer>>;
  // One kernel (and, on Postgres, one database) for the suite: every test works with partners of its own,
  // reads only their rows and waits for its jobs to end, so a kernel per test bought no isolation, only boots.
  t.before(async () => {
    // The second backend's clips are the first's renders (test/omni/helpers.ts omniPluginsSharingRenders).
    [local, tk] = await Promise.all([localServer(), omniKernel(backend, {}, SHARED_RENDERS)]);
  });
  t.after(async () => {
    await tk.close();
    await local.close();
  });

  const partner = (opts: Parameters<TestKernel["partner"]>[0] = {}) => tk.partner({ limits: OMNI_LIMITS, ...opts });
  const admin = (method: string, path: string, body: unknown) =>
    tk.request(method, `/api/v1/admin${path}`, { headers: { authorization: `Bearer ${tk.adminToken}` }, body });

  /** The price the API asks for a request, read from the 402 of an account with 0 credits: nothing renders. */
  async function askedPrice(key: string, body: Record<string, unknown>): Promise<number> {
    const res = await tk.request("POST", "/omni/video", { key, body: { prompt: "a quiet street", ...body } });
    assert.is(res.status, 402, JSON.stringify(res.body));
    const m = /^Insufficient credits\. This video costs (\d+) credits\.$/.exec(res.body.error);
    assert.ok(m, res.body.error);
    assert.is(res.body.credits_remaining, 0);
    return Number(m![1]);
  }

  t(
    "prices on every tier: the table through the tier math, the reference surcharge flat, a custom all-in rate",
    async () => {
      const plus = await partner({ credits: 0 });
      const std = await partner({ credits: 0, tier: "standard" });
      const video = { video_url: `${local.base}/clip.mp4`, video_start: 1, video_end: 5 };
      for (const res of ["1080p", "4k"] as const) {
        for (const d of [4, 6, 8, 10] as const) {
          const base = VIDEO_PRICE[res][d];
          assert.is(
            await askedPrice(plus.key, { resolution: res, duration: d }),
            Math.ceil((base * 11) / 10),
            `${res} ${d}s api_plus10`,
          );
          assert.is(await askedPrice(std.key, { resolution: res, duration: d }), base, `${res} ${d}s standard`);
        }
      }
      // The surcharge after the markup, the same on both tiers: 1080p 8 s is 154 + 47 and 140 + 47.
      for (const d of [4, 6, 8, 10] as const) {
        assert.is(
          await askedPrice(plus.key, { duration: d, ...video }),
          Math.ceil((VIDEO_PRICE["1080p"][d] * 11) / 10) + REFERENCE_VIDEO_SURCHARGE[d],
          `ref ${d}s api_plus10`,
        );
        assert.is(
          await askedPrice(std.key, { duration: d, ...video }),
          VIDEO_PRICE["1080p"][d] + REFERENCE_VIDEO_SURCHARGE[d],
          `ref ${d}s standard`,
        );
      }
      assert.is(await askedPrice(plus.key, { resolution: "4k", duration: 10, ...video }), 231 + 32);
      // The default is 8 s of 1080p on omni; omni-1.1 costs the same.
      assert.is(await askedPrice(plus.key, {}), 154);
      assert.is(await askedPrice(plus.key, { model: "omni-1.1" }), 154);

      // Custom: negotiated clip rate + the flat surcharge; with an all-in rate, exactly that; without a rate, 400.
      const custom = await partner({ credits: 0, tier: "custom" });
      assert.is(
        (await tk.request("POST", "/omni/video", { key: custom.key, body: { prompt: "x" } })).body.error,
        OMNI_ERRORS.customNoRate,
      );
      const set = await admin("PATCH", `/partners/${custom.id}`, {
        custom_rates: { omni: { video_price: { "1080p": { 8: 100 } } } },
      });
      assert.is(set.status, 200, JSON.stringify(set.body));
      assert.is(await askedPrice(custom.key, {}), 100);
      assert.is(await askedPrice(custom.key, { ...video }), 147);
      await admin("PATCH", `/partners/${custom.id}`, {
        custom_rates: {
          omni: { video_price: { "1080p": { 8: 100 } }, reference_video_price: { "1080p": { 8: 125 } } },
        },
      });
      assert.is(await askedPrice(custom.key, { ...video }), 125);
      assert.is(await askedPrice(custom.key, {}), 100);
    },
  );

  t(
    "a clip renders for real: a character speaking with its voice, 1080x1920, 4 s, AAC; status, list, event",
    async () => {
      const { key, id } = await partner({ credits: 1000 });
      const hookSet = await tk.request("POST", "/webhook", { key, body: { url: `${local.base}/hook` } });
      assert.is(hookSet.status, 200, JSON.stringify(hookSet.body));
      const v = await voice(tk, key, "Narrator", "charon");
      const mia = await character(tk, key, "Mia", [200, 60, 60], v);
      const before = await balance(tk, key);
      const res = await tk.request("POST", "/omni/video", {
        key,
        body: {
          prompt: 'Mia waves at the camera. Mia: "Hello there, welcome to the show."',
          character_ids: [mia],
          duration: 4,
          partner_job_id: "omni-1",
        },
      });
      assertAnswer(
        res,
        202,
        "aspect_ratio credits_remaining credits_used duration job_id model partner_job_id request_id resolution status",
      );
      assert.equal(
        [
          res.body.status,
          res.body.model,
          res.body.duration,
          res.body.aspect_ratio,
          res.body.resolution,
          res.body.credits_used,
        ],
        ["processing", "omni", 4, "9:16", "1080p", 132],
      );
      assert.is(res.body.credits_remaining, before - 132);

      const done = await videoDone(tk, key, res.body.job_id);
      assert.is(done.status, "complete", JSON.stringify(done));
      assert.equal(done.character_ids, [mia]);
      assert.equal(done.voice_ids, []);
      assert.is(done.prompt_fixable, false);
      assert.is(done.credits_refunded, 0);
      assert.is(done.metadata_removed, false);
      assert.is(done.error, null);
      const bytes = await mediaBytes(tk, done.video_url);
      const probe = await engine.probe(bytes, "clip.mp4");
      const vs = probe.streams.find((s) => s.type === "video")!;
      assert.equal([vs.codec, vs.width, vs.height], ["h264", 1080, 1920]);
      assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "aac");
      assert.ok(Math.abs(probe.durationSeconds - 4) < 0.2, String(probe.durationSeconds));
      assert.ok(mp4MetadataCategories(bytes).length > 0, "provenance kept unless strip_metadata");
      // The spoken words are kept with the job for captions.
      const row = await tk.kernel.database.kysely
        .selectFrom("jobs")
        .select("output")
        .where("id", "=", res.body.job_id)
        .executeTakeFirstOrThrow();
      const spoken = (typeof row.output === "string" ? JSON.parse(row.output) : row.output).spoken;
      assert.ok(
        spoken.words
          .map((w: any) => w.text.toLowerCase())
          .join(" ")
          .includes("hello"),
        JSON.stringify(spoken),
      );

      const list = await tk.request("GET", "/omni/videos?status=complete", { key });
      assert.is(list.status, 200);
      assert.is(list.body.total, 1);
      assert.is(list.body.videos[0].job_id, res.body.job_id);
      assert.is(list.body.videos[0].video_url, done.video_url);
      assert.is((await tk.request("GET", "/omni/videos?status=failed", { key })).body.total, 0);

      const hook = await until(
        tk,
        key,
        "/credits",
        () => local.hooks.some((h) => h.data?.job_id === res.body.job_id),
        30_000,
      ).then(() => local.hooks.find((h) => h.data.job_id === res.body.job_id)!);
      assert.is(hook.event, "omni_video.completed");
      assert.is(hook.data.video_url, done.video_url);
      assert.is(hook.data.status, "complete");
      assert.is(await ledgerSum(tk, id), await balance(tk, key));
    },
  );

  t("[sandbox:fail] ends error, refunded once, not fixable; [sandbox:unsafe] is prompt-fixable", async () => {
    const { key, id } = await partner({ credits: 1000 });
    const failed = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "boom [sandbox:fail]", duration: 4 },
    });
    const unsafe = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "something [sandbox:unsafe]", duration: 4 },
    });
    const a = await videoDone(tk, key, failed.body.job_id);
    const b = await videoDone(tk, key, unsafe.body.job_id);
    assert.equal(
      [a.status, a.error, a.prompt_fixable, a.credits_refunded, a.video_url],
      ["error", OMNI_ERRORS.videoFailed, false, 132, null],
    );
    assert.equal(
      [b.status, b.error, b.prompt_fixable, b.credits_refunded],
      ["error", OMNI_ERRORS.videoUnsafe, true, 132],
    );
    assert.is(await balance(tk, key), 1000);
    assert.is(await ledgerSum(tk, id), 1000);
    const events = await tk.kernel.database.kysely
      .selectFrom("webhook_events")
      .select("body")
      .where("partner_id", "=", id)
      .execute();
    assert.equal(
      events.map((e) => JSON.parse(e.body).event),
      ["omni_video.failed", "omni_video.failed"],
    );
    assert.is((await tk.request("GET", "/omni/videos?status=failed", { key })).body.total, 2);
  });

  t("strip_metadata serves a clip without provenance, and says so from the file", async () => {
    const { key } = await partner({ credits: 1000 });
    const res = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "clean", duration: 4, strip_metadata: true, aspect_ratio: "16:9" },
    });
    const done = await videoDone(tk, key, res.body.job_id);
    assert.is(done.metadata_removed, true);
    const bytes = await mediaBytes(tk, done.video_url);
    assert.equal(mp4MetadataCategories(bytes), []);
    const vs = (await engine.probe(bytes, "c.mp4")).streams.find((s) => s.type === "video")!;
    assert.equal([vs.width, vs.height], [1920, 1080]);
  });

  t("a reference video is measured before the charge and its window reaches the job", async () => {
    const { key } = await partner({ credits: 1000 });
    const res = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "like this", duration: 4, video_url: `${local.base}/clip.mp4`, video_start: 2, video_end: 6 },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.credits_used, 132 + 79);
    const done = await videoDone(tk, key, res.body.job_id);
    assert.is(done.status, "complete", JSON.stringify(done));
    // Beyond the 12 s source: refused before the charge.
    const beyond = await tk.request("POST", "/omni/video", {
      key,
      body: { prompt: "x", video_url: `${local.base}/clip.mp4`, video_start: 8, video_end: 14 },
    });
    assert.is(beyond.status, 400);
    assert.is(await balance(tk, key), 1000 - 211);
  });

  t("another account's character, voice and video answer as missing; bad input changes nothing", async () => {
    const owner = await partner({ credits: 1000 });
    const other = await partner({ credits: 1000 });
    const theirs = await character(tk, owner.key, "Theirs", [10, 200, 10]);
    const theirVoice = await voice(tk, owner.key, "Theirs", "kore");
    const c = await tk.request("POST", "/omni/video", {
      key: other.key,
      body: { prompt: "x", character_ids: [theirs] },
    });
    assert.equal([c.status, c.body.error], [400, OMNI_ERRORS.charactersNotFound]);
    const v = await tk.request("POST", "/omni/video", {
      key: other.key,
      body: { prompt: "x", voice_ids: [theirVoice] },
    });
    assert.equal([v.status, v.body.error], [400, OMNI_ERRORS.voicesNotFound]);
    // The owner's job only has to exist: its marker fails it at its first look instead of rendering a clip.
    const job = await tk.request("POST", "/omni/video", {
      key: owner.key,
      body: { prompt: "mine [sandbox:fail]", duration: 4 },
    });
    assert.is(job.status, 202, JSON.stringify(job.body));
    assert.is((await tk.request("GET", `/omni/video/${job.body.job_id}`, { key: other.key })).status, 404);
    assert.is((await tk.request("GET", "/omni/videos", { key: other.key })).body.total, 0);
    for (const body of [
      { prompt: "x", model: "omni-2" },
      { prompt: "x", duration: 5 },
      { prompt: "x", resolution: "720p" },
      { prompt: "x", strip_metadata: "yes" },
      { prompt: "x", first_frame_url: "https://example.com/a.png" },
      { prompt: "" },
    ]) {
      const res = await tk.request("POST", "/omni/video", { key: other.key, body });
      assert.is(res.status, 400, JSON.stringify([body, res.body]));
    }
    assert.is(await balance(tk, other.key), 1000);
    const rows = await tk.kernel.database.kysely
      .selectFrom("omni_videos" as any)
      .select("job_id")
      .where("partner_id", "=", other.id)
      .execute();
    assert.is(rows.length, 0);
    await videoDone(tk, owner.key, job.body.job_id);
  });

  t("omni-1.1 with first and last frames by URL: the clip starts and ends on them", async () => {
    const { key } = await partner({ credits: 1000 });
    const red = Buffer.from(png([230, 20, 20]), "base64");
    const blue = Buffer.from(png([20, 20, 230]), "base64");
    const server = createServer((req, res) =>
      res.writeHead(200, { "content-type": "image/png" }).end(req.url === "/first.png" ? red : blue),
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const res = await tk.request("POST", "/omni/video", {
        key,
        body: {
          prompt: "from red to blue",
          model: "omni-1.1",
          duration: 4,
          first_frame_url: `${base}/first.png`,
          last_frame_url: `${base}/last.png`,
        },
      });
      assert.is(res.status, 202, JSON.stringify(res.body));
      const done = await videoDone(tk, key, res.body.job_id);
      assert.is(done.status, "complete", JSON.stringify(done));
      assert.is(done.first_frame_url, `${base}/first.png`);
      const bytes = await mediaBytes(tk, done.video_url);
      const first = await frameColour(engine, bytes, 0);
      const last = await frameColour(engine, bytes, 3.9);
      assert.ok(first.r > 150 && first.b < 100, JSON.stringify(first));
      assert.ok(last.b > 150 && last.r < 100, JSON.stringify(last));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  t.run();
}

// Waiting on the upstream (ctx.awaitUpstream) holds no slot: the job kind runs two at a time, yet three clips
// wait on the sandbox together; each poll runs the job from the top without putting "Preparing" back; the
// markers' failures come out of the wait as the job's texts, and the waits are gone with the jobs.
const waits = suite("omni video: waiting on the upstream (PGlite)");
waits("three clips wait at once with two slots; progress only moves forward", () =>
  onPgliteKernel({ SANDBOX_LATENCY_MS: "2000" }, async (tk, key) => {
    const ids: string[] = [];
    // One renders; two fail at their first poll, by their markers (so only one clip is rendered).
    for (const prompt of ["wait", "wait [sandbox:fail]", "wait [sandbox:unsafe]"]) {
      const res = await tk.request("POST", "/omni/video", { key, body: { prompt, duration: 4, aspect_ratio: "16:9" } });
      assert.is(res.status, 202, JSON.stringify(res.body));
      ids.push(res.body.job_id);
    }
    const seen = new Map<string, Array<[number | null, string | null]>>(ids.map((id) => [id, []]));
    let together = false;
    let views: any[] = [];
    for (const end = Date.now() + 120_000; ; await sleep(50)) {
      views = await Promise.all(ids.map((id) => tk.request("GET", `/omni/video/${id}`, { key }).then((r) => r.body)));
      for (const v of views) seen.get(v.job_id)!.push([v.progress, v.message]);
      if (views.every((v) => v.status === "processing" && v.message === "Generating")) {
        const parked = await tk.kernel.database.kysely
          .selectFrom("job_waits")
          .select("job_id")
          .where("job_id", "in", ids)
          .where("parked", "=", true)
          .execute();
        if (parked.length === 3) together = true;
      }
      if (views.every((v) => v.status !== "processing")) break;
      if (Date.now() > end) throw new Error(`still processing: ${JSON.stringify(views)}`);
    }
    // Each clip's views, consecutive repeats left out, for the messages below.
    const steps = () =>
      JSON.stringify(
        [...seen].map(([, s]) => s.filter((x, i) => i === 0 || JSON.stringify(x) !== JSON.stringify(s[i - 1]))),
      );
    assert.ok(together, `three clips waiting together: ${steps()}`);
    assert.equal(
      views.map((v) => [v.status, v.error]),
      [
        ["complete", null],
        ["error", OMNI_ERRORS.videoFailed],
        ["error", OMNI_ERRORS.videoUnsafe],
      ],
    );
    for (const [id, steps] of seen) {
      const running = steps.filter(([p]) => p !== null) as Array<[number, string]>;
      for (let i = 1; i < running.length; i++)
        assert.ok(running[i]![0] >= running[i - 1]![0], `${id} progress went back: ${JSON.stringify(running)}`);
      const firstGenerating = running.findIndex(([, m]) => m === "Generating");
      assert.ok(firstGenerating >= 0, `${id} never showed the wait: ${JSON.stringify(running)}`);
      assert.not.ok(
        running.slice(firstGenerating).some(([, m]) => m === "Preparing" || m === "Queued"),
        `${id} went back to an earlier message: ${JSON.stringify(running)}`,
      );
    }
    // The waits are over with the jobs.
    assert.is(
      (await tk.kernel.database.kysely.selectFrom("job_waits").select("job_id").where("job_id", "in", ids).execute())
        .length,
      0,
    );
  }),
);
waits.run();

// The same clip through the whole API on the embedded wasm engine (MEDIA_ENGINE=wasm): rendered, stripped, probed.
const w = suite("omni video API on the wasm engine (PGlite)");
w("a character speaking, strip_metadata, on ffmpeg.wasm", () =>
  onPgliteKernel({ MEDIA_ENGINE: "wasm" }, async (tk, key) => {
    const mia = await character(tk, key, "Mia", [200, 60, 60], await voice(tk, key, "Narrator", "leda"));
    const res = await tk.request("POST", "/omni/video", {
      key,
      body: {
        prompt: 'Mia: "Hello from the embedded engine."',
        character_ids: [mia],
        duration: 4,
        strip_metadata: true,
      },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await videoDone(tk, key, res.body.job_id);
    assert.is(done.status, "complete", JSON.stringify(done));
    assert.is(done.metadata_removed, true);
    const bytes = await mediaBytes(tk, done.video_url);
    assert.equal(mp4MetadataCategories(bytes), []);
    const probe = await engine.probe(bytes, "clip.mp4");
    const vs = probe.streams.find((s) => s.type === "video")!;
    assert.equal([vs.codec, vs.width, vs.height], ["h264", 1080, 1920]);
    assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "aac");
  }),
);
w.run();
