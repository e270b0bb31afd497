// POST /generate-video with a reference video when our own machine is busy (issue 36 item 9), through the
// app on every database backend: before the charge the reference is only downloaded and probed, so with every
// encode held the call still answers 202 (never the old 503 "reference encoder is busy") and the job encodes
// once the encodes are let go; a file refused by the checks changes nothing (no charge, no row, no file); a
// file that passes the probe and fails its encode fails the job, refunded exactly once.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { answerWhileHeld, holdEncodes } from "../helpers/held-encodes.ts";
import { balance } from "../helpers/partner-reads.ts";
import { jobCount, jobLedgerAmounts, serveReferenceSources, untilHeldOutput } from "../helpers/reference-sources.ts";
import { videoFinished, videoKernel } from "./helpers.ts";

const UNLIMITED = {
  inflight_jobs: 50,
  rate_limits: { "POST /generate-video": 10_000, "GET /video-status/<job_id>": 100_000, "GET /credits": 10_000 },
};
const BACKENDS = await databaseBackends();

const { base, close } = await serveReferenceSources({ "/notes.txt": "not a video\n".repeat(40) });

const body = (url: string) => ({
  prompt: "like [Video 1]",
  model: "beta-2-5",
  quality: "480p",
  duration: 4,
  reference_video_urls: [url],
});

for (const backend of BACKENDS) {
  const t = suite(`reference video encodes are job work on ${backend.name}`);
  const tk = videoKernel(t, backend, { ALLOW_PRIVATE_URLS: "1", MEDIA_CONCURRENCY: "1" });

  t(
    "with every encode held, two calls answer 202 (no 503); their jobs encode once the encodes are let go",
    async () => {
      const { key } = await tk.partner({ credits: 1000, limits: UNLIMITED });
      const call = () => tk.request("POST", "/generate-video", { key, body: body(`${base}/clip.mp4`) });
      const hold = holdEncodes(tk);
      try {
        const [a, b] = await answerWhileHeld(Promise.all([call(), call()]));
        for (const res of [a, b]) {
          assert.is(res.status, 202, JSON.stringify(res.body));
          // 13.2 x (3 measured + 4 output) = 92.4 -> 93: measured before the charge, without an encode.
          assert.is(res.body.credits_used, 93);
        }
        // The jobs reach the encode and wait there.
        await untilHeldOutput(hold.held, "ref.mp4");
        assert.is((await tk.request("GET", `/video-status/${a.body.job_id}`, { key })).body.status, "processing");
        hold.release();
        for (const res of [a, b]) assert.is((await videoFinished(tk, key, res.body.job_id)).body.status, "complete");
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
      const [jobsBefore, blobsBefore] = [await jobCount(tk), (await tk.kernel.blobs.keys()).length];
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
      assert.is(await jobCount(tk), jobsBefore);
      assert.is((await tk.kernel.blobs.keys()).length, blobsBefore);
    },
  );

  t("a reference that passes the probe and fails its encode fails the job, refunded exactly once", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: UNLIMITED });
    const res = await tk.request("POST", "/generate-video", { key, body: body(`${base}/zeroed.mp4`) });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.credits_used, 93);
    const done = (await videoFinished(tk, key, res.body.job_id)).body;
    assert.is(done.status, "error");
    assert.is(done.error, VIDEO_ERRORS.failed);
    assert.is(await balance(tk, key), 1000);
    assert.equal(await jobLedgerAmounts(tk, id, res.body.job_id), [-93, 93]);
  });

  t.run();
}

{
  const t = suite("reference encode job: teardown");
  t("closes the server", close);
  t.run();
}
