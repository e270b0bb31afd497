// Pure parts of the media engine: time/progress parsing, the `ffmpeg -i` and ffprobe parsers on canned output,
// failure classification, sizes and the queue. (The byte-level format readers are tested in test/formats/.)
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { Limiter } from "../../lib/media/common.ts";
import {
  classifyFailure,
  displaySize,
  durationLimitFromArgs,
  MediaError,
  ProgressTracker,
  parseFfmpegInfo,
  parseFfmpegTime,
  parseFfprobeJson,
  stripVideoMetadataArgs,
  supportsStatsPeriod,
  testVideoJob,
  videoFrameSize,
} from "../../lib/media/index.ts";

const t = suite("media parsing and helpers");
const isME = (e: unknown) => e instanceof MediaError;

t("ffmpeg times and -t limits", () => {
  assert.is(parseFfmpegTime("12"), 12);
  assert.is(parseFfmpegTime("2.5"), 2.5);
  assert.is(parseFfmpegTime("00:01:02.50"), 62.5);
  assert.is(parseFfmpegTime("1:02"), 62);
  assert.is(parseFfmpegTime("soon"), undefined);
  assert.is(durationLimitFromArgs(["-i", "a.mp4", "-t", "00:00:05", "-t", "3", "o.mp4"]), 3);
  assert.is(durationLimitFromArgs(["-i", "a.mp4", "o.mp4"]), undefined);
});

t("progress is monotonic, capped below 1 until done, and survives a throwing callback", () => {
  const seen: number[] = [];
  const p = new ProgressTracker(["-i", "x", "-t", "10", "o"], (f) => seen.push(f));
  p.line("  Duration: 00:00:20.00, start: 0.000000, bitrate: 1 kb/s");
  p.line("out_time_us=2500000");
  p.line("out_time_us=2500000");
  p.line("out_time_us=1000000"); // never backwards
  p.line("out_time_us=12000000"); // beyond the -t cap
  p.done();
  assert.equal(seen, [0.25, 0.999, 1]);
  const boom = new ProgressTracker(
    [],
    () => {
      throw new Error("x");
    },
    4,
  );
  boom.line("out_time_us=1000000");
  boom.done();
  // Unknown total: only the final 1.
  const none: number[] = [];
  const q = new ProgressTracker([], (f) => none.push(f));
  q.line("out_time_us=1000000");
  q.done();
  assert.equal(none, [1]);
});

const INFO = `Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'in.mov':
  Metadata:
    major_brand     : qt
  Duration: 00:00:05.22, start: 0.000000, bitrate: 1493 kb/s
  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, progressive), 1920x1080 [SAR 1:1 DAR 16:9], 1368 kb/s, 29.97 fps, 29.97 tbr, 30k tbn (default)
    Metadata:
      handler_name    : Core Media Video
    Side data:
      displaymatrix: rotation of -90.00 degrees
  Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, 5.1, fltp, 317 kb/s (default)
  Stream #0:2[0x3](eng): Subtitle: mov_text (tx3g / 0x67337874), 0 kb/s
  Stream #0:3: Video: mjpeg (Baseline), yuvj420p(pc, bt470bg/unknown/unknown), 600x600 [SAR 1:1 DAR 1:1], 90k tbr, 90k tbn (attached pic)
  Stream #0:4[0x5](und): Data: none (tmcd / 0x64636D74)
Stream mapping:
  Stream #0:0 -> #0:0 (h264 (native) -> wrapped_avframe (native))
Output #0, null, to 'pipe:':
  Stream #0:0: Video: wrapped_avframe, yuv420p, 1080x1920, q=2-31, 200 kb/s, 29.97 fps, 29.97 tbn`;

