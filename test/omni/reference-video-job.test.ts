// POST /omni/video with a reference video when our own machine is busy (issue 36 item 9), through the app on
// every database backend: before the charge the source is only downloaded and probed, so with every encode
// held the call still answers 202 and the job cuts the window once the encodes are let go; a source refused
// by the checks changes nothing (no charge, no row, no file); a source that passes the probe and fails its
// cut fails the job, refunded exactly once.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mp4Boxes } from "../../lib/formats/index.ts";
import { createMediaEngine, generateTestVideo } from "../../lib/media/index.ts";
import { OMNI_ERRORS } from "../../plugins/omni/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { answerWhileHeld, holdEncodes } from "../helpers/held-encodes.ts";
import { ENGINE_MODES } from "../media/util.ts";
import { balance, OMNI_LIMITS, omniKernel, videoDone } from "./helpers.ts";

const BACKENDS = await databaseBackends();

// A 3 s source; the same with its frames zeroed (every box whole: it probes as 3 s, it does not decode); the
// same cut short after its moov (it probes as 3 s too, but is refused on its boxes).
let fixtures: { clip: Uint8Array; zeroed: Uint8Array; cutShort: Uint8Array };
{
  const engine = createMediaEngine({ mode: ENGINE_MODES[0]! });
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
  res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const body = (path: string) => ({
  prompt: "like this",
  duration: 4,
  video_url: `${base}${path}`,
  video_start: 0.5,
  video_end: 2.5,
});

for (const backend of BACKENDS) {
  const t = suite(`Omni reference video cuts are job work on ${backend.name}`);
  let tk: TestKernel;
  t.before(async () => {
    tk = await omniKernel(backend, { MEDIA_CONCURRENCY: "1" });
  });
  t.after(async () => {
    await tk.close();
  });

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
        const until = Date.now() + 60_000;
        while (!hold.held.some((outputs) => outputs.includes("window.mp4"))) {
          if (Date.now() > until) throw new Error(`no window cut reached: ${JSON.stringify(hold.held)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
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
      ["/cut-short.mp4", OMNI_ERRORS.referenceVideoUnusable],
      ["/missing.mp4", OMNI_ERRORS.referenceUnavailable(404)],
    ] as const) {
      const res = await tk.request("POST", "/omni/video", { key, body: body(path) });
      assert.is(res.status, 400, path);
      assert.is(res.body.error, text, path);
    }
    assert.is(await balance(tk, key), 1000);
    assert.is(await jobs(), jobsBefore);
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
    const ledger = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .select(["amount"])
      .where("partner_id", "=", id)
      .where("job_id", "=", res.body.job_id)
      .orderBy("id")
      .execute();
    assert.equal(
      ledger.map((e) => Number(e.amount)),
      [-res.body.credits_used, res.body.credits_used],
      JSON.stringify(ledger),
    );
  });

  t.run();
}

{
  const t = suite("Omni reference video job: teardown");
  t("closes the server", async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  t.run();
}
