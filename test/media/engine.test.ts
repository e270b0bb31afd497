// The ffmpeg engine on every engine this machine has (wasm always, native when ffmpeg is on PATH), with the
// same arguments: real fixtures and media generated with lavfi, progress, abort, timeouts, failures as
// MediaError, and the wasm queue. Clips are small (a few seconds, low resolution) because ffmpeg.wasm is slow.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { concatBytes, isoBmffBox } from "../../lib/formats/index.ts";
import {
  createMediaEngine,
  firstAudio,
  firstVideo,
  generateTestVideo,
  isMediaError,
  type MediaEngine,
  type MediaError,
  type Probe,
  parseFfmpegInfo,
  stripVideoMetadataArgs,
  testVideoJob,
} from "../../lib/media/index.ts";
import { H264 } from "../helpers/ffmpeg-args.ts";
import { ENGINE_MODES, EXIFTOOL, exifTags, fixture, leakedMetadata } from "./util.ts";

const video1 = fixture("video1.mp4");
/** An MP4 by its first box (so it passes the sniffing and reaches ffmpeg) whose body is junk. */
const damagedMp4 = concatBytes([
  isoBmffBox("ftyp", new TextEncoder().encode("isom\0\0\x02\0isomiso2")),
  new Uint8Array(4096).map((_, i) => (i * 7919) % 251),
]);
const cmov = fixture("c.mov");
const mp3 = fixture("sample1.mp3");

async function rejects(p: Promise<unknown>): Promise<MediaError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isMediaError(e), `expected a MediaError, got ${String(e)}`);
    return e as MediaError;
  }
  assert.unreachable("expected a rejection");
  throw new Error("unreachable");
}

/** A job that takes about `seconds` of wall time on any engine (-re reads the source in real time; -t gives progress its total). */
const slowArgs = (seconds: number, out = "slow.mp4") => [
  "-re",
  "-f",
  "lavfi",
  "-i",
  `testsrc2=size=160x90:rate=10:duration=${seconds}`,
  ...H264,
  "-t",
  String(seconds),
  out,
];

const probes: Partial<Record<"native" | "wasm", Record<string, Probe>>> = {};

