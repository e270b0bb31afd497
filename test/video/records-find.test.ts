// `video.records` find(): another area (captions) reads one of an account's videos without importing the video
// plugin: its state, size, bytes and the record of what the sandbox spoke in it, for generated clips and for
// merges (whose record is the clips' records laid end to end, checked against the merged file's audio).
// Another account's job and an unknown id are both null. On every database backend.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { SpokenRecord } from "../../contracts/speech.ts";
import { rmsBetween } from "../../lib/speech/index.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { mediaBytes } from "../helpers/partner-reads.ts";
import { videoFinished, videoKernel } from "./helpers.ts";

const UNLIMITED = {
  rate_limits: { "POST /generate-video": 10_000, "POST /merge-videos": 10_000, "GET /video-status/<job_id>": 100_000 },
};

/** Mean RMS of the clip's audio inside the words and in the pauses between them. */
async function speechContrast(tk: TestKernel, mp4: Uint8Array, spoken: SpokenRecord) {
  const out = await tk.kernel
    .capability("media")
    .run(["-i", "in.mp4", "-vn", "-ac", "1", "-ar", "48000", "-f", "s16le", "a.pcm"], {
      inputs: { "in.mp4": mp4 },
      outputs: ["a.pcm"],
    });
  const pcm = out["a.pcm"]!;
  const samples = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
  const w = spoken.words;
  const inside = w.reduce((s, x) => s + rmsBetween(samples, 48000, x.start, x.end), 0) / w.length;
  const gaps =
    w.slice(1).reduce((s, x, i) => s + rmsBetween(samples, 48000, w[i]!.end + 0.01, x.start - 0.01), 0) /
    (w.length - 1);
  const lead = rmsBetween(samples, 48000, w[0]!.start - 0.2, w[0]!.start - 0.02);
  return { inside, gaps, lead };
}

for (const backend of await databaseBackends()) {
  const t = suite(`video.records find on ${backend.name}`);
  const tk = videoKernel(t, backend, { SANDBOX_LATENCY_MS: "0", PUBLIC_URL: "https://media.example.test" }, true);

  t(
    "a clip with sound comes back with its bytes and spoken record; merges shift the record; strangers get null",
    async () => {
      const owner = await tk.partner({ credits: 2000, limits: UNLIMITED });
      const stranger = await tk.partner({ credits: 2000, limits: UNLIMITED });
      const submit = async (body: Record<string, unknown>) => {
        const res = await tk.request("POST", "/generate-video", { key: owner.key, body });
        assert.is(res.status, 202, JSON.stringify(res.body));
        return res.body.job_id as string;
      };
      const talking = await submit({
        prompt: `A sailor says "Storm ahead, hold on tight!" [sandbox:flaky]`,
        model: "alpha-v3-text-to-video",
        quality: "720p",
        duration: 5,
        aspect_ratio: "16:9",
        sound: true,
        strip_metadata: true,
      });
      const silent = await submit({
        prompt: "A quiet harbour",
        model: "beta-2-direct",
        quality: "480p",
        duration: 2,
        aspect_ratio: "16:9",
      });
      const failing = await submit({
        prompt: "Nothing [sandbox:fail]",
        model: "beta-2-direct",
        quality: "480p",
        duration: 1,
        aspect_ratio: "16:9",
      });
      const done = await videoFinished(tk, owner.key, talking);
      assert.is(done.body.status, "complete", JSON.stringify(done.body));
      assert.is((await videoFinished(tk, owner.key, silent)).body.status, "complete");
      assert.is((await videoFinished(tk, owner.key, failing)).body.status, "error");

      const db = tk.kernel.database.kysely;
      const records = tk.kernel.capability("video.records");
      const clip = (await records.find(db, owner.id, talking))!;
      assert.ok(clip);
      assert.equal(
        { ...clip, read: null, spoken: null },
        {
          job_id: talking,
          kind: "video",
          state: "complete",
          complete: true,
          duration: 5,
          width: 1280,
          height: 720,
          read: null,
          spoken: null,
        },
      );
      const bytes = (await clip.read())!;
      assert.equal(Buffer.compare(Buffer.from(bytes), Buffer.from(await mediaBytes(tk, done.body.video_url))), 0);
      assert.equal(
        clip.spoken!.words.map((w) => w.text),
        ["Storm", "ahead,", "hold", "on", "tight!"],
      );
      assert.ok(clip.spoken!.words.every((w) => w.confidence === 1 && w.start >= 0.4 && w.end <= 5));
      const c = await speechContrast(tk, bytes, clip.spoken!);
      assert.ok(c.inside > c.gaps * 3 && c.inside > c.lead * 3, JSON.stringify(c));

      const quiet = (await records.find(db, owner.id, silent))!;
      assert.is(quiet.spoken, null);
      assert.equal(
        [quiet.kind, quiet.complete, quiet.duration, quiet.width, quiet.height],
        ["video", true, 2, 854, 480],
      );
      const failed = (await records.find(db, owner.id, failing))!;
      assert.equal([failed.state, failed.complete, failed.spoken], ["error", false, null]);
      assert.is(await failed.read(), null);

      // Not this account's, or no such job: the same null.
      assert.is(await records.find(db, stranger.id, talking), null);
      assert.is(await records.find(db, owner.id, "svc-00000000"), null);

      // A merge: the silent clip first, so the talking clip's words move by its length (re-encoded: one clip
      // has no sound). The record is checked against the merged file's audio.
      const merge = await tk.request("POST", "/merge-videos", { key: owner.key, body: { job_ids: [silent, talking] } });
      assert.is(merge.status, 200, JSON.stringify(merge.body));
      const merged = (await records.find(db, owner.id, merge.body.merge_id))!;
      assert.equal(
        [merged.kind, merged.state, merged.complete, merged.width, merged.height],
        ["merge", "complete", true, 854, 480],
      );
      assert.ok(Math.abs(merged.duration - 7) < 0.2, String(merged.duration));
      const mergedBytes = (await merged.read())!;
      assert.equal(
        Buffer.compare(Buffer.from(mergedBytes), Buffer.from(await mediaBytes(tk, merge.body.merged_url))),
        0,
      );
      assert.equal(
        merged.spoken!.words.map((w) => w.text),
        clip.spoken!.words.map((w) => w.text),
      );
      merged.spoken!.words.forEach((w, i) =>
        assert.ok(Math.abs(w.start - clip.spoken!.words[i]!.start - 2) < 0.05, `${w.text} at ${w.start}`),
      );
      const m = await speechContrast(tk, mergedBytes, merged.spoken!);
      assert.ok(m.inside > m.gaps * 3 && m.inside > m.lead * 3, JSON.stringify(m));
      assert.is(await records.find(db, stranger.id, merge.body.merge_id), null);

      // A merge of clips without any record keeps none.
      const plain = await tk.request("POST", "/merge-videos", { key: owner.key, body: { job_ids: [silent, silent] } });
      assert.is((await records.find(db, owner.id, plain.body.merge_id))!.spoken, null);
    },
  );

  t.run();
}
