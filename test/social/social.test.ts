// The social downloader through app.fetch on every database backend: the 202 shape and quota object,
// the rolling 24-hour window on the fake clock (failed downloads not counted), 2 in flight under
// concurrent requests, the sandbox's files decoded by the media engine, Range/206/416, ?download=1,
// ownership, 410 and the retention sweeper after 7 days, pagination, failure sentences, the pause switch,
// nothing charged, GraphQL, and a restarted worker finishing a download queued before it started.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { SocialExtractor } from "../../contracts/social.ts";
import { setPaused } from "../../core/pauses.ts";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import { createMediaEngine, firstAudio, firstVideo, type MediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { FAILURE_SENTENCES, SOCIAL_ERRORS } from "../../plugins/social/errors.ts";
import social from "../../plugins/social/index.ts";
import socialSandbox, { sandboxPlan } from "../../plugins/social/sandbox.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";
import { hostSharingRenders, newRunCache } from "../helpers/memo-engine.ts";
import { notPending, pollStatus } from "../helpers/poll-status.ts";
import { rowCount } from "../helpers/row-count.ts";

// The sandbox renders an 8-12 s ad per download (seconds of ffmpeg each), deterministically from the link. The
// tests run the sandbox's own extractor, but its media engine renders each distinct ffmpeg run once per file
// (test/helpers/memo-engine.ts): the same link downloaded again (on the other backend, after the restart)
// shares the first render; every download still goes through the sandbox's markers, plan and speech.
// A carousel is one rendered item repeated (below).
const renders = newRunCache();
const sharedRenders = definePlugin({
  ...socialSandbox,
  provides: {
    "social.extract": (host: CapabilityHost) => {
      const sandbox = socialSandbox.provides["social.extract"](hostSharingRenders(host, renders));
      return {
        // A carousel's items are rendered once and repeated: the sandbox asked for one item, the post handed on
        // with as many as the link says. So the plugin's own cut to 10 is what the carousel test sees (the
        // sandbox alone stops at the limit it is given), for the price of one render instead of ten.
        async extract(req) {
          const n = /sandbox-carousel-(\d{1,2})/.exec(new URL(req.url).pathname.toLowerCase());
          if (!n) return sandbox.extract(req);
          const post = await sandbox.extract({
            ...req,
            limits: { ...req.limits, maxItems: 1 } as unknown as typeof req.limits,
          });
          return { ...post, items: Array.from({ length: Number(n[1]) }, () => post.items[0]!) };
        },
      } satisfies SocialExtractor;
    },
  },
});
const PLUGINS = [account, sharedRenders, social];
const HOUR = 3600_000;
const DAY = 24 * HOUR;

// The spec's per-minute limits would stop these tests, not the code they test.
const UNLIMITED = {
  rate_limits: {
    "POST /social-download": 100_000,
    "GET /social-download/<download_id>": 100_000,
    "GET /social-download/<download_id>/file/<idx>": 100_000,
    "GET /social-downloads": 100_000,
    "GET /credits": 100_000,
    "GET /transactions": 100_000,
  },
};

const engine: MediaEngine = createMediaEngine({ mode: "auto" });
onAfterAll(() => engine.close());

// A ceiling, not a wait: a carousel renders ten videos and their covers, which on a loaded CI machine (four
// test workers on two CPUs, the wasm engine included) took over a minute.
const waitFor = async (tk: TestKernel, key: string, id: string, timeoutMs = 240_000) =>
  (await pollStatus(tk, key, `/social-download/${id}`, notPending, timeoutMs, 50)).body;

/** The raw body of a file path (tk.request decodes text; files need bytes). */
const apps = new WeakMap<TestKernel, ReturnType<typeof createHttpApp>>();
async function rawFile(tk: TestKernel, key: string, path: string, headers: Record<string, string> = {}) {
  let app = apps.get(tk);
  if (!app) apps.set(tk, (app = createHttpApp(tk.kernel, { adminToken: tk.adminToken })));
  const res = await app.fetch(
    new Request(new URL(path, "http://mediagate.test"), {
      headers: { authorization: `Bearer ${key}`, "user-agent": "mediagate-tests/1.0", ...headers },
    }),
  );
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** Downloads made directly in the database at chosen times (the quota counts rows, so 200 submits are not needed). */
async function seed(
  tk: TestKernel,
  partnerId: string,
  times: number[],
  state: "complete" | "failed" | "pending" = "complete",
) {
  const db = tk.kernel.database.kysely as any;
  for (const at of times) {
    const job = await tk.kernel.chargeAndCreateJob({
      partnerId,
      plugin: "social",
      kind: "download",
      endpoint: "POST /social-download",
      state,
      credits: 0,
      inflight: false,
      terminal: state !== "pending",
    });
    await db
      .insertInto("social_downloads")
      .values({
        download_id: job.jobId,
        partner_id: partnerId,
        platform: "tiktok",
        url: "https://www.tiktok.com/@a/video/1",
        normalized_url: "https://www.tiktok.com/@a/video/1",
        created_at: new Date(at),
        expires_at: new Date(at + 7 * DAY),
      })
      .execute();
  }
}

const ledgerRows = (tk: TestKernel, partnerId: string) => rowCount(tk, "ledger", partnerId);

/** A download of `url` asked for (its 202 asserted): the answer, and the record once it is no longer pending. */
async function download(tk: TestKernel, key: string, url: string) {
  const res = await tk.request("POST", "/social-download", { key, body: { url } });
  assert.is(res.status, 202, `${url}: ${JSON.stringify(res.body)}`);
  return { answer: res.body, rec: await waitFor(tk, key, res.body.download_id) };
}

for (const backend of await databaseBackends()) {
  const databaseUrl = async () => (backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined);

  // -------------------------------------------------------------------------------------------------
  // With workers: downloads run through the sandbox.
  const run = suite(`social downloads on ${backend.name}`);
  // One kernel for the suite: every test has partners of its own (the quota, the list and the ownership
  // checks are per account), and the test that moves the clock 7 days ahead leaves nothing the others read.
  let tk: TestKernel;
  run.before(async () => {
    tk = await createTestKernel({
      plugins: PLUGINS,
      databaseUrl: await databaseUrl(),
      env: { SANDBOX_LATENCY_MS: "5" },
      start: true,
    });
  });
  run.after(async () => {
    await tk.close();
  });

  run("a post becomes a playable H.264/AAC MP4 and a cover; nothing is charged", async () => {
    const { id, key } = await tk.partner({ credits: 500, limits: UNLIMITED });
    const ledgerBefore = await ledgerRows(tk, id);
    const url = "https://vm.tiktok.com/ZMabc123/?utm_source=share#x";
    const res = await tk.request("POST", "/social-download", { key, body: { url, partner_job_id: "order-7" } });
    assert.is(res.status, 202, JSON.stringify(res.body));
    // Every field but the two ids, which are new each time.
    const { request_id, download_id, ...answer } = res.body;
    assert.type(request_id, "string");
    assert.match(download_id, /^svc-[0-9a-f]{8}$/);
    assert.equal(answer, {
      partner_job_id: "order-7",
      status: "pending",
      platform: "tiktok",
      normalized_url: "https://vm.tiktok.com/ZMabc123/",
      retention_days: 7,
      quota: { limit: 200, used: 1, remaining: 199, window_hours: 24, resets_in_seconds: 86_400 },
    });

    const rec = await waitFor(tk, key, res.body.download_id);
    const plan = sandboxPlan("https://vm.tiktok.com/ZMabc123/", "tiktok");
    assert.is(rec.status, "complete", rec.error);
    assert.is(rec.error, null);
    assert.is(rec.partner_job_id, "order-7");
    assert.is(rec.media_kind, "video");
    assert.is(rec.title, plan.title);
    assert.is(rec.uploader, plan.uploader);
    assert.is(rec.width, 288);
    assert.is(rec.height, 512);
    assert.is(rec.has_audio, true);
    assert.is(rec.file_count, 2);
    assert.is(rec.retention_days, 7);
    assert.ok(Math.abs(rec.duration_sec - plan.seconds[0]!) < 0.2, `duration ${rec.duration_sec}`);
    const [video, cover] = rec.files;
    assert.is(rec.bytes, video.bytes + cover.bytes);
    const base = `/api/v1/partner/social-download/${rec.download_id}/file`;
    assert.equal(video, {
      idx: 0,
      kind: "video",
      download_name: `tiktok-${rec.download_id}.mp4`,
      bytes: video.bytes,
      duration_sec: rec.duration_sec,
      width: 288,
      height: 512,
      has_audio: true,
      available: true,
      stream_url: `${base}/0`,
      download_url: `${base}/0?download=1`,
    });
    assert.equal(cover, {
      idx: 1,
      kind: "cover",
      for_idx: 0,
      download_name: `tiktok-${rec.download_id}-cover.jpg`,
      bytes: cover.bytes,
      width: 288,
      height: 512,
      available: true,
      stream_url: `${base}/1`,
      download_url: `${base}/1?download=1`,
    });

    const mp4 = await rawFile(tk, key, video.stream_url);
    assert.is(mp4.status, 200);
    assert.is(mp4.headers.get("content-type"), "video/mp4");
    assert.is(mp4.bytes.byteLength, video.bytes);
    const probe = await engine.probe(mp4.bytes, "v.mp4");
    assert.is(firstVideo(probe)?.codec, "h264");
    assert.is(firstAudio(probe)?.codec, "aac");
    // Decodes to the end, not just a header that parses.
    await engine.run(["-v", "error", "-i", "in.mp4", "-f", "null", "-"], {
      inputs: { "in.mp4": mp4.bytes },
      outputs: [],
    });

    const jpg = await rawFile(tk, key, cover.stream_url);
    assert.is(jpg.headers.get("content-type"), "image/jpeg");
    const cp = await engine.probe(jpg.bytes, "c.jpg");
    assert.is(cp.streams[0]?.width, 288);
    assert.is(cp.streams[0]?.height, 512);
    await engine.run(["-v", "error", "-i", "c.jpg", "-f", "null", "-"], {
      inputs: { "c.jpg": jpg.bytes },
      outputs: [],
    });

    assert.is(await ledgerRows(tk, id), ledgerBefore, "no ledger row for a free download");
    assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, 500);
  });

  run("files: Range 206/416, ?download=1, inline, 404 for another key and for a missing file", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const other = await tk.partner({ limits: UNLIMITED });
    const { answer, rec } = await download(tk, key, "facebook.com/watch/?v=12345&fbclid=zzz");
    assert.is(answer.normalized_url, "https://www.facebook.com/watch/?v=12345");
    const video = rec.files[0];
    const whole = await rawFile(tk, key, video.stream_url);
    assert.is(whole.headers.get("accept-ranges"), "bytes");
    assert.is(whole.headers.get("content-disposition"), `inline; filename="${video.download_name}"`);

    const part = await rawFile(tk, key, video.stream_url, { range: "bytes=10-99" });
    assert.is(part.status, 206);
    assert.is(part.headers.get("content-range"), `bytes 10-99/${video.bytes}`);
    assert.equal([...part.bytes], [...whole.bytes.subarray(10, 100)]);
    const tail = await rawFile(tk, key, video.stream_url, { range: "bytes=-16" });
    assert.equal([...tail.bytes], [...whole.bytes.subarray(video.bytes - 16)]);
    const beyond = await rawFile(tk, key, video.stream_url, { range: `bytes=${video.bytes}-` });
    assert.is(beyond.status, 416);
    assert.is(beyond.headers.get("content-range"), `bytes */${video.bytes}`);

    const attach = await rawFile(tk, key, video.download_url);
    assert.is(attach.status, 200);
    assert.is(attach.headers.get("content-disposition"), `attachment; filename="${video.download_name}"`);

    for (const path of [video.stream_url, `/api/v1/partner/social-download/${rec.download_id}`]) {
      const r = await tk.request("GET", path, { key: other.key });
      assert.is(r.status, 404);
      assert.equal(errorBody(r), { error: SOCIAL_ERRORS.notFound });
    }
    assert.equal(errorBody(await tk.request("GET", `/social-download/${rec.download_id}/file/7`, { key })), {
      error: SOCIAL_ERRORS.fileNotFound,
    });
    assert.equal(errorBody(await tk.request("GET", `/social-download/svc-00000000`, { key })), {
      error: SOCIAL_ERRORS.notFound,
    });
    assert.is((await tk.request("GET", `/social-download/nonsense`, { key })).status, 404);
  });

  run("after 7 days: 410, available false, and the sweeper removes the files", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const rec = (await download(tk, key, "https://www.instagram.com/reel/Cabc/")).rec;
    const blobKey = `social/private/downloads/${rec.download_id}/0.mp4`;
    assert.ok(await tk.kernel.blobs.get(blobKey));

    tk.clock.advance(7 * DAY - 1000);
    await tk.kernel.retention.sweep();
    assert.ok(await tk.kernel.blobs.get(blobKey), "kept inside the window");
    assert.is((await tk.request("GET", rec.files[0].stream_url, { key })).status, 200);

    tk.clock.advance(1000);
    const gone = await tk.request("GET", rec.files[0].stream_url, { key });
    assert.is(gone.status, 410, "from the record's expiry, before any sweep");
    assert.equal(errorBody(gone), { error: SOCIAL_ERRORS.expired });
    const after = await tk.request("GET", `/social-download/${rec.download_id}`, { key });
    assert.is(after.status, 200);
    assert.ok(after.body.files.every((f: any) => f.available === false));

    await tk.kernel.retention.sweep();
    assert.is(await tk.kernel.blobs.get(blobKey), null);
    assert.is(await tk.kernel.blobs.get(`social/private/downloads/${rec.download_id}/1.jpg`), null);
    assert.is((await tk.request("GET", rec.files[1].download_url, { key })).status, 410);
  });

  run("failure markers end in plain sentences; failed downloads leave the quota", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const cases: Array<[string, string]> = [
      ["https://www.instagram.com/p/sandbox-login/", FAILURE_SENTENCES.login_required],
      ["https://www.facebook.com/some/posts/sandbox-novideo", FAILURE_SENTENCES.no_video],
      ["https://www.tiktok.com/@a/video/sandbox-private", FAILURE_SENTENCES.unavailable],
      ["https://fb.watch/sandbox-toolong/", FAILURE_SENTENCES.too_long],
      ["https://vt.tiktok.com/sandbox-toolarge/", FAILURE_SENTENCES.too_large],
      ["https://m.facebook.com/reel/sandbox-fail", FAILURE_SENTENCES.failed],
    ];
    for (const [url, sentence] of cases) {
      const { answer, rec } = await download(tk, key, url);
      assert.is(answer.quota.used, 1, "earlier failures are not counted");
      assert.is(rec.status, "failed", url);
      assert.is(rec.error, sentence, url);
      assert.equal(rec.files, []);
      assert.is(rec.file_count, 0);
      assert.not.match(rec.error, /sandbox|yt-dlp|ffmpeg/i);
    }
  });

  run("a carousel is cut to 10 items, each video followed by its cover; a silent post says so", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const { answer, rec } = await download(tk, key, "https://www.instagram.com/p/sandbox-carousel-12/?igsh=abc");
    assert.is(answer.normalized_url, "https://www.instagram.com/p/sandbox-carousel-12/");
    assert.is(rec.status, "complete", rec.error);
    assert.is(rec.file_count, 20);
    rec.files.forEach((f: any, i: number) => {
      assert.is(f.idx, i);
      assert.is(f.kind, i % 2 === 0 ? "video" : "cover");
      if (f.kind === "cover") assert.is(f.for_idx, i - 1);
    });
    assert.is(rec.files[2].download_name, `instagram-${rec.download_id}-2.mp4`);
    const total = rec.files.filter((f: any) => f.kind === "video").reduce((s: number, f: any) => s + f.duration_sec, 0);
    assert.ok(Math.abs(rec.duration_sec - total) < 0.05);

    const srec = (await download(tk, key, "https://www.tiktok.com/@a/video/sandbox-noaudio")).rec;
    assert.is(srec.has_audio, false);
    assert.is(srec.files[0].has_audio, false);
    const probe = await engine.probe((await rawFile(tk, key, srec.files[0].stream_url)).bytes, "v.mp4");
    assert.is(firstAudio(probe), undefined);
  });

  run("an unexpected extractor error is retried and the download still completes", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const rec = (await download(tk, key, "https://www.tiktok.com/@a/video/sandbox-flaky")).rec;
    assert.is(rec.status, "complete", rec.error);
  });

  run("GraphQL: the record and the list as queries; the file path points at REST", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const sub = await graphql(
      tk,
      `mutation($u: String!) { socialDownload(input: { url: $u }) { download_id status platform quota { used limit } } }`,
      { u: "https://instagr.am/p/XYZ/" },
      { key },
    );
    assert.is(sub.errors, undefined, JSON.stringify(sub.errors));
    assert.is(sub.data.socialDownload.platform, "instagram");
    const id = sub.data.socialDownload.download_id;
    await waitFor(tk, key, id);
    const q = await graphql(
      tk,
      `query($id: String!) { socialDownload(download_id: $id) { status files { idx kind stream_url } } socialDownloads { total downloads { download_id } } }`,
      { id },
      { key },
    );
    assert.is(q.errors, undefined, JSON.stringify(q.errors));
    assert.is(q.data.socialDownload.status, "complete");
    assert.is(q.data.socialDownloads.total, 1);
    const f = await graphql(
      tk,
      `query($id: String!) { socialDownloadFile(download_id: $id, idx: "0") }`,
      { id },
      { key },
    );
    assert.is(f.errors?.[0]?.extensions?.status, 406);
    const bad = await graphql(
      tk,
      `mutation { socialDownload(input: { url: "https://facebook.com.evil.test/x" }) { download_id } }`,
      {},
      { key },
    );
    assert.is(bad.errors?.[0]?.message, SOCIAL_ERRORS.unsupportedHost);
  });

  run.run();

  // -------------------------------------------------------------------------------------------------
  // Without workers: downloads stay pending, so the counting rules can be driven exactly.
  const limits = suite(`social quota and limits on ${backend.name}`);
  // One kernel for the suite, as above (each test's counts are its own account's).
  limits.before(async () => {
    tk = await createTestKernel({ plugins: PLUGINS, databaseUrl: await databaseUrl() });
  });
  limits.after(async () => {
    await tk.close();
  });

  limits("the input rules answer the spec's 400s and store nothing", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const cases: Array<[unknown, string]> = [
      [{}, SOCIAL_ERRORS.urlMissing],
      [{ url: "" }, SOCIAL_ERRORS.urlMissing],
      [{ url: 42 }, SOCIAL_ERRORS.urlMissing],
      [{ url: `https://www.tiktok.com/@a/video/${"1".repeat(490)}` }, SOCIAL_ERRORS.tooLong],
      [{ url: "ftp://www.instagram.com/p/x" }, SOCIAL_ERRORS.notHttp],
      [{ url: "https://www.youtube.com/watch?v=x" }, SOCIAL_ERRORS.unsupportedHost],
      [{ url: "https://facebook.com.evil.test/watch?v=1" }, SOCIAL_ERRORS.unsupportedHost],
      [
        { url: "https://www.tiktok.com/@a", partner_job_id: "bad id!" },
        "partner_job_id must be 1-64 characters: letters, digits, '-', '/' or '_'",
      ],
    ];
    for (const [body, text] of cases) {
      const res = await tk.request("POST", "/social-download", { key, body });
      assert.is(res.status, 400, JSON.stringify(body));
      assert.equal(errorBody(res), { error: text });
    }
    assert.is((await tk.request("GET", "/social-downloads", { key })).body.total, 0);
  });

  limits("2 in flight: of four concurrent requests exactly two are accepted", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    const all = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        tk.request("POST", "/social-download", { key, body: { url: `https://www.tiktok.com/@a/video/${n}` } }),
      ),
    );
    const accepted = all.filter((r) => r.status === 202);
    const refused = all.filter((r) => r.status === 429);
    assert.is(accepted.length, 2, JSON.stringify(all.map((r) => r.body)));
    assert.is(refused.length, 2);
    for (const r of refused) {
      assert.is(r.body.error, SOCIAL_ERRORS.inflight);
      assert.is(r.body.quota.used, 2);
      assert.is(r.headers.get("retry-after"), "10");
    }
    // One finishes: a slot frees.
    await tk.kernel.finishJob(accepted[0]!.body.download_id, { state: "complete", refund: false });
    assert.is(
      (await tk.request("POST", "/social-download", { key, body: { url: "https://www.tiktok.com/@a/video/5" } }))
        .status,
      202,
    );
    // Another account is not limited by this one.
    const other = await tk.partner({ limits: UNLIMITED });
    assert.is(
      (
        await tk.request("POST", "/social-download", {
          key: other.key,
          body: { url: "https://www.tiktok.com/@a/video/6" },
        })
      ).status,
      202,
    );
  });

  limits("200 per rolling 24 hours: 429 with quota, failed ones not counted, the window rolls", async () => {
    const { id, key } = await tk.partner({ limits: UNLIMITED });
    const now = tk.clock.now();
    // 1 at now-23h (the oldest counted), 198 at now-1h, 10 failed and 5 older than 24 h (neither counts).
    await seed(tk, id, [now - 23 * HOUR]);
    await seed(
      tk,
      id,
      Array.from({ length: 198 }, () => now - HOUR),
    );
    await seed(
      tk,
      id,
      Array.from({ length: 10 }, () => now - 2 * HOUR),
      "failed",
    );
    await seed(
      tk,
      id,
      Array.from({ length: 5 }, () => now - 25 * HOUR),
    );

    const last = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/1" },
    });
    assert.is(last.status, 202, JSON.stringify(last.body));
    assert.equal(last.body.quota, { limit: 200, used: 200, remaining: 0, window_hours: 24, resets_in_seconds: 3600 });
    await tk.kernel.finishJob(last.body.download_id, { state: "complete", refund: false });

    const over = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/2" },
    });
    assert.is(over.status, 429);
    assert.equal(errorBody(over), {
      error: SOCIAL_ERRORS.dailyLimit,
      quota: { limit: 200, used: 200, remaining: 0, window_hours: 24, resets_in_seconds: 3600 },
    });
    assert.is(over.headers.get("retry-after"), "3600");

    tk.clock.advance(1800_000);
    const still = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/3" },
    });
    assert.is(still.body.quota.resets_in_seconds, 1800);

    tk.clock.advance(1800_000); // the oldest leaves the window
    const again = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/4" },
    });
    assert.is(again.status, 202, JSON.stringify(again.body));
    assert.is(again.body.quota.used, 200);
    // Now the oldest counted are the 198 from "now-1h", 22 h out.
    assert.is(again.body.quota.resets_in_seconds, 22 * 3600);
  });

  limits("concurrent requests at 199 used: exactly one passes the daily limit", async () => {
    const { id, key } = await tk.partner({ limits: UNLIMITED });
    await seed(
      tk,
      id,
      Array.from({ length: 199 }, () => tk.clock.now() - HOUR),
    );
    const all = await Promise.all(
      [1, 2].map((n) =>
        tk.request("POST", "/social-download", { key, body: { url: `https://www.tiktok.com/@a/video/${n}` } }),
      ),
    );
    assert.equal(all.map((r) => r.status).sort(), [202, 429]);
    assert.is(all.find((r) => r.status === 429)!.body.error, SOCIAL_ERRORS.dailyLimit);
  });

  limits("the list: newest first, default 25, at most 100, offset", async () => {
    const { id, key } = await tk.partner({ limits: UNLIMITED });
    const now = tk.clock.now();
    await seed(
      tk,
      id,
      Array.from({ length: 120 }, (_, i) => now - (i + 1) * 60_000),
    );
    const first = await tk.request("GET", "/social-downloads", { key });
    assert.is(first.status, 200);
    assert.is(first.body.downloads.length, 25);
    assert.equal([first.body.total, first.body.limit, first.body.offset], [120, 25, 0]);
    assert.equal(Object.keys(first.body.downloads[0]).sort(), [
      "created_at",
      "download_id",
      "files",
      "partner_job_id",
      "platform",
      "status",
    ]);
    const big = await tk.request("GET", "/social-downloads?limit=500", { key });
    assert.is(big.body.limit, 100);
    assert.is(big.body.downloads.length, 100);
    const page = await tk.request("GET", "/social-downloads?limit=10&offset=115", { key });
    assert.is(page.body.downloads.length, 5);
    const times = big.body.downloads.map((d: any) => d.created_at);
    assert.equal(times, [...times].sort().reverse());
    assert.is((await tk.request("GET", "/social-downloads?limit=0", { key })).status, 400);
    const other = await tk.partner({ limits: UNLIMITED });
    assert.is((await tk.request("GET", "/social-downloads", { key: other.key })).body.total, 0);
  });

  limits("paused: 503 with the spec's text until resumed", async () => {
    const { key } = await tk.partner({ limits: UNLIMITED });
    await setPaused(tk.kernel.database.kysely, "social_downloads", true);
    const res = await tk.request("POST", "/social-download", {
      key,
      body: { url: "https://www.tiktok.com/@a/video/1" },
    });
    assert.is(res.status, 503);
    assert.equal(errorBody(res), { error: SOCIAL_ERRORS.paused });
    await setPaused(tk.kernel.database.kysely, "social_downloads", false);
    assert.is(
      (await tk.request("POST", "/social-download", { key, body: { url: "https://www.tiktok.com/@a/video/1" } }))
        .status,
      202,
    );
  });

  limits.run();

  // -------------------------------------------------------------------------------------------------
  if (backend.name === "postgres") {
    const restart = suite("social download across a restart on postgres");
    restart("a download queued while no worker ran completes once one starts", async () => {
      const url = await isolatedPostgresDatabase();
      const api = await createTestKernel({ plugins: PLUGINS, databaseUrl: url, env: { SANDBOX_LATENCY_MS: "5" } });
      const { key } = await api.partner({ limits: UNLIMITED });
      const res = await api.request("POST", "/social-download", {
        key,
        body: { url: "https://vm.tiktok.com/ZMabc123/" },
      });
      assert.is(res.status, 202);
      await api.close();
      const worker = await createTestKernel({
        plugins: PLUGINS,
        databaseUrl: url,
        env: { SANDBOX_LATENCY_MS: "5" },
        start: true,
      });
      try {
        const rec = await waitFor(worker, key, res.body.download_id);
        assert.is(rec.status, "complete", rec.error);
        assert.is(rec.file_count, 2);
      } finally {
        await worker.close();
      }
    });
    restart.run();
  }
}
