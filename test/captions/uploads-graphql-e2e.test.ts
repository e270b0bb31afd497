// Captions end to end beyond the generated-video path, on every backend: a caption job followed over
// GraphQL (`captions`, `jobUpdates` through transcribing and rendering to the end, `captionsByJobId`), an
// upload of an MP4 with speech that nobody recorded for us (offline recognition), the 2-day retention of an
// uploaded source (then `source_available` false and an edit answers 410), and a real-world MP4 made
// elsewhere (the C2PA fixture) taken to a terminal state.
import { existsSync, readFileSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MediaEngine } from "../../lib/media/index.ts";
import { speakTimed } from "../../lib/speech/index.ts";
import { CAPTION_ERRORS } from "../../plugins/captions/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { H264_AAC } from "../helpers/ffmpeg-args.ts";
import { followJobUpdates, graphqlData } from "../helpers/graphql.ts";
import { withKernelAndEngine } from "../helpers/kernel-engine.ts";
import { CAPTIONS_LIMITS, captionDone, startCaptionsKernel } from "./helpers/captions-kernel.ts";

const FIXTURE = new URL("../../../shared/fixtures/media/video1.mp4", import.meta.url);
const DAY = 24 * 3600 * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hasSphinx = ["/usr/bin/pocketsphinx_continuous", "/usr/local/bin/pocketsphinx_continuous"].some(existsSync);

/** A 6 s 640x360 MP4 whose sound is eSpeak reading `text`: speech that came with no record of its words. */
async function speakingMp4(engine: MediaEngine, text: string): Promise<Uint8Array> {
  const { wav } = await speakTimed(text, { voice: "en-us", pitch: 50, speed: 150, gap: 0 });
  const out = await engine.run(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=25:duration=6",
      "-i",
      "speech.wav",
      "-map",
      "0:v",
      "-map",
      "1:a",
      ...H264_AAC,
      "-t",
      "6",
      "-movflags",
      "+faststart",
      "out.mp4",
    ],
    { inputs: { "speech.wav": wav.bytes }, outputs: ["out.mp4"] },
  );
  return out["out.mp4"]!;
}

