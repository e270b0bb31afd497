// The video area's media work on every engine this machine has (native ffmpeg and ffmpeg.wasm): the sandbox
// provider's real clips, the MP4 metadata reader, and merging by stream copy or by re-encoding. Files are
// probed and decoded with the engine itself; fixtures made elsewhere catch what home-made clips would not.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { UnsafeContentError } from "../../contracts/video.ts";
import {
  generateTestVideo,
  type MediaEngine,
  mp4MetadataCategories,
  stripVideoMetadataArgs,
} from "../../lib/media/index.ts";
import { pollToEnd } from "../../lib/upstream.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { concatClips } from "../../plugins/video/merge.ts";
import { rejection } from "../helpers/assert.ts";
import { frameColour } from "../helpers/frame-colour.ts";
import { ENGINE_MODES, fixture } from "../media/util.ts";
import { sandboxOnEngine, sandboxRequest } from "./sandbox-rig.ts";

function png(rgb: [number, number, number], width = 64, height = 48): Uint8Array {
  const px = new Uint8Array(width * height * 3);
  for (let i = 0; i < px.length; i += 3) px.set(rgb, i);
  return encodePng(width, height, px, 3);
}

const request = sandboxRequest;

/** Decodes every frame and sample; throws when the file does not play to its end. */
async function decodesCleanly(engine: MediaEngine, bytes: Uint8Array) {
  const lines: string[] = [];
  await engine.run(["-v", "error", "-i", "in.mp4", "-f", "null", "-"], {
    inputs: { "in.mp4": bytes },
    outputs: [],
    onLog: (l) => lines.push(l),
  });
  return lines.filter((l) => /error|invalid|corrupt/i.test(l));
}

