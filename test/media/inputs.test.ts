// How inputs reach ffmpeg and ffprobe (lib/media/inputs.ts): sniffed by their first bytes, opened with one
// named demuxer and both whitelists, `-i` only of the run's own files, concat lists only of other inputs.
// The pure rules first, then both engines: real media still opens, every manifest or text disguised as media
// is refused before the tool starts, and the wasm worker refuses an argument list that skipped the rules.
import { Worker } from "node:worker_threads";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { concatBytes, sniffMedia } from "../../lib/formats/index.ts";
import {
  createMediaEngine,
  generateTestVideo,
  isMediaError,
  type MediaEngine,
  type MediaError,
  probeImage,
} from "../../lib/media/index.ts";
import { concatListNames, probeInputOptions, secureFfmpegArgs } from "../../lib/media/inputs.ts";
import { disguisedInputs, SECRET_MARKER, secretFiles } from "./hostile.ts";
import { ENGINE_MODES, fixture } from "./util.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const mp4 = fixture("video1.mp4");
const mp3 = fixture("sample1.mp3");
const png = fixture("sample1.png");

function throwsMedia(fn: () => unknown, code: MediaError["code"], what = ""): MediaError {
  try {
    fn();
  } catch (e) {
    assert.ok(isMediaError(e), `${what}: expected a MediaError, got ${String(e)}`);
    assert.is((e as MediaError).code, code, `${what}: ${(e as MediaError).detail}`);
    return e as MediaError;
  }
  assert.unreachable(`${what}: expected a MediaError`);
  throw new Error("unreachable");
}

async function rejectsMedia(p: Promise<unknown>, what: string): Promise<MediaError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isMediaError(e), `${what}: expected a MediaError, got ${String(e)}`);
    return e as MediaError;
  }
  assert.unreachable(`${what}: expected a rejection`);
  throw new Error("unreachable");
}