t("parses `ffmpeg -i` output", () => {
  const p = parseFfmpegInfo(INFO.split("\n"), 1234);
  assert.is(p.formatName, "mov,mp4,m4a,3gp,3g2,mj2");
  assert.is(p.durationSeconds, 5.22);
  assert.is(p.sizeBytes, 1234);
  assert.equal(p.streams, [
    { index: 0, type: "video", codec: "h264", width: 1920, height: 1080, fps: 29.97, rotation: 90 },
    { index: 1, type: "audio", codec: "aac", sampleRate: 44100, channels: 6 },
    { index: 2, type: "subtitle", codec: "mov_text" },
    { index: 3, type: "video", codec: "mjpeg", width: 600, height: 600, fps: 90000, attachedPicture: true },
    { index: 4, type: "data", codec: "unknown" },
  ]);
  assert.equal(displaySize(p), { width: 1080, height: 1920 });
  assert.throws(
    () => parseFfmpegInfo(["bad.mp4: Invalid data found when processing input"], 1),
    (e: unknown) => e instanceof MediaError && e.code === "invalid_input",
  );
});

t("parses ffprobe JSON the same way", () => {
  const json = JSON.stringify({
    streams: [
      {
        index: 0,
        codec_type: "video",
        codec_name: "h264",
        width: 1920,
        height: 1080,
        avg_frame_rate: "30000/1001",
        r_frame_rate: "30000/1001",
        side_data_list: [{ side_data_type: "Display Matrix", rotation: -90 }],
      },
      { index: 1, codec_type: "audio", codec_name: "aac", sample_rate: "44100", channels: 6 },
      { index: 2, codec_type: "attachment", codec_name: "ttf" },
      {
        index: 3,
        codec_type: "video",
        codec_name: "png",
        width: 10,
        height: 10,
        avg_frame_rate: "0/0",
        r_frame_rate: "90000/1",
        disposition: { attached_pic: 1 },
      },
    ],
    format: { format_name: "mov,mp4,m4a,3gp,3g2,mj2", duration: "5.216667" },
  });
  const p = parseFfprobeJson(json, 99);
  assert.equal(p, {
    durationSeconds: 5.216667,
    formatName: "mov,mp4,m4a,3gp,3g2,mj2",
    sizeBytes: 99,
    streams: [
      { index: 0, type: "video", codec: "h264", width: 1920, height: 1080, fps: 29.97, rotation: 90 },
      { index: 1, type: "audio", codec: "aac", sampleRate: 44100, channels: 6 },
      { index: 2, type: "data", codec: "ttf" },
      { index: 3, type: "video", codec: "png", width: 10, height: 10, fps: 90000, attachedPicture: true },
    ],
  });
  assert.throws(
    () => parseFfprobeJson("{\n\n}", 1),
    (e: unknown) => e instanceof MediaError && e.code === "invalid_input",
  );
});

t("failures are blamed on the input only when ffmpeg says so", () => {
  assert.is(
    classifyFailure(["[mov] moov atom not found", "in.mp4: Invalid data found when processing input"]),
    "invalid_input",
  );
  assert.is(classifyFailure(["Unknown encoder 'x'"]), "failed");
  assert.is(
    classifyFailure(["Unrecognized option 'foo'.", "Error splitting the argument list: Option not found"]),
    "failed",
  );
  assert.is(classifyFailure(["Decoder (codec av1) not found for input stream #0:0"]), "unsupported");
  assert.is(classifyFailure([]), "failed");
  const e = new MediaError("invalid_input", "secret /tmp/path", { log: ["line"] });
  assert.is(e.status, 422);
  assert.not.match(e.message, /secret|tmp/);
  assert.match(e.describe(), /secret/);
});

t("-stats_period is only passed to ffmpeg 4.4 and later", () => {
  assert.not.ok(supportsStatsPeriod("ffmpeg version 4.2.7-0ubuntu0.1 Copyright (c) 2000-2022 the FFmpeg developers"));
  assert.not.ok(supportsStatsPeriod("ffmpeg version 4.3.6-0+deb11u1"));
  assert.ok(supportsStatsPeriod("ffmpeg version n4.4 Copyright"));
  assert.ok(supportsStatsPeriod("ffmpeg version 5.1.9-0+deb12u1 Copyright (c) 2000-2026"));
  assert.ok(supportsStatsPeriod("ffmpeg version N-109421-g0123abc Copyright"));
});