// Fuzzing the box reader is engine-independent: it must never throw or hang on damaged files.
const fuzz = suite("mp4 metadata reader");
fuzz("finds C2PA, XMP and tags in real files, and nothing in a clean remux", () => {
  assert.equal(mp4MetadataCategories(fixture("video1.mp4")), ["c2pa", "other", "xmp"]);
  assert.equal(mp4MetadataCategories(fixture("c.mov")), ["other"]);
});
fuzz("random truncations and byte flips never throw", () => {
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (const name of ["video1.mp4", "c.mov"]) {
    const original = fixture(name);
    for (let i = 0; i < 300; i++) {
      const b = original.slice(0, Math.floor(rnd() * original.length));
      for (let f = 0; f < 8; f++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
      const found = mp4MetadataCategories(b);
      assert.ok(Array.isArray(found));
    }
  }
});
fuzz.run();

for (const mode of ENGINE_MODES) {
  const t = suite(`video media on ${mode}`);
  const on = sandboxOnEngine(t, mode);

  t("the sandbox renders the asked size and length, silent unless sound is asked, with provenance", async () => {
    const progress: number[] = [];
    const { bytes } = await pollToEnd(on.sandbox(), request({ onProgress: (f) => void progress.push(f) }));
    const probe = await on.engine.probe(bytes, "a.mp4");
    const v = probe.streams.find((s) => s.type === "video")!;
    assert.equal([v.codec, v.width, v.height], ["h264", 480, 270]);
    assert.ok(Math.abs(probe.durationSeconds - 2) < 0.1, String(probe.durationSeconds));
    assert.is(
      probe.streams.some((s) => s.type === "audio"),
      false,
    );
    assert.equal(mp4MetadataCategories(bytes), ["c2pa", "other", "xmp"]);
    assert.ok(
      progress.length >= 2 && progress.every((p, i) => i === 0 || p >= progress[i - 1]!),
      JSON.stringify(progress),
    );
    assert.equal(await decodesCleanly(on.engine, bytes), []);

    const stripped = await on.engine.run(stripVideoMetadataArgs("in.mp4", "out.mp4"), {
      inputs: { "in.mp4": bytes },
      outputs: ["out.mp4"],
    });
    assert.equal(mp4MetadataCategories(stripped["out.mp4"]!), []);

    // Different prompts make different clips; the same request makes the same one.
    const again = await pollToEnd(on.sandbox(), request({}));
    const other = await pollToEnd(on.sandbox(), request({ prompt: "A red kite over a beach" }));
    assert.is(Buffer.compare(Buffer.from(again.bytes), Buffer.from(bytes)), 0);
    assert.is.not(Buffer.compare(Buffer.from(other.bytes), Buffer.from(bytes)), 0);
  });

  t("frames: the start frame first, the end frame last, AAC sound", async () => {
    const { bytes } = await pollToEnd(
      on.sandbox(),
      request({
        width: 320,
        height: 320,
        seconds: 3,
        sound: true,
        startFrame: { bytes: png([250, 0, 0]), mimeType: "image/png" },
        endFrame: { bytes: png([0, 0, 250]), mimeType: "image/png" },
      }),
    );
    const probe = await on.engine.probe(bytes, "a.mp4");
    const a = probe.streams.find((s) => s.type === "audio");
    assert.equal([a?.codec, a?.sampleRate, a?.channels], ["aac", 48000, 2]);
    assert.ok(Math.abs(probe.durationSeconds - 3) < 0.1, String(probe.durationSeconds));
    const first = await frameColour(on.engine, bytes, 0);
    const last = await frameColour(on.engine, bytes, probe.durationSeconds - 0.08);
    assert.ok(first.r > 200 && first.b < 60, JSON.stringify(first));
    assert.ok(last.b > 200 && last.r < 60, JSON.stringify(last));
  });

  t("markers fail, and a frame URL with sandbox-fail fails", async () => {
    assert.match(
      (await rejection(pollToEnd(on.sandbox(), request({ prompt: "x [sandbox:fail]" })))).message,
      /failure requested/,
    );
    assert.instance(
      await rejection(pollToEnd(on.sandbox(), request({ prompt: "x [sandbox:unsafe]" }))),
      UnsafeContentError,
    );
    const frame = { bytes: png([1, 1, 1]), mimeType: "image/png", url: "https://example.com/sandbox-fail.png" };
    assert.match((await rejection(pollToEnd(on.sandbox(), request({ startFrame: frame })))).message, /frame URL/);
  });

  t("clips of one shape merge by stream copy; the duration is the sum", async () => {
    const a = await generateTestVideo(on.engine, { width: 320, height: 240, seconds: 2, text: "one" });
    const b = await generateTestVideo(on.engine, { width: 320, height: 240, seconds: 3, text: "two" });
    const merged = await concatClips(on.engine, [a, b, a]);
    assert.is(merged.reencoded, false);
    assert.ok(Math.abs(merged.durationSeconds - 7) < 0.5, String(merged.durationSeconds));
    const probe = await on.engine.probe(merged.bytes, "m.mp4");
    assert.equal(probe.streams.map((s) => s.codec).sort(), ["aac", "h264"]);
    assert.equal(await decodesCleanly(on.engine, merged.bytes), []);
    // Stream copy: the merged picture is the clips' own packets, in order, not a new encode.
    const packets = async (bytes: Uint8Array) => {
      const out = await on.engine.run(["-i", "in.mp4", "-map", "0:v", "-c", "copy", "-f", "framemd5", "out.txt"], {
        inputs: { "in.mp4": bytes },
        outputs: ["out.txt"],
      });
      return new TextDecoder()
        .decode(out["out.txt"]!)
        .split("\n")
        .filter((l) => /^\d/.test(l))
        .map((l) => l.split(",")[5]!.trim()); // the packet hash (side data, when any, follows it)
    };
    const [pa, pb] = [await packets(a), await packets(b)];
    const got = await packets(merged.bytes);
    const want = [...pa, ...pb, ...pa];
    assert.is(got.length, want.length);
    // Each clip's first key frame gains its parameter sets in front (the concat demuxer repeats them when
    // the decoder configuration is re-announced); every other packet is byte-identical.
    const starts = new Set([0, pa.length, pa.length + pb.length]);
    assert.equal(
      got.filter((_, i) => !starts.has(i)),
      want.filter((_, i) => !starts.has(i)),
    );
  });

  t("clips that differ are re-encoded to the first clip's size, silence filling the silent ones", async () => {
    const a = await generateTestVideo(on.engine, { width: 320, height: 240, seconds: 2 });
    const silent = (
      await on.engine.run(
        ["-i", "in.mp4", "-an", "-vf", "scale=240:320", "-c:v", "libx264", "-preset", "ultrafast", "out.mp4"],
        {
          inputs: { "in.mp4": await generateTestVideo(on.engine, { width: 320, height: 240, seconds: 2 }) },
          outputs: ["out.mp4"],
        },
      )
    )["out.mp4"]!;
    const merged = await concatClips(on.engine, [a, silent]);
    assert.is(merged.reencoded, true);
    assert.ok(Math.abs(merged.durationSeconds - 4) < 0.5, String(merged.durationSeconds));
    const probe = await on.engine.probe(merged.bytes, "m.mp4");
    const v = probe.streams.find((s) => s.type === "video")!;
    assert.equal([v.width, v.height], [320, 240]);
    assert.ok(probe.streams.some((s) => s.type === "audio"));
    assert.equal(await decodesCleanly(on.engine, merged.bytes), []);
  });

  t("real files made elsewhere merge; garbage does not", async () => {
    const one = fixture("video1.mp4");
    const two = fixture("c.mov");
    const [p1, p2] = [await on.engine.probe(one, "a.mp4"), await on.engine.probe(two, "b.mov")];
    const merged = await concatClips(on.engine, [one, two]);
    assert.ok(
      Math.abs(merged.durationSeconds - (p1.durationSeconds + p2.durationSeconds)) < 0.5,
      `${merged.durationSeconds} vs ${p1.durationSeconds}+${p2.durationSeconds}`,
    );
    assert.equal(mp4MetadataCategories(merged.bytes), []);
    await rejection(concatClips(on.engine, [one, new TextEncoder().encode("not a video")]));
  });

  t.run();
}