{
  const t = suite("media inputs: the rules");

  t("sniffing: plain media containers by their first bytes, nothing else", () => {
    assert.is(sniffMedia(mp4), "isobmff");
    assert.is(sniffMedia(fixture("c.mov")), "isobmff");
    assert.is(sniffMedia(mp3), "mp3");
    assert.is(sniffMedia(png), "png");
    assert.is(sniffMedia(fixture("C.jpg")), "jpeg");
    assert.is(sniffMedia(fixture("test_xmp.webp")), "webp");
    assert.is(sniffMedia(enc("RIFF\x24\0\0\0WAVEfmt ")), "wav");
    assert.is(sniffMedia(enc("OggS\0\x02")), "ogg");
    assert.is(sniffMedia(enc("fLaC\0\0\0\x22")), "flac");
    assert.is(sniffMedia(Uint8Array.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f])), "matroska");
    assert.is(sniffMedia(Uint8Array.from([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc])), "aac");
    assert.is(sniffMedia(Uint8Array.from([0xff, 0xfb, 0x90, 0x64])), "mp3");
    // An ID3 tag decides nothing by itself: what follows it does, and the MP3 demuxer reads nothing else.
    const id3 = (body: Uint8Array) => concatBytes([enc("ID3\x04\0\0\0\0\0\x0a"), new Uint8Array(10), body]);
    assert.is(sniffMedia(id3(enc("fLaC"))), "flac");
    assert.is(sniffMedia(id3(Uint8Array.from([0xff, 0xf1, 0x50, 0x80, 0x02, 0x1f, 0xfc]))), "aac");
    // Only what the caller accepts.
    assert.is(sniffMedia(png, ["isobmff", "mp3"]), null);
    assert.is(sniffMedia(mp4, ["isobmff"]), "isobmff");
    for (const [name, bytes] of Object.entries(disguisedInputs("/nowhere"))) {
      if (name === "id3-dash") continue; // an MP3 by its bytes: opened as MP3, never as DASH (below)
      assert.is(sniffMedia(bytes), null, name);
    }
    assert.is(sniffMedia(new Uint8Array(0)), null);
    assert.is(sniffMedia(enc("WEBVTT\n\n00:00.000 --> 00:01.000\nhello")), null);
  });

  t("every -i of a file gets its sniffed demuxer and the whitelists, right before it", () => {
    const args = secureFfmpegArgs(
      [
        "-ss",
        "1",
        "-i",
        "a.mp4",
        "-loop",
        "1",
        "-i",
        "s.png",
        "-f",
        "lavfi",
        "-i",
        "sine=duration=1",
        "-i",
        "m.bin",
        "out.mp4",
      ],
      { "a.mp4": mp4, "s.png": png, "m.bin": mp3 },
    );
    assert.is(
      args.join(" "),
      "-ss 1 -f mov -protocol_whitelist file -format_whitelist mov -i a.mp4 " +
        "-loop 1 -f image2 -pattern_type none -protocol_whitelist file -format_whitelist image2 -i s.png " +
        "-f lavfi -i sine=duration=1 " +
        "-f mp3 -protocol_whitelist file -format_whitelist mp3 -i m.bin out.mp4",
    );
    // A still without -loop goes through its pipe demuxer, which decodes by content, not by name.
    assert.equal(secureFfmpegArgs(["-i", "x.bin", "o.jpg"], { "x.bin": png }).slice(0, 6), [
      "-f",
      "png_pipe",
      "-protocol_whitelist",
      "file",
      "-format_whitelist",
      "png_pipe",
    ]);
    // A caller may name a demuxer that fits the bytes, and a raw one for PCM.
    assert.equal(secureFfmpegArgs(["-f", "mp4", "-i", "a", "o.mkv"], { a: mp4 }), [
      "-f",
      "mp4",
      "-f",
      "mp4",
      "-protocol_whitelist",
      "file",
      "-format_whitelist",
      "mp4",
      "-i",
      "a",
      "o.mkv",
    ]);
    assert.equal(
      secureFfmpegArgs(["-f", "s16le", "-ar", "8000", "-i", "in.raw", "o.wav"], {
        "in.raw": enc("anything at all"),
      }).slice(4, 10),
      ["-f", "s16le", "-protocol_whitelist", "file", "-format_whitelist", "s16le"],
    );
    assert.equal(probeInputOptions("x", mp3), ["-f", "mp3", "-protocol_whitelist", "file", "-format_whitelist", "mp3"]);
  });

  t("what the rules refuse: the input's fault is invalid_input, ours is failed", () => {
    // [what, arguments, inputs, the kind of refusal]
    const refusals: [string, string[], Record<string, Uint8Array>, "invalid_input" | "failed"][] = [
      ["a playlist", ["-i", "a.mp4", "o.mp4"], { "a.mp4": enc("#EXTM3U\n") }, "invalid_input"],
      [
        "a demuxer that does not fit the bytes",
        ["-f", "mp3", "-i", "a.mp4", "o.mp4"],
        { "a.mp4": mp4 },
        "invalid_input",
      ],
      ["hls asked for", ["-f", "hls", "-i", "a.mp4", "o.mp4"], { "a.mp4": mp4 }, "invalid_input"],
      ...["/etc/passwd", "file:/etc/passwd", "https://example.com/a.mp4", "pipe:0", "other.mp4"].map(
        (target): [string, string[], Record<string, Uint8Array>, "failed"] => [
          `-i ${target}`,
          ["-i", target, "o.mp4"],
          { "a.mp4": mp4 },
          "failed",
        ],
      ),
      ...["-protocol_whitelist", "-format_whitelist", "-safe", "-pattern_type", "-allowed_extensions"].map(
        (option): [string, string[], Record<string, Uint8Array>, "failed"] => [
          option,
          [option, "x", "-i", "a.mp4", "o.mp4"],
          { "a.mp4": mp4 },
          "failed",
        ],
      ),
      ["lavfi movie source", ["-f", "lavfi", "-i", "amovie=/etc/passwd", "o.wav"], {}, "failed"],
      [
        "subtitles filter",
        ["-i", "a.mp4", "-vf", "scale=2:2,subtitles=/etc/passwd", "o.mp4"],
        { "a.mp4": mp4 },
        "failed",
      ],
      ["filter script file", ["-i", "a.mp4", "-filter_complex_script", "f.txt", "o.mp4"], { "a.mp4": mp4 }, "failed"],
      [
        "image2 decodes by the name: it must fit the bytes",
        ["-loop", "1", "-i", "s.jpg", "o.mp4"],
        { "s.jpg": png },
        "failed",
      ],
    ];
    for (const [what, args, inputs, kind] of refusals) throwsMedia(() => secureFfmpegArgs(args, inputs), kind, what);
    throwsMedia(
      () => probeInputOptions("x.mp3", enc("<?xml version='1.0'?><MPD/>")),
      "invalid_input",
      "probe of a manifest",
    );
  });

  t("concat lists: only `file` lines naming other inputs, each a sniffed video", () => {
    assert.equal(concatListNames(enc("ffconcat version 1.0\n# ours\nfile 'c1.mp4'\nfile c2.mp4\n\n")), [
      "c1.mp4",
      "c2.mp4",
    ]);
    const inputs = { "c1.mp4": mp4, "c2.mp4": mp4, "list.txt": enc("file 'c1.mp4'\nfile 'c2.mp4'\n") };
    assert.is(
      secureFfmpegArgs(["-f", "concat", "-i", "list.txt", "-c", "copy", "m.mp4"], inputs).slice(0, 10).join(" "),
      "-f concat -f concat -safe 1 -protocol_whitelist file -format_whitelist concat,mov",
    );
    for (const list of [
      "file '/etc/passwd'",
      "file 'file:/etc/passwd'",
      "file 'https://example.com/a.mp4'",
      "file '../c1.mp4'",
      "file 'c1.mp4'\ninpoint 0",
      "file 'c1.mp4'\noption protocol_whitelist file,http",
      "file 'missing.mp4'",
      "file 'list.txt'",
      "",
      "# nothing",
    ]) {
      assert.throws(
        () => secureFfmpegArgs(["-f", "concat", "-i", "list.txt", "m.mp4"], { ...inputs, "list.txt": enc(list) }),
        (e: unknown) => isMediaError(e),
        list,
      );
    }
    throwsMedia(
      () => secureFfmpegArgs(["-f", "concat", "-i", "list.txt", "m.mp4"], { ...inputs, "c2.mp4": enc("#EXTM3U\n") }),
      "invalid_input",
      "a listed clip that is a playlist",
    );
  });

  t.run();
}