for (const mode of ENGINE_MODES) {
  const t = suite(`media engine (${mode})`);
  let engine: MediaEngine;
  t.before(() => {
    engine = createMediaEngine({ mode });
  });
  t.after(async () => {
    await engine.close();
  });

  t("kind follows the mode", () => {
    assert.is(engine.kind, mode);
  });

  t("probes real-world fixtures", async () => {
    const p1 = await engine.probe(video1, "video1.mp4");
    assert.is(p1.formatName, "mov,mp4,m4a,3gp,3g2,mj2");
    assert.is(p1.sizeBytes, video1.byteLength);
    assert.ok(Math.abs(p1.durationSeconds - 2.0267) < 0.01, String(p1.durationSeconds));
    assert.equal(firstVideo(p1), { index: 0, type: "video", codec: "h264", width: 720, height: 1280, fps: 30 });
    assert.equal(firstAudio(p1), { index: 1, type: "audio", codec: "aac", sampleRate: 48000, channels: 2 });

    const p2 = await engine.probe(cmov, "c.mov");
    assert.is(p2.streams.length, 1);
    assert.equal(p2.streams[0], { index: 0, type: "video", codec: "h264", width: 2750, height: 1834, fps: 59.43 });
    assert.ok(Math.abs(p2.durationSeconds - 5.2167) < 0.01);

    const p3 = await engine.probe(mp3, "sample1.mp3");
    assert.is(p3.formatName, "mp3");
    assert.equal(firstAudio(p3), { index: 0, type: "audio", codec: "mp3", sampleRate: 44100, channels: 2 });
    assert.ok(Math.abs(p3.durationSeconds - 122.12) < 0.05);
    probes[mode] = { video1: p1, cmov: p2, mp3: p3 };
  });

  t("remuxes MP4 to MOV without re-encoding", async () => {
    const out = await engine.run(["-i", "in.mp4", "-map", "0", "-c", "copy", "out.mov"], {
      inputs: { "in.mp4": video1 },
      outputs: ["out.mov"],
    });
    const mov = out["out.mov"]!;
    assert.instance(mov, Uint8Array);
    const p = await engine.probe(mov, "out.mov");
    const src = await engine.probe(video1, "in.mp4");
    assert.equal(
      p.streams.map((s) => [s.type, s.codec, s.width, s.height, s.sampleRate]),
      src.streams.map((s) => [s.type, s.codec, s.width, s.height, s.sampleRate]),
    );
    assert.ok(Math.abs(p.durationSeconds - src.durationSeconds) < 0.05);
    // QuickTime brand, not the MP4 one.
    assert.is(new TextDecoder().decode(mov.subarray(8, 12)), "qt  ");
  });

  t("encodes a small H.264/AAC clip from lavfi sources", async () => {
    const mp4 = await generateTestVideo(engine, { width: 320, height: 180, seconds: 2, seed: "clip" });
    const p = await engine.probe(mp4, "clip.mp4");
    assert.is(p.formatName, "mov,mp4,m4a,3gp,3g2,mj2");
    assert.equal(firstVideo(p), { index: 0, type: "video", codec: "h264", width: 320, height: 180, fps: 25 });
    assert.equal(firstAudio(p), { index: 1, type: "audio", codec: "aac", sampleRate: 48000, channels: 2 });
    assert.ok(Math.abs(p.durationSeconds - 2) < 0.1, String(p.durationSeconds));
    // moov before mdat (+faststart), so players can start before the download ends.
    const text = new TextDecoder("latin1").decode(mp4.subarray(0, 4096));
    assert.ok(text.indexOf("moov") >= 0 && text.indexOf("moov") < (text.indexOf("mdat") + 1 || Infinity));
  });

  t("draws text from a file, so prompt characters are literal", async () => {
    const job = testVideoJob({ width: 256, height: 144, seconds: 1, text: "it's 50% [sandbox] a:b\\c %{pts}" });
    if (!job.textDrawn) return; // no font on this machine: text is skipped by design
    const out = await engine.run(job.args, { inputs: job.inputs, outputs: job.outputs });
    const p = await engine.probe(out["video.mp4"]!);
    assert.is(firstVideo(p)?.width, 256);
  });

  t("reports increasing progress fractions ending at 1", async () => {
    const seen: number[] = [];
    await engine.run(slowArgs(1.5), { outputs: ["slow.mp4"], onProgress: (f) => seen.push(f) });
    assert.ok(seen.length >= 3, `only ${seen.length} progress reports: ${seen}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `not increasing: ${seen}`);
    assert.ok(seen.every((f) => f >= 0 && f <= 1));
    assert.ok(
      seen.some((f) => f > 0.2 && f < 0.99),
      `no intermediate value: ${seen}`,
    );
    assert.is(seen.at(-1), 1);
  });

  t("progress uses the input duration when there is no -t", async () => {
    const seen: number[] = [];
    await engine.run(["-i", "in.mp4", "-c", "copy", "out.mp4"], {
      inputs: { "in.mp4": video1 },
      outputs: ["out.mp4"],
      onProgress: (f) => seen.push(f),
    });
    assert.is(seen.at(-1), 1);
  });

  t("abort kills the run at once, and the engine keeps working", async () => {
    const ctl = new AbortController();
    let furthest = 0;
    const run = engine.run(slowArgs(30), {
      outputs: ["slow.mp4"],
      signal: ctl.signal,
      onProgress: (f) => {
        furthest = Math.max(furthest, f);
        if (f > 0) ctl.abort();
      },
    });
    const e = await rejects(run);
    assert.is(e.code, "aborted");
    // Killed at once: the 30 s encode never reached its end (it would have, had the abort waited for it).
    assert.ok(furthest < 0.5, `the encode went on to ${furthest}`);
    assert.is(engine.pending, 0);
    // Already aborted: refused before any work.
    const pre = new AbortController();
    pre.abort();
    assert.is((await rejects(engine.run(slowArgs(5), { outputs: ["slow.mp4"], signal: pre.signal }))).code, "aborted");
    // The engine recovered (wasm: the killed worker was replaced).
    const mp4 = await generateTestVideo(engine, { width: 64, height: 64, seconds: 0.5 });
    assert.ok(mp4.byteLength > 1000);
  });

  t("a time limit stops the run with a timeout error", async () => {
    const e = await rejects(engine.run(slowArgs(30), { outputs: ["slow.mp4"], timeoutMs: 400 }));
    assert.is(e.code, "timeout");
  });

  t("bad input is a MediaError with a safe public message", async () => {
    const junk = new Uint8Array(4096).map((_, i) => (i * 7919) % 251);
    // Junk is refused on its first bytes, before ffmpeg starts (lib/media/inputs.ts).
    const sniffed = await rejects(
      engine.run(["-i", "in.mp4", "-c", "copy", "out.mov"], { inputs: { "in.mp4": junk }, outputs: ["out.mov"] }),
    );
    assert.is(sniffed.code, "invalid_input");
    assert.is(sniffed.status, 422);
    assert.is(sniffed.message, "The media could not be processed (damaged or not a valid format).");
    assert.match(sniffed.detail, /first bytes/);
    // An MP4 by its first box whose body is junk gets as far as ffmpeg, which refuses it.
    const e = await rejects(
      engine.run(["-i", "in.mp4", "-c", "copy", "out.mov"], { inputs: { "in.mp4": damagedMp4 }, outputs: ["out.mov"] }),
    );
    assert.is(e.code, "invalid_input");
    assert.is(e.status, 422);
    assert.ok(e.isInputError);
    assert.is(e.message, "The media could not be processed (damaged or not a valid format).");
    assert.not.match(e.message, /ffmpeg|moov|in\.mp4|wasm/i);
    assert.match(e.detail, /ffmpeg/);
    assert.ok(
      e.log.some((l) => /Invalid data found|moov atom not found/.test(l)),
      e.log.join("\n"),
    );

    const pe = await rejects(engine.probe(junk, "junk.mp4"));
    assert.is(pe.code, "invalid_input");
    assert.is((await rejects(engine.probe(damagedMp4, "junk.mp4"))).code, "invalid_input");
    const truncated = await rejects(engine.probe(video1.subarray(0, 20_000), "cut.mp4"));
    assert.is(truncated.status, 422);
  });

  t("our own mistakes are 'failed' (500), not the partner's", async () => {
    const e = await rejects(
      engine.run(["-f", "lavfi", "-i", "testsrc=size=64x64:duration=0.2", "-c:v", "no_such_codec", "o.mp4"], {
        outputs: ["o.mp4"],
      }),
    );
    assert.is(e.code, "failed");
    assert.is(e.status, 500);
    const missing = await rejects(
      engine.run(["-f", "lavfi", "-i", "testsrc=size=64x64:duration=0.2", "a.mp4"], { outputs: ["b.mp4"] }),
    );
    assert.is(missing.code, "failed");
    assert.match(missing.detail, /b\.mp4/);
    for (const name of ["../etc/passwd", "/tmp/x.mp4", "-i", "a b.mp4", "http://x/y.mp4"]) {
      await rejects(engine.run(["-i", "x.mp4", "o.mp4"], { inputs: { [name]: video1 }, outputs: ["o.mp4"] }));
    }
  });

  t("HLS playlists disguised as media are refused", async () => {
    const m3u8 = new TextEncoder().encode(
      "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:10.0,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n",
    );
    const e = await rejects(
      engine.run(["-i", "in.mp4", "out.mp4"], { inputs: { "in.mp4": m3u8 }, outputs: ["out.mp4"] }),
    );
    assert.is(e.code, "invalid_input");
    assert.is((await rejects(engine.probe(m3u8, "in.mp4"))).code, "invalid_input");
  });

  t("the `ffmpeg -i` parser agrees with ffprobe (fallback for cores without ffprobe)", async () => {
    for (const [name, bytes] of [
      ["v.mp4", video1],
      ["c.mov", cmov],
      ["a.mp3", mp3],
    ] as const) {
      const lines: string[] = [];
      await engine.run(["-i", name, "-t", "0.1", "-f", "null", "-"], {
        inputs: { [name]: bytes },
        outputs: [],
        onLog: (l) => lines.push(l),
      });
      const parsed = parseFfmpegInfo(lines, bytes.byteLength);
      const probed = await engine.probe(bytes, name);
      assert.is(parsed.formatName, probed.formatName);
      assert.ok(
        Math.abs(parsed.durationSeconds - probed.durationSeconds) <= 0.011,
        `${name}: ${parsed.durationSeconds} vs ${probed.durationSeconds}`,
      );
      // Cover art in the MP3 shows up in both; compare everything ffprobe reports for real streams.
      assert.equal(parsed.streams, probed.streams, name);
    }
  });

  t("metadata-free remux drops XMP/C2PA and keeps the streams", async () => {
    const out = (
      await engine.run(stripVideoMetadataArgs("in.mp4", "out.mp4"), {
        inputs: { "in.mp4": video1 },
        outputs: ["out.mp4"],
      })
    )["out.mp4"]!;
    const p = await engine.probe(out, "out.mp4");
    assert.equal(p.streams, (await engine.probe(video1, "in.mp4")).streams);
    const raw = new TextDecoder("latin1").decode(out);
    assert.not.ok(raw.includes("xmpmeta"), "XMP packet left");
    assert.not.ok(raw.includes("c2pa"), "C2PA box left");
    if (EXIFTOOL) {
      const before = exifTags(video1, "mp4");
      assert.ok(leakedMetadata(before).length > 0, "fixture has metadata");
      assert.equal(leakedMetadata(exifTags(out, "mp4")), []);
    }
  });

  t.run();
}

if (ENGINE_MODES.length === 2) {
  const t = suite("media engines agree");
  t("native and wasm probes are identical on every fixture and on each other's output", async () => {
    // Filled by the engine suites above, which ran first.
    assert.ok(probes.native && probes.wasm, "both engine suites ran");
    assert.equal(probes.wasm, probes.native);
    const native = createMediaEngine({ mode: "native" });
    const wasm = createMediaEngine({ mode: "wasm" });
    try {
      const a = await generateTestVideo(native, { width: 192, height: 108, seconds: 1, seed: "x" });
      const b = await generateTestVideo(wasm, { width: 192, height: 108, seconds: 1, seed: "x" });
      for (const bytes of [a, b]) assert.equal(await wasm.probe(bytes), await native.probe(bytes));
      const pa = await native.probe(a);
      const pb = await native.probe(b);
      assert.equal({ ...pa, sizeBytes: 0 }, { ...pb, sizeBytes: 0 });
    } finally {
      await native.close();
      await wasm.close();
    }
  });
  t.run();
}

{
  const t = suite("wasm engine queue");
  t("concurrent runs are serialized in order, and a failing one does not disturb the others", async () => {
    const engine = createMediaEngine({ mode: "wasm" });
    try {
      const events: string[] = [];
      const sizes = [
        [96, 64],
        [128, 72],
        [0, 0],
        [160, 90],
      ] as const;
      const runs = sizes.map(([w, h], i) => {
        const args = w
          ? ["-f", "lavfi", "-i", `testsrc=size=${w}x${h}:rate=10:duration=0.6`, ...H264, "o.mp4"]
          : ["-i", "bad.mp4", "o.mp4"];
        return engine
          .run(args, {
            inputs: w ? {} : { "bad.mp4": damagedMp4 },
            outputs: ["o.mp4"],
            onLog: () => {
              if (events.at(-1) !== `run ${i}`) events.push(`run ${i}`);
            },
          })
          .then(
            (out) => {
              events.push(`end ${i}`);
              return out["o.mp4"]!;
            },
            (e) => {
              events.push(`end ${i}`);
              throw e;
            },
          );
      });
      assert.is(engine.pending, 4);
      const results = await Promise.allSettled(runs);
      // Each run's log lines all come before the next run starts: one core at a time, FIFO.
      assert.equal(events, ["run 0", "end 0", "run 1", "end 1", "run 2", "end 2", "run 3", "end 3"]);
      assert.is(results[2]!.status, "rejected");
      assert.is(((results[2] as PromiseRejectedResult).reason as MediaError).code, "invalid_input");
      for (const i of [0, 1, 3]) {
        const r = results[i] as PromiseFulfilledResult<Uint8Array>;
        assert.is(r.status, "fulfilled");
        const v = firstVideo(await engine.probe(r.value));
        assert.equal([v?.width, v?.height], [sizes[i]![0], sizes[i]![1]]);
      }
      assert.is(engine.pending, 0);
    } finally {
      await engine.close();
    }
  });

  t("a queued run can be aborted before it starts", async () => {
    const engine = createMediaEngine({ mode: "wasm" });
    try {
      const first = engine.run(slowArgs(1), { outputs: ["slow.mp4"] });
      const ctl = new AbortController();
      const second = engine.run(slowArgs(1), { outputs: ["slow.mp4"], signal: ctl.signal });
      ctl.abort();
      assert.is((await rejects(second)).code, "aborted");
      assert.ok((await first)["slow.mp4"]!.byteLength > 0);
    } finally {
      await engine.close();
    }
  });

  t("with concurrency 2, two cores run side by side", async () => {
    // No clock in the assertion: run 0 lasts 120 s of real time (-re), so run 1 can only finish while
    // run 0 is still going if a second core took it. A single core would finish run 0 first.
    const engine = createMediaEngine({ mode: "wasm", concurrency: 2 });
    try {
      const ctl = new AbortController();
      let longEnded = false;
      const long = engine
        .run(slowArgs(120, "long.mp4"), { outputs: ["long.mp4"], signal: ctl.signal })
        .finally(() => (longEnded = true));
      const short = await engine.run(slowArgs(1, "short.mp4"), { outputs: ["short.mp4"] });
      assert.ok(short["short.mp4"]!.byteLength > 0);
      assert.not.ok(longEnded, "the long run ended before the short one: the runs were not side by side");
      ctl.abort();
      assert.is((await rejects(long)).code, "aborted");
    } finally {
      await engine.close();
    }
  });

  t("closing refuses new work", async () => {
    const engine = createMediaEngine({ mode: "wasm" });
    await engine.close();
    assert.is((await rejects(engine.run([], { outputs: [] }))).code, "engine_unavailable");
  });

  t("native mode without ffmpeg on PATH is a clear error; auto falls back to wasm", async () => {
    const saved = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      assert.throws(
        () => createMediaEngine({ mode: "native" }),
        (e: unknown) => isMediaError(e) && e.code === "engine_unavailable",
      );
      const auto = createMediaEngine({ mode: "auto" });
      assert.is(auto.kind, "wasm");
      await auto.close();
    } finally {
      process.env.PATH = saved;
    }
  });
  t.run();
}