t("video frame sizes follow docs/architecture.md 'Sizes' (short edge), even for H.264", () => {
  assert.equal(videoFrameSize("16:9", 720), { width: 1280, height: 720 });
  assert.equal(videoFrameSize("9:16", 1080), { width: 1080, height: 1920 });
  assert.equal(videoFrameSize("1:1", 480), { width: 480, height: 480 });
  assert.equal(videoFrameSize("4:3", 480), { width: 640, height: 480 });
  assert.equal(videoFrameSize("21:9", 1080), { width: 2520, height: 1080 });
  assert.equal(videoFrameSize("16:9", 2160), { width: 3840, height: 2160 });
  assert.throws(() => videoFrameSize("wide", 720), isME);
});

t("test video jobs validate their size and never put text into the filter graph", () => {
  assert.throws(() => testVideoJob({ width: 101, height: 100, seconds: 1 }), isME);
  assert.throws(() => testVideoJob({ width: 100, height: 100, seconds: 0 }), isME);
  const job = testVideoJob({
    width: 320,
    height: 240,
    seconds: 2,
    text: "a:b,c'd[e]",
    font: new Uint8Array([1, 2, 3]),
  });
  assert.ok(job.textDrawn);
  assert.not.ok(job.args.join(" ").includes("a:b"));
  assert.is(new TextDecoder().decode(job.inputs["text.txt"]), "a:b,c'd[e]");
  assert.not.ok(testVideoJob({ width: 320, height: 240, seconds: 2, text: "x", font: false }).textDrawn);
  // Deterministic from the seed.
  assert.equal(
    testVideoJob({ width: 64, height: 64, seconds: 1, seed: "s" }).args,
    testVideoJob({ width: 64, height: 64, seconds: 1, seed: "s" }).args,
  );
});

t("the limiter is FIFO, caps concurrency and hands slots over without a gap", async () => {
  const lim = new Limiter(1);
  const order: string[] = [];
  let running = 0;
  let maxRunning = 0;
  const job = (name: string) => async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    order.push(`start ${name}`);
    await new Promise((r) => setTimeout(r, 5));
    order.push(`end ${name}`);
    running--;
  };
  const a = lim.run(job("a"));
  const b = lim.run(job("b"));
  assert.is(lim.pending, 2);
  await a;
  const c = lim.run(job("c")); // arrives right after a finished: must still wait for b
  await Promise.all([b, c]);
  assert.equal(order, ["start a", "end a", "start b", "end b", "start c", "end c"]);
  assert.is(maxRunning, 1);
  assert.is(lim.pending, 0);
});

t("one metadata-free remux: MP4 unless MOV is asked, edit lists ignored and read errors fatal only when asked", () => {
  const mp4 = stripVideoMetadataArgs("in.mp4", "out.mp4");
  assert.equal(mp4.slice(0, 2), ["-i", "in.mp4"]);
  assert.equal(mp4.slice(-5), ["-f", "mp4", "-movflags", "+faststart", "out.mp4"]);
  for (const flag of ["-map_metadata", "-map_chapters", "0:V?", "0:a?"]) assert.ok(mp4.includes(flag), flag);
  const mov = stripVideoMetadataArgs("in.bin", "out.mov", { format: "mov", ignoreEditList: true, strict: true });
  assert.equal(mov.slice(0, 5), ["-xerror", "-ignore_editlist", "1", "-i", "in.bin"]);
  assert.equal(mov.slice(-7), ["-write_tmcd", "0", "-f", "mov", "-movflags", "+faststart", "out.mov"]);
});

t.run();