for (const mode of ENGINE_MODES) {
  const t = suite(`media inputs on the ${mode} engine`);
  let engine: MediaEngine;
  let secret: Awaited<ReturnType<typeof secretFiles>>;
  t.before(async () => {
    engine = createMediaEngine({ mode });
    secret = await secretFiles(engine);
  });
  t.after(async () => {
    await engine.close();
    await secret.remove();
  });

  t("real media still opens: MP4, MOV, MP3, a still looped, a concat copy", async () => {
    assert.is((await engine.probe(mp4, "a.bin")).formatName, "mov,mp4,m4a,3gp,3g2,mj2");
    assert.is((await engine.probe(mp3, "x")).formatName, "mp3");
    const clip = await generateTestVideo(engine, { width: 64, height: 36, seconds: 1, font: false });
    const still = await engine.run(
      [
        "-loop",
        "1",
        "-framerate",
        "5",
        "-i",
        "s.png",
        "-t",
        "0.4",
        "-vf",
        "scale=64:36",
        "-pix_fmt",
        "yuv420p",
        "o.mp4",
      ],
      { inputs: { "s.png": png }, outputs: ["o.mp4"] },
    );
    assert.ok((await engine.probe(still["o.mp4"]!)).durationSeconds > 0);
    const list = enc("file 'c1.mp4'\nfile 'c2.mp4'\n");
    const merged = await engine.run(["-f", "concat", "-i", "list.txt", "-c", "copy", "m.mp4"], {
      inputs: { "c1.mp4": clip, "c2.mp4": clip, "list.txt": list },
      outputs: ["m.mp4"],
    });
    assert.ok((await engine.probe(merged["m.mp4"]!)).durationSeconds > 1.5);
  });

  t(
    "manifests and texts disguised as media are refused before the tool starts, and no output carries the local file",
    async () => {
      for (const [name, bytes] of Object.entries(disguisedInputs(secret.dir))) {
        const seen: string[] = [];
        const measure = engine.run(["-i", "up.mp3", "-vn", "-ac", "1", "-ar", "8000", "-f", "s16le", "measure.pcm"], {
          inputs: { "up.mp3": bytes },
          outputs: ["measure.pcm"],
          onLog: (l) => seen.push(l),
        });
        if (name === "id3-dash") {
          // An MP3 by its first bytes is opened as MP3, so the manifest behind the tag is never read as one.
          const e = await rejectsMedia(measure, name);
          assert.ok(e.isInputError, `${name}: ${e.describe()}`);
          assert.not.ok(
            seen.some((l) => /dash|secret/i.test(l)),
            `${name}: ${seen.join("\n")}`,
          );
          continue;
        }
        const e = await rejectsMedia(measure, name);
        assert.is(e.code, "invalid_input", `${name}: ${e.describe()}`);
        assert.is(e.status, 422);
        assert.match(e.detail, /first bytes/, name);
        assert.equal(seen, [], `${name}: the tool never started`);
        assert.is((await rejectsMedia(engine.probe(bytes, "up.mp3"), `${name} (probe)`)).code, "invalid_input");
        const still = engine.run(["-i", "frame.png", "-frames:v", "1", "o.png"], {
          inputs: { "frame.png": bytes },
          outputs: ["o.png"],
        });
        assert.is((await rejectsMedia(still, `${name} as an image`)).code, "invalid_input");
      }
      // The control: the same target opened as media by a name of ours is read (it is real audio), so the
      // refusals above are the rules at work, not a file the tool could not have read anyway.
      const pcm = (
        await engine.run(["-i", "t.m4a", "-vn", "-ac", "1", "-ar", "8000", "-f", "s16le", "measure.pcm"], {
          inputs: { "t.m4a": secret.m4a },
          outputs: ["measure.pcm"],
        })
      )["measure.pcm"]!;
      assert.ok(pcm.byteLength > 8000, "the secret is readable audio");
    },
  );

  t("SVG where an image is expected: neither ffmpeg nor libvips opens it", async () => {
    const svg = disguisedInputs(secret.dir).svg!;
    assert.is(
      (
        await rejectsMedia(
          engine.run(["-loop", "1", "-i", "start.png", "-t", "1", "o.mp4"], {
            inputs: { "start.png": svg },
            outputs: ["o.mp4"],
          }),
          "svg frame",
        )
      ).code,
      "invalid_input",
    );
    assert.is((await rejectsMedia(probeImage(svg), "svg in vips")).code, "invalid_input");
    assert.ok(SECRET_MARKER.length > 0);
  });

  t.run();
}

