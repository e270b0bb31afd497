// POST /omni/video with a reference video when our own machine is busy (issue 36 item 9), through the app on
// every database backend: before the charge the source is only downloaded and probed, so with every encode
// held the call still answers 202 and the job cuts the window once the encodes are let go; a source refused
// by the checks changes nothing (no charge, no row, no file); a source that passes the probe and fails its
// cut fails the job, refunded exactly once.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { answerWhileHeld, holdEncodes } from "../helpers/held-encodes.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { balance } from "../helpers/partner-reads.ts";
import { jobCount, jobLedgerAmounts, serveReferenceSources, untilHeldOutput } from "../helpers/reference-sources.ts";
import { OMNI_LIMITS, omniOptions, videoDone } from "./helpers.ts";

const BACKENDS = await databaseBackends();
const { base, close } = await serveReferenceSources();

const body = (path: string) => ({
  prompt: "like this",
  duration: 4,
  video_url: `${base}${path}`,
  video_start: 0.5,
  video_end: 2.5,
});

for (const backend of BACKENDS) {
  const t = suite(`Omni reference video cuts are job work on ${backend.name}`);
  const tk = suiteKernel(t, backend, omniOptions({ MEDIA_CONCURRENCY: "1" }));

  t(
    "with every encode held, two calls answer 202 (no 503); their jobs cut the window once the encodes are let go",
    async () => {
      const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
      const hold = holdEncodes(tk);
      try {
        const [a, b] = await answerWhileHeld(
          Promise.all([
            tk.request("POST", "/omni/video", { key, body: body("/clip.mp4") }),
            tk.request("POST", "/omni/video", { key, body: body("/clip.mp4") }),
          ]),
        );
        for (const res of [a, b]) assert.is(res.status, 202, JSON.stringify(res.body));
        const charged = a.body.credits_used + b.body.credits_used;
        await untilHeldOutput(hold.held, "window.mp4");
        assert.is((await tk.request("GET", `/omni/video/${a.body.job_id}`, { key })).body.status, "processing");
        hold.release();
        for (const res of [a, b]) assert.is((await videoDone(tk, key, res.body.job_id)).status, "complete");
        assert.is(await balance(tk, key), 1000 - charged);
      } finally {
        hold.release();
      }
    },
  );

  t("a source refused by the checks answers its 400 and changes nothing: no charge, no row, no file", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const [jobsBefore, blobsBefore] = [await jobCount(tk), (await tk.kernel.blobs.keys()).length];
    for (const [path, text] of [
      ["/cut-short.mp4", OMNI_ERRORS.referenceVideoUnusable],
      ["/missing.mp4", OMNI_ERRORS.referenceUnavailable(404)],
    ] as const) {
      const res = await tk.request("POST", "/omni/video", { key, body: body(path) });
      assert.is(res.status, 400, path);
      assert.is(res.body.error, text, path);
    }
    assert.is(await balance(tk, key), 1000);
    assert.is(await jobCount(tk), jobsBefore);
    assert.is((await tk.kernel.blobs.keys()).length, blobsBefore);
  });

  t("a source that passes the probe and fails its cut fails the job, refunded exactly once", async () => {
    const { id, key } = await tk.partner({ credits: 1000, limits: OMNI_LIMITS });
    const res = await tk.request("POST", "/omni/video", { key, body: body("/zeroed.mp4") });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await videoDone(tk, key, res.body.job_id);
    assert.is(done.status, "error");
    assert.is(done.error, OMNI_ERRORS.referenceLost);
    assert.is(done.credits_refunded, res.body.credits_used);
    assert.is(await balance(tk, key), 1000);
    assert.equal(await jobLedgerAmounts(tk, id, res.body.job_id), [-res.body.credits_used, res.body.credits_used]);
  });

  t.run();
}

{
  const t = suite("Omni reference video job: teardown");
  t("closes the server", close);
  t.run();
}
