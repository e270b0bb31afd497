// Issue 14, item 7: upscale-video bills what the file holds, not what its header says. A 6-second MP4 whose
// mvhd, tkhd and mdhd durations were edited to say 1 second (the box edit is written here, with
// lib/formats/isobmff.ts) is billed 6 seconds, and the job's work is capped at the billed seconds (`-t`), so
// no file can make the upscaler work longer than was paid for. Before the fix it was billed 1 second and
// upscaled for 6.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type Mp4Box, mp4Boxes } from "../../lib/formats/index.ts";
import { createMediaEngine, firstVideo, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import { billedSeconds } from "../../plugins/upscale/prices.ts";
import { packetSpan, planVideo, scaleArgs } from "../../plugins/upscale/video.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { balance, mediaBytes } from "../helpers/partner-reads.ts";
import { ENGINE_MODES } from "../media/util.ts";
import { fileServer, partner, upscaleOptions, videoEnd } from "./util.ts";

/** The boxes on a path (e.g. moov/trak/mdia/mdhd), every match at each level. */
function* boxesAt(bytes: Uint8Array, path: string[], from = 0, to = bytes.length): Generator<Mp4Box> {
  for (const box of mp4Boxes(bytes, from, to)) {
    if (box.type !== path[0]) continue;
    if (path.length === 1) yield box;
    else yield* boxesAt(bytes, path.slice(1), box.body, box.end);
  }
}

/**
 * A copy whose header says `seconds`: mvhd and every mdhd in their own timescales, every tkhd in the movie's.
 * The samples, their timing (stts) and the edit lists are untouched: the file still plays as long as before.
 */
function understate(source: Uint8Array, seconds: number): Uint8Array {
  const bytes = new Uint8Array(source);
  const view = new DataView(bytes.buffer);
  const set = (at: number, version: number, value: number) =>
    version === 1 ? view.setBigUint64(at, BigInt(value)) : view.setUint32(at, value);
  // Full boxes: version (1 byte) and flags (3), then creation and modification times (4 or 8 bytes each).
  const times = (box: Mp4Box) => 4 + (bytes[box.body] === 1 ? 16 : 8);
  const mvhd = [...boxesAt(bytes, ["moov", "mvhd"])][0]!;
  const movieScale = view.getUint32(mvhd.body + times(mvhd));
  set(mvhd.body + times(mvhd) + 4, bytes[mvhd.body]!, Math.round(seconds * movieScale));
  for (const tkhd of boxesAt(bytes, ["moov", "trak", "tkhd"])) {
    // tkhd: times, track_ID (4), reserved (4), duration.
    set(tkhd.body + times(tkhd) + 8, bytes[tkhd.body]!, Math.round(seconds * movieScale));
  }
  for (const mdhd of boxesAt(bytes, ["moov", "trak", "mdia", "mdhd"])) {
    const scale = view.getUint32(mdhd.body + times(mdhd));
    set(mdhd.body + times(mdhd) + 4, bytes[mdhd.body]!, Math.round(seconds * scale));
  }
  return bytes;
}

// Fixtures, made once (every await before the first suite: uvu starts on yield).
const maker = createMediaEngine({ mode: ENGINE_MODES[0]! });
const six = await generateTestVideo(maker, { width: 64, height: 36, seconds: 6, fps: 5, font: false }); // H.264 + AAC
const lying = understate(six, 1);
const stated = { six: (await maker.probe(six)).durationSeconds, lying: (await maker.probe(lying)).durationSeconds };
await maker.close();

const server = await fileServer({ "/lying.mp4": lying, "/six.mp4": six });

{
  const t = suite("upscale-video: what is billed is measured");

  t("the edited header really lies: the container says 1 s, the file plays 6", () => {
    assert.ok(Math.abs(stated.six - 6) < 0.1, `${stated.six}`);
    assert.ok(stated.lying < 1.1, `the edited file states ${stated.lying} s`);
  });

  t("framecrc listings: the span from the first packet's start to the last one's end, over every stream", () => {
    const listing = [
      "#format: frame checksums",
      "#tb 0: 1/10240",
      "#media_type 0: video",
      "#tb 1: 1/48000",
      "0,          0,          0,     2048,     1750, 0x5041a1ba",
      "1,      -1024,      -1024,     1024,        6, 0x01",
      "0,      59392,      59392,     2048,      160, 0xf88443e0, F=0x0",
      "1,     287744,     287744,     1024,        6, 0x02",
    ].join("\n");
    // Video ends at 61440/10240 = 6.0; audio at 288768/48000 = 6.016. Its priming packet before 0 is not played.
    assert.ok(Math.abs(packetSpan(listing) - 288768 / 48000) < 1e-9, String(packetSpan(listing)));
    assert.ok(
      Math.abs(packetSpan("#tb 0: 1/10\n0, 5, 5, 1, 1, 0x0\n0, 9, 9, 1, 1, 0x0\n") - 0.5) < 1e-9,
      "a stream that starts late spans from its start",
    );
    assert.is(packetSpan("#tb 0: 1/25\n"), 0);
    assert.is(packetSpan("0, 0, 0, 1, 1, 0x0\n"), 0, "no time base, no time");
    assert.is(packetSpan(""), 0);
  });

  t("the job's arguments stop at the billed seconds", () => {
    const args = scaleArgs({ width: 64, height: 36 }, planVideo({ width: 64, height: 36 }, 2), "copy", "native", 6);
    assert.equal(args.slice(args.indexOf("-t"), args.indexOf("-t") + 2), ["-t", "6"]);
    assert.is(args.at(-1), "out.mp4");
    assert.not.ok(
      scaleArgs({ width: 64, height: 36 }, planVideo({ width: 64, height: 36 }, 2), null, "native").includes("-t"),
    );
  });

  for (const mode of ENGINE_MODES) {
    t(`capped at what was billed, whatever the file holds (${mode})`, async () => {
      const engine: MediaEngine = createMediaEngine({ mode });
      try {
        const args = scaleArgs(
          { width: 64, height: 36 },
          planVideo({ width: 64, height: 36 }, 1),
          "copy",
          engine.kind,
          2,
        );
        const out = (await engine.run(args, { inputs: { "in.bin": lying }, outputs: ["out.mp4"], timeoutMs: 300_000 }))[
          "out.mp4"
        ]!;
        const probe = await engine.probe(out);
        assert.ok(probe.durationSeconds <= 2.1, `${probe.durationSeconds} s made for 2 billed`);
        assert.ok(probe.durationSeconds >= 1.9, `${probe.durationSeconds} s`);
      } finally {
        await engine.close();
      }
    });
  }

  t.run();
}

{
  const t = suite("upscale-video: a header that understates is billed for the whole file");
  const tk = suiteKernel(t, { name: "pglite" }, upscaleOptions());
  t.after(async () => {
    await server.close();
  });

  t("6 s billed for a file that says 1 s, and the output is the whole 6 s that was paid for", async () => {
    const { key } = await partner(tk, { credits: 1000, tier: "standard" });
    const res = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: `${server.base}/lying.mp4`, upscale_factor: 2 },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.input_seconds, 6);
    assert.is(res.body.credits_used, 36); // 6 s x 6
    assert.is(await balance(tk, key), 1000 - 36);
    // The honest file bills the same.
    const honest = await tk.request("POST", "/upscale-video", {
      key,
      body: { video_url: `${server.base}/six.mp4`, upscale_factor: 2 },
    });
    assert.is(honest.status, 202, JSON.stringify(honest.body));
    assert.is(honest.body.input_seconds, billedSeconds(stated.six));
    assert.is(honest.body.input_seconds, 6);

    const done = await videoEnd(tk, key, res.body.job_id);
    assert.is(done.status, "complete", JSON.stringify(done));
    const engine = createMediaEngine({ mode: ENGINE_MODES[0]! });
    try {
      const out = await engine.probe(await mediaBytes(tk, done.video_url));
      assert.ok(out.durationSeconds > 5.5 && out.durationSeconds <= 6.1, `${out.durationSeconds} s`);
      assert.equal([firstVideo(out)?.width, firstVideo(out)?.height], [128, 72]);
    } finally {
      await engine.close();
    }
    await videoEnd(tk, key, honest.body.job_id);
  });

  t.run();
}