{
  const t = suite("media inputs: the wasm worker's own fence");
  t("an argument list that skipped the rules is refused inside the worker", async () => {
    const worker = new Worker(new URL("../../lib/media/ffmpeg-wasm.worker.mjs", import.meta.url));
    try {
      await new Promise<void>((resolve, reject) => {
        worker.on("message", (m) => m?.type === "ready" && resolve());
        worker.once("error", reject);
      });
      const ask = (job: Record<string, unknown>) =>
        new Promise<any>((resolve) => {
          const onMessage = (m: any) => {
            if (m?.id !== job.id || m.type === "log") return;
            worker.off("message", onMessage);
            resolve(m);
          };
          worker.on("message", onMessage);
          worker.postMessage(job);
        });
      const mp4In = { "a.mp4": mp4 };
      const bare = await ask({
        id: 1,
        program: "ffmpeg",
        args: ["-i", "a.mp4", "o.mkv"],
        inputs: mp4In,
        outputs: ["o.mkv"],
      });
      assert.is(bare.type, "error");
      assert.match(bare.message, /without a demuxer/);
      const elsewhere = await ask({
        id: 2,
        program: "ffmpeg",
        args: ["-f", "mov", "-protocol_whitelist", "file", "-format_whitelist", "mov", "-i", "/etc/passwd", "o.mkv"],
        inputs: mp4In,
        outputs: ["o.mkv"],
      });
      assert.is(elsewhere.type, "error");
      assert.match(elsewhere.message, /not a file of this job/);
      const probe = await ask({
        id: 3,
        program: "ffprobe",
        args: ["-v", "error", "-show_format", "a.mp4"],
        inputs: mp4In,
        outputs: [],
      });
      assert.is(probe.type, "error");
      // The same list as the engine builds it runs.
      const ok = await ask({
        id: 4,
        program: "ffmpeg",
        args: ["-nostdin", "-y", ...secureFfmpegArgs(["-i", "a.mp4", "-c", "copy", "o.mkv"], mp4In)],
        inputs: mp4In,
        outputs: ["o.mkv"],
      });
      assert.is(ok.type, "done", JSON.stringify(ok.message ?? ""));
      assert.is(ok.ret, 0);
      assert.ok(ok.outputs["o.mkv"].byteLength > 1000);
    } finally {
      await worker.terminate();
    }
  });
  t.run();
}
