// POST /generate-video with a reference video when our own machine is busy (issue 36 item 9), through the
// app on every database backend: before the charge the reference is only downloaded and probed, so with every
// encode held the call still answers 202 (never the old 503 "reference encoder is busy") and the job encodes
// once the encodes are let go; a file refused by the checks changes nothing (no charge, no row, no file); a
// file that passes the probe and fails its encode fails the job, refunded exactly once.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mp4Boxes } from "../../lib/formats/index.ts";
import { createMediaEngine, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { answerWhileHeld, holdEncodes } from "../helpers/held-encodes.ts";
import { ENGINE_MODES } from "../media/util.ts";

const UNLIMITED = {
  inflight_jobs: 50,
  rate_limits: { "POST /generate-video": 10_000, "GET /video-status/<job_id>": 100_000, "GET /credits": 10_000 },
};
const BACKENDS = await databaseBackends();

// A 3 s clip; the same with its frames zeroed (every box whole: it probes as 3 s, it does not decode); the
// same cut short after its moov (it probes as 3 s too, but is refused on its boxes).
let fixtures: { clip: Uint8Array; zeroed: Uint8Array; cutShort: Uint8Array };
{
  const engine: MediaEngine = createMediaEngine({ mode: ENGINE_MODES[0]! });
  const clip = await generateTestVideo(engine, { width: 320, height: 240, seconds: 3, font: false });
  const faststart = (
    await engine.run(["-i", "in.mp4", "-c", "copy", "-movflags", "+faststart", "fs.mp4"], {
      inputs: { "in.mp4": clip },
      outputs: ["fs.mp4"],
    })
  )["fs.mp4"]!;
  await engine.close();
  const mdatOf = (bytes: Uint8Array) => [...mp4Boxes(bytes)].find((b) => b.type === "mdat")!;
  const zeroed = new Uint8Array(clip);
  zeroed.fill(0, mdatOf(clip).body, mdatOf(clip).end);
  fixtures = { clip, zeroed, cutShort: faststart.subarray(0, mdatOf(faststart).start + 64) };
}

const server: Server = createServer((req, res) => {
  const body = { "/clip.mp4": fixtures.clip, "/zeroed.mp4": fixtures.zeroed, "/cut-short.mp4": fixtures.cutShort }[
    req.url ?? ""
  ];
  if (body) return void res.writeHead(200, { "content-type": "video/mp4" }).end(body);
  if (req.url === "/notes.txt")
    return void res.writeHead(200, { "content-type": "text/plain" }).end("not a video\n".repeat(40));
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function waitFor(tk: TestKernel, key: string, id: string, timeoutMs = 120_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await tk.request("GET", `/video-status/${id}`, { key });
    if (res.status !== 200) throw new Error(`video ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.status === "complete" || res.body.status === "error") return res.body;
    if (Date.now() > until) throw new Error(`video ${id} still ${res.body.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const balance = async (tk: TestKernel, key: string) =>
  (await tk.request("GET", "/credits", { key })).body.credits_remaining as number;

const body = (url: string) => ({
  prompt: "like [Video 1]",
  model: "beta-2-5",
  quality: "480p",
  duration: 4,
  reference_video_urls: [url],
});

for (const backend of BACKENDS) {
  const t = suite(`reference video encodes are job work on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    tk = await createTestKernel({
      plugins: [account, videoSandbox, video],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      start: true,
      env: { ALLOW_PRIVATE_URLS: "1", MEDIA_CONCURRENCY: "1" },
    });
  });
  t.after(async () => {
    await tk.close();
  });

  t(
    "with every encode held, two calls answer 202 (no 503); their jobs encode once the encodes are let go",
    async () => {
      const { key } = await tk.partner({ credits: 1000, limits: UNLIMITED });
      const hold = holdEncodes(tk);
      try {
        const [a, b] = await answerWhileHeld(
          Promise.all([
            tk.request("POST", "/generate-video", { key, body: body(`${base}/clip.mp4`) }),
            tk.request("POST", "/generate-video", { key, body: body(`${base}/clip.mp4`) }),
          ]),
        );
        for (const res of [a, b]) {
          assert.is(res.status, 202, JSON.stringify(res.body));
          // 13.2 x (3 measured + 4 output) = 92.4 -> 93: measured before the charge, without an encode.
          assert.is(res.body.credits_used, 93);
        }
        // The jobs reach the encode and wait there (a poll with a deadline, no sleep).
        const until = Date.now() + 60_000;
        while (!hold.held.some((outputs) => outputs.includes("ref.mp4"))) {
          if (Date.now() > until) throw new Error(`no reference encode reached: ${JSON.stringify(hold.held)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.is((await tk.request("GET", `/video-status/${a.body.job_id}`, { key })).body.status, "processing");
        hold.release();
        for (const res of [a, b]) assert.is((await waitFor(tk, key, res.body.job_id)).status, "complete");
        assert.is(await balance(tk, key), 1000 - 2 * 93);
      } finally {
        hold.release();
      }
    },
  );

  t(
    "a reference refused by the checks answers the spec's 400 and changes nothing: no charge, no row, no file",
    async () => {
      const { key } = await tk.partner({ credits: 1000, limits: UNLIMITED });
      const jobs = async () =>
        Number(
          (
            await tk.kernel.database.kysely
              .selectFrom("jobs")
              .select((eb) => eb.fn.countAll().as("n"))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const [jobsBefore, blobsBefore] = [await jobs(), (await tk.kernel.blobs.keys()).length];
      for (const [path, text] of [
        ["/cut-short.mp4", VIDEO_ERRORS.referenceVideoUnusable],
        ["/notes.txt", VIDEO_ERRORS.referenceVideoUnusable],
        ["/missing.mp4", VIDEO_ERRORS.referenceVideoDownload(404)],
      ] as const) {
        const res = await tk.request("POST", "/generate-video", { key, body: body(`${base}${path}`) });
        assert.is(res.status, 400, path);
        assert.is(res.body.error, text, path);
      }
      assert.is(VIDEO_ERRORS.referenceVideoUnusable, "Could not prepare that video as a reference.");
      assert.is(await balance(tk, key), 1000);
      assert.is(await jobs(), jobsBefore);
      assert.is((await tk.kernel.blobs.keys()).length, blobsBefore);
    },
  );

  t("a reference that passes the probe and fails its encode fails the job, refunded exactly once", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: UNLIMITED });
    const res = await tk.request("POST", "/generate-video", { key, body: body(`${base}/zeroed.mp4`) });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.credits_used, 93);
    const done = await waitFor(tk, key, res.body.job_id);
    assert.is(done.status, "error");
    assert.is(done.error, VIDEO_ERRORS.failed);
    assert.is(await balance(tk, key), 1000);
    const ledger = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .select(["type", "amount"])
      .where("partner_id", "=", id)
      .where("job_id", "=", res.body.job_id)
      .orderBy("id")
      .execute();
    assert.equal(
      ledger.map((e) => Number(e.amount)),
      [-93, 93],
      JSON.stringify(ledger),
    );
  });

  t.run();
}

{
  const t = suite("reference encode job: teardown");
  t("closes the server", async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  t.run();
}
