// Captions through the REST API on every backend: the style whitelist, every refusal before a charge, a
// generated video with sound captioned end to end (the burned frames show text while a word is spoken and
// not in a pause), the cards read back, edited and re-burned free of charge, `no_speech` on a silent clip
// (refunded), the account's active-job cap, the feature switch and retention.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MediaEngine } from "../../lib/media/index.ts";
import { CAPTION_ERRORS } from "../../plugins/captions/errors.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { withKernelAndEngine } from "../helpers/kernel-engine.ts";
import { CAPTIONS_LIMITS, captionDone, lumaAt, startCaptionsKernel } from "./helpers/captions-kernel.ts";

const DAY = 24 * 3600 * 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The share of pixels (0-1) over the rows [from, to) of the height whose luma differs by more than 48: drawn
 * text, not the re-encode's noise.
 */
function diff(a: Uint8Array, b: Uint8Array, width: number, height: number, from = 0, to = 1): number {
  let changed = 0;
  let n = 0;
  for (let y = Math.floor(height * from); y < Math.floor(height * to); y++) {
    for (let x = 0; x < width; x++) {
      if (Math.abs(a[y * width + x]! - b[y * width + x]!) > 48) changed++;
      n++;
    }
  }
  return changed / n;
}

for (const backend of await databaseBackends()) {
  const t = suite(`captions on ${backend.name}`);
  let tk: TestKernel;
  let engine: MediaEngine;
  withKernelAndEngine(
    t,
    () => startCaptionsKernel(backend),
    (k, e) => ((tk = k), (engine = e)),
  );

  async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string): Promise<T> {
    const started = Date.now();
    for (;;) {
      const v = await read();
      if (done(v)) return v;
      if (Date.now() - started > 240_000) throw new Error(`${what}: still not done: ${JSON.stringify(v)}`);
      await sleep(100);
    }
  }

  async function generatedVideo(key: string, prompt: string, sound: boolean): Promise<string> {
    const res = await tk.request("POST", "/generate-video", {
      key,
      body: { prompt, model: "alpha-v3-text-to-video", quality: "720p", duration: 5, sound, aspect_ratio: "16:9" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const v = await until(
      () => tk.request("GET", `/video-status/${res.body.job_id}`, { key }),
      (r) => ["complete", "error"].includes(r.body.status),
      "video",
    );
    assert.is(v.body.status, "complete", JSON.stringify(v.body));
    return res.body.job_id;
  }

  const blobOf = async (url: string) => (await tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length)))!;
  const credits = async (key: string) =>
    (await tk.request("GET", "/credits", { key })).body.credits_remaining as number;

  t("style-options: the whitelist, the tier's price, upload and retention", async () => {
    const { key } = await tk.partner({ tier: "standard", limits: CAPTIONS_LIMITS });
    const res = await tk.request("GET", "/captions/style-options", { key });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.is(res.body.fonts.length, 62);
    assert.is(res.body.credits, 25);
    assert.equal(res.body.upload, {
      chunked: true,
      chunk_size: 8388608,
      max_bytes: 1000000000,
      max_seconds: 1800,
      single_shot_max_bytes: 95000000,
    });
    assert.equal(res.body.retention, { captioned_output_days: 14, uploaded_source_days: 2, guaranteed: false });
    const plus = await tk.partner({ tier: "api_plus10", limits: CAPTIONS_LIMITS });
    assert.is((await tk.request("GET", "/captions/style-options", { key: plus.key })).body.credits, 28);
    const costs = await tk.request("GET", "/credits", { key });
    assert.is(costs.body.costs.captions, 25);
  });

  t("refusals before any charge leave nothing behind", async () => {
    const { key } = await tk.partner({ credits: 100, limits: CAPTIONS_LIMITS });
    const other = await tk.partner({ credits: 1000, limits: CAPTIONS_LIMITS });
    const foreign = await generatedVideo(other.key, "a quiet lake", false);
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, CAPTION_ERRORS.videoJobIdRequired],
      [{ video_job_id: "https://example.com/v.mp4" }, 400, CAPTION_ERRORS.videoJobIdInvalid],
      [{ video_job_id: 12 }, 400, CAPTION_ERRORS.videoJobIdInvalid],
      [{ video_job_id: foreign, style: "big" }, 400, CAPTION_ERRORS.styleNotObject],
      [{ video_job_id: "svc-00000000" }, 404, CAPTION_ERRORS.videoNotFound],
      [{ video_job_id: foreign }, 404, CAPTION_ERRORS.videoNotFound],
      [{ video_job_id: foreign, partner_job_id: "x".repeat(65) }, 400, "partner_job_id"],
    ];
    for (const [body, status, text] of cases) {
      const res = await tk.request("POST", "/captions", { key, body });
      assert.is(res.status, status, `${JSON.stringify(body)} -> ${JSON.stringify(res.body)}`);
      assert.ok(String(res.body.error).includes(text), `${JSON.stringify(body)} -> ${res.body.error}`);
    }
    const bad = await tk.request("POST", "/captions", {
      key,
      body: { video_job_id: foreign, style: { size: "huge" } },
    });
    assert.is(bad.status, 400);
    assert.is(await credits(key), 100);
    assert.is((await tk.request("GET", "/captions", { key })).body.total, 0);
    const off = await tk.partner({ features: { captions: false }, limits: CAPTIONS_LIMITS });
    const forbidden = await tk.request("POST", "/captions", { key: off.key, body: { video_job_id: foreign } });
    assert.is(forbidden.status, 403);
    assert.is(forbidden.body.feature, "captions");
  });

  t("a generated video with speech: captioned, read, edited and re-burned free of charge, then pruned", async () => {
    const { key } = await tk.partner({ credits: 1000, tier: "standard", limits: CAPTIONS_LIMITS });
    const videoId = await generatedVideo(
      key,
      'A presenter at a desk says "hello there, welcome to the evening news"',
      true,
    );
    const before = await credits(key);
    const sub = await tk.request("POST", "/captions", {
      key,
      body: { video_job_id: videoId, partner_job_id: "cap-1", style: { chunking: "words", size: "large" } },
    });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    assert.is(sub.body.status, "pending");
    assert.is(sub.body.credits_used, 25);
    assert.is(sub.body.credits_remaining, before - 25);
    assert.equal(sub.body.retention, { captioned_output_days: 14, uploaded_source_days: null, guaranteed: false });
    const again = await tk.request("POST", "/captions", { key, body: { video_job_id: videoId } });
    assert.ok([409, 202].includes(again.status));
    if (again.status === 202)
      await captionDone(tk, key, again.body.job_id); // the first had already finished
    else assert.is(again.body.error, CAPTION_ERRORS.sourceBusy);

    const job = await captionDone(tk, key, sub.body.job_id);
    assert.is(job.status, "complete", JSON.stringify(job));
    assert.is(job.partner_job_id, "cap-1");
    assert.ok(job.captioned_url.startsWith("https://media.example.test/media/"));
    assert.equal(
      [job.editable, job.source_available, job.media_pruned, job.edit_count, job.credits_refunded],
      [true, true, false, 0, false],
    );

    const chunks = await tk.request("GET", `/captions/${job.job_id}/chunks`, { key });
    assert.is(chunks.status, 200);
    const cards = chunks.body.chunks as Array<{ start: number; end: number; text: string }>;
    assert.ok(cards.length >= 2, JSON.stringify(cards));
    const words = cards
      .map((c) => c.text)
      .join(" ")
      .toLowerCase();
    assert.ok(words.includes("hello") && words.includes("news"), words);
    assert.equal(
      [chunks.body.chunk_count, chunks.body.too_many_to_edit, chunks.body.max_inline_edit_chunks],
      [cards.length, false, 800],
    );

    // The burned frames: text in the lower part while a card is up, the source's picture in a gap.
    const videoStatus = await tk.request("GET", `/video-status/${videoId}`, { key });
    const src = await blobOf(videoStatus.body.video_url);
    const out = await blobOf(job.captioned_url);
    const probe = await engine.probe(out, "out.mp4");
    const v = probe.streams.find((s) => s.type === "video")!;
    assert.equal([v.codec, v.width, v.height], ["h264", 1280, 720]);
    assert.ok(probe.streams.some((s) => s.type === "audio" && s.codec === "aac"));
    const inside = (cards[0]!.start + cards[0]!.end) / 2;
    const diffInside = diff(await lumaAt(engine, src, inside), await lumaAt(engine, out, inside), 1280, 720, 0.55, 1);
    const lastEnd = cards.at(-1)!.end;
    // The sandbox starts speaking at 0.4 s: the screen is clear before the first card.
    const outside = cards[0]!.start >= 0.3 ? cards[0]!.start / 2 : lastEnd + 0.3 < 4.9 ? (lastEnd + 4.9) / 2 : null;
    assert.ok(outside !== null, JSON.stringify(cards));
    assert.ok(diffInside > 0.002, `caption region differs while a card is up (${diffInside})`);
    const diffOutside = diff(
      await lumaAt(engine, src, outside!),
      await lumaAt(engine, out, outside!),
      1280,
      720,
      0.55,
      1,
    );
    assert.ok(diffOutside < diffInside / 10, `no caption before the first word (${diffOutside} vs ${diffInside})`);

    // Edit: bad lists answer 400 and change nothing.
    const badEdits: Array<[unknown, string]> = [
      [{}, CAPTION_ERRORS.chunksRequired],
      [{ chunks: [{ start: 1, end: 1, text: "x" }] }, CAPTION_ERRORS.chunkTiming],
      [{ chunks: [{ start: 0, end: 7201, text: "x" }] }, CAPTION_ERRORS.chunkTiming],
      [{ chunks: [{ start: 0, end: 1, text: "x".repeat(201) }] }, CAPTION_ERRORS.chunkTextTooLong],
      [{ chunks: [{ start: 0, end: 1, text: "" }] }, CAPTION_ERRORS.noCaptionLeft],
      [
        { chunks: Array.from({ length: 4001 }, (_, i) => ({ start: i, end: i + 0.5, text: "a" })) },
        CAPTION_ERRORS.tooManyChunks,
      ],
      [{ chunks: [{ start: "0", end: 1, text: "x" }] }, CAPTION_ERRORS.chunkInvalid],
    ];
    for (const [body, text] of badEdits) {
      const res = await tk.request("POST", `/captions/${job.job_id}/edit`, { key, body });
      assert.is(res.status, 400, JSON.stringify(res.body));
      assert.is(res.body.error, text);
    }
    const balance = await credits(key);
    const edited = [
      { start: 0.2, end: 1.8, text: "EDITED CAPTION" },
      { start: 2.5, end: 2.9, text: "" },
      { start: 3, end: 4.5, text: "second one" },
    ];
    const edit = await tk.request("POST", `/captions/${job.job_id}/edit`, { key, body: { chunks: edited } });
    assert.is(edit.status, 202, JSON.stringify(edit.body));
    assert.is(edit.body.status, "pending");
    const busy = await tk.request("POST", `/captions/${job.job_id}/edit`, { key, body: { chunks: edited } });
    assert.ok(busy.status === 409 || busy.status === 202, JSON.stringify(busy.body));
    const reburned = await until(
      () => tk.request("GET", `/captions/${job.job_id}`, { key }),
      (r) => r.body.status === "complete" && r.body.edit_count >= 1,
      "re-burn",
    ).then((r) => r.body);
    assert.is(reburned.status, "complete");
    assert.ok(reburned.captioned_url !== job.captioned_url, "a new output URL");
    assert.is(await credits(key), balance, "no charge for an edit");
    const after = await tk.request("GET", `/captions/${job.job_id}/chunks`, { key });
    assert.equal(
      after.body.chunks.map((c: any) => c.text),
      ["EDITED CAPTION", "second one"],
    );

    // Retention: 14 days later the output is gone; the generated source remains, so it can be re-burned.
    tk.clock.advance(15 * DAY);
    await tk.kernel.retention.sweep();
    const pruned = (await tk.request("GET", `/captions/${job.job_id}`, { key })).body;
    assert.equal([pruned.media_pruned, pruned.captioned_url, pruned.source_available], [true, null, true]);
    tk.clock.advance(-15 * DAY);
  });

  t("a silent clip ends no_speech, refunded; the active-job cap answers 429", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: { ...CAPTIONS_LIMITS, caption_jobs: 1 } });
    const silent = await generatedVideo(key, "an empty beach at dawn, waves", false);
    const other = await generatedVideo(key, "a city street at night", false);
    const before = await credits(key);
    const sub = await tk.request("POST", "/captions", { key, body: { video_job_id: silent } });
    assert.is(sub.status, 202, JSON.stringify(sub.body));
    const second = await tk.request("POST", "/captions", { key, body: { video_job_id: other } });
    if (second.status !== 202) {
      assert.is(second.status, 429, JSON.stringify(second.body));
      assert.is(second.body.error, CAPTION_ERRORS.tooManyActive);
    } else await captionDone(tk, key, second.body.job_id);
    const job = await captionDone(tk, key, sub.body.job_id);
    assert.is(job.status, "no_speech", JSON.stringify(job));
    assert.is(job.credits_refunded, true);
    assert.is(job.captioned_url, null);
    const list = await tk.request("GET", "/captions?limit=1", { key });
    assert.is(list.status, 200);
    assert.is(list.body.limit, 1);
    assert.ok(list.body.total >= 1);
    if (second.status !== 202) assert.is(await credits(key), before);
    const foreign = await tk.partner({ limits: CAPTIONS_LIMITS });
    assert.is((await tk.request("GET", `/captions/${job.job_id}`, { key: foreign.key })).status, 404);
    assert.is((await tk.request("GET", `/captions/${job.job_id}/chunks`, { key: foreign.key })).status, 404);
    assert.is(
      (
        await tk.request("POST", `/captions/${job.job_id}/edit`, {
          key: foreign.key,
          body: { chunks: [{ start: 0, end: 1, text: "x" }] },
        })
      ).status,
      404,
    );
    const notEditable = await tk.request("POST", `/captions/${job.job_id}/edit`, {
      key,
      body: { chunks: [{ start: 0, end: 1, text: "x" }] },
    });
    assert.is(notEditable.status, 409);
  });

  t.run();
}