for (const backend of await databaseBackends()) {
  const t = suite(`captions over GraphQL and uploads on ${backend.name}`);
  let tk: TestKernel;
  let engine: MediaEngine;
  withKernelAndEngine(
    t,
    () => startCaptionsKernel(backend),
    (k, e) => ((tk = k), (engine = e)),
  );

  t("GraphQL: submit, follow jobUpdates through transcribing and rendering, read the job", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: CAPTIONS_LIMITS });
    const gen = await tk.request("POST", "/generate-video", {
      key,
      body: {
        prompt: 'A chef says "add the salt, then stir slowly for one minute"',
        model: "alpha-v3-text-to-video",
        quality: "720p",
        duration: 5,
        sound: true,
      },
    });
    assert.is(gen.status, 202, JSON.stringify(gen.body));
    for (;;) {
      const v = await tk.request("GET", `/video-status/${gen.body.job_id}`, { key });
      if (v.body.status === "complete") break;
      assert.is.not(v.body.status, "error");
      await sleep(100);
    }
    const sub = await graphqlData(
      tk,
      "mutation($input: CaptionsInput!) { captions(input: $input) { job_id status credits_used } }",
      { input: { video_job_id: gen.body.job_id, style: { chunking: "phrases" } } },
      { key },
    );
    const id = sub.captions.job_id;
    assert.is(sub.captions.status, "pending");

    const updates = await followJobUpdates(tk, id, "kind state terminal progress message", { key });
    assert.is(updates.at(-1)!.state, "complete", JSON.stringify(updates));
    assert.is(updates.at(-1)!.kind, "caption");
    const messages = new Set(updates.map((u) => u.message));
    assert.ok(messages.has("Rendering"), JSON.stringify(updates));
    const progress = updates.filter((u) => !u.terminal && u.progress !== null).map((u) => u.progress as number);
    assert.equal(
      progress,
      [...progress].sort((a, b) => a - b),
      "progress only grows",
    );

    const read = await graphqlData(
      tk,
      "query($id: String!) { captionsByJobId(job_id: $id) { status captioned_url edit_count editable retention { captioned_output_days } } }",
      { id },
      { key },
    );
    assert.is(read.captionsByJobId.status, "complete");
    assert.ok(read.captionsByJobId.captioned_url);
    assert.is(read.captionsByJobId.retention.captioned_output_days, 14);
  });

  t(
    "an uploaded MP4 with speech is recognized and captioned; its source is kept 2 days, then an edit is 410",
    async () => {
      if (!hasSphinx) return console.log("  (pocketsphinx is not installed: the recognition path is skipped)");
      const { key } = await tk.partner({ credits: 1000, limits: CAPTIONS_LIMITS });
      const mp4 = await speakingMp4(engine, "Good morning everyone. Today we will talk about the weather and the sea.");
      const form = new FormData();
      form.set("video", new Blob([mp4 as Uint8Array<ArrayBuffer>]), "talk.mp4");
      form.set("style", JSON.stringify({ chunking: "line", case: "upper" }));
      form.set("partner_job_id", "upload-1");
      const sub = await tk.request("POST", "/captions/upload", { key, body: form });
      assert.is(sub.status, 202, JSON.stringify(sub.body));
      assert.equal(sub.body.retention, { captioned_output_days: 14, uploaded_source_days: 2, guaranteed: false });
      const job = await captionDone(tk, key, sub.body.job_id);
      assert.is(job.status, "complete", JSON.stringify(job));
      const chunks = (await tk.request("GET", `/captions/${job.job_id}/chunks`, { key })).body;
      assert.ok(chunks.chunk_count >= 1, JSON.stringify(chunks));
      // `case` changes the display only: the chunks keep the spelling as transcribed.
      assert.ok(
        chunks.chunks.some((c: any) => c.text !== c.text.toUpperCase()),
        JSON.stringify(chunks.chunks),
      );
      const probe = await engine.probe(
        (await tk.kernel.blobs.get(new URL(job.captioned_url).pathname.slice("/media/".length)))!,
        "o.mp4",
      );
      assert.equal(
        probe.streams.filter((s) => s.type === "video").map((s) => [s.codec, s.width, s.height]),
        [["h264", 640, 360]],
      );

      tk.clock.advance(3 * DAY);
      await tk.kernel.retention.sweep();
      const later = (await tk.request("GET", `/captions/${job.job_id}`, { key })).body;
      assert.equal(
        [later.source_available, later.editable, later.media_pruned, later.status],
        [false, false, false, "complete"],
      );
      const edit = await tk.request("POST", `/captions/${job.job_id}/edit`, {
        key,
        body: { chunks: [{ start: 0, end: 1, text: "hi" }] },
      });
      assert.is(edit.status, 410, JSON.stringify(edit.body));
      assert.is(edit.body.error, CAPTION_ERRORS.sourcePruned);
      tk.clock.advance(-3 * DAY);
    },
  );

  t("a real-world MP4 made elsewhere (C2PA fixture) ends in a terminal state, refunded unless complete", async () => {
    const { key } = await tk.partner({ credits: 1000, tier: "standard", limits: CAPTIONS_LIMITS });
    const form = new FormData();
    form.set("video", new Blob([readFileSync(FIXTURE)]), "video1.mp4");
    const sub = await tk.request("POST", "/captions/upload", { key, body: form });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    const job = await captionDone(tk, key, sub.body.job_id);
    assert.ok(["complete", "no_speech"].includes(job.status), JSON.stringify(job));
    const balance = (await tk.request("GET", "/credits", { key })).body.credits_remaining;
    assert.is(balance, job.status === "complete" ? 975 : 1000);
  });

  t.run();
}
