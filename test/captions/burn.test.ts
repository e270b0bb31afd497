// Burning captions (plugins/captions/burn.ts) on every media engine this machine has: one card from 1.0 to 2.0 s
// on a generated clip; a frame inside the card differs from the source's frame at the same time in the caption
// region and a frame outside does not (frames extracted with the same engine, compared pixel by pixel); the
// output is a new H.264/AAC MP4 of the source's size, rate and duration, without metadata; hostile card text is
// drawn as text (an injected \an8 would move it to the top); a streamed source (chunked, never whole) works;
// the engine refuses the libass filter in any other form. Clips are small: ffmpeg.wasm is slow.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  createMediaEngine,
  firstAudio,
  firstVideo,
  generateTestVideo,
  isMediaError,
  type MediaEngine,
  type StreamedInput,
} from "../../lib/media/index.ts";
import { buildAss } from "../../plugins/captions/render/ass.ts";
import { BURN_FILES, burnArgs, burnCaptions } from "../../plugins/captions/render/burn.ts";
import { fontByKey, readFont } from "../../plugins/captions/render/fonts.ts";
import type { CaptionStyle, Card, Frame } from "../../plugins/captions/types.ts";
import { ENGINE_MODES } from "../media/util.ts";
import { SPEC_DEFAULT_STYLE } from "./helpers/spec-style.ts";

const FRAME: Frame = { width: 320, height: 240, fps: 25 };
const SECONDS = 3;
const STYLE: CaptionStyle = { ...SPEC_DEFAULT_STYLE, font: "inter", size: "large", color: "#FFFF00" };
const CARD: Card = { start: 1, end: 2, text: "Hello there" };
// Rows of the frame where a bottom caption is drawn, and the top band an injected \an8 would move it to.
const BOTTOM = { y0: 150, y1: 235, x0: 20, x1: 300 };
const TOP = { y0: 0, y1: 80, x0: 20, x1: 300 };

/** A chunked stream over `bytes`, counting how far it has been read (it never hands out the whole file at once). */
function chunked(bytes: Uint8Array, size = 4096): StreamedInput & { reads: number; biggest: number } {
  const s = {
    size: bytes.byteLength,
    reads: 0,
    biggest: 0,
    async *chunks() {
      for (let at = 0; at < bytes.byteLength; at += size) {
        const piece = bytes.slice(at, at + size);
        s.reads++;
        s.biggest = Math.max(s.biggest, piece.byteLength);
        await new Promise((r) => setImmediate(r));
        yield piece;
      }
    },
  };
  return s;
}

/** One grey frame at `t` seconds (accurate output seek) as raw 8-bit luma. */
async function frameAt(engine: MediaEngine, video: Uint8Array, t: number): Promise<Uint8Array> {
  const out = await engine.run(
    ["-i", "v.mp4", "-ss", String(t), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "f.raw"],
    { inputs: { "v.mp4": video }, outputs: ["f.raw"] },
  );
  const raw = out["f.raw"]!;
  assert.is(raw.byteLength, FRAME.width * FRAME.height);
  return raw;
}

/** Pixels of a region whose luma differs by more than 48 between two frames. */
function changed(a: Uint8Array, b: Uint8Array, r: { y0: number; y1: number; x0: number; x1: number }): number {
  let n = 0;
  for (let y = r.y0; y < r.y1; y++)
    for (let x = r.x0; x < r.x1; x++) if (Math.abs(a[y * FRAME.width + x]! - b[y * FRAME.width + x]!) > 48) n++;
  return n;
}

const font = fontByKey("inter")!;
const fontBytes = await readFont(font);

for (const mode of ENGINE_MODES) {
  const t = suite(`captions: burn (${mode})`);
  let engine: MediaEngine;
  let source: Uint8Array;
  let burned: Uint8Array;

  t.before(async () => {
    engine = createMediaEngine({ mode });
    source = await generateTestVideo(engine, { ...FRAME, seconds: SECONDS, font: false, seed: "burn" });
    const progress: number[] = [];
    burned = await burnCaptions(engine, {
      source,
      ass: buildAss([CARD], STYLE, font, FRAME),
      font: { file: font.file, bytes: fontBytes },
      frame: FRAME,
      durationSeconds: SECONDS,
      onProgress: (f) => progress.push(f),
    });
    assert.ok(progress.length >= 1 && progress.at(-1) === 1, `progress ends at 1 (${progress.join(",")})`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! > progress[i - 1]!, "progress increases");
  });
  t.after(async () => {
    await engine?.close();
  });

  t("the caption shows inside its interval and nowhere else; the source is unchanged", async () => {
    const before = source.slice();
    for (const [at, inside] of [
      [0.5, false],
      [1.5, true],
      [2.5, false],
    ] as const) {
      const a = await frameAt(engine, source, at);
      const b = await frameAt(engine, burned, at);
      const bottom = changed(a, b, BOTTOM);
      if (inside) assert.ok(bottom > 300, `at ${at}s the caption region changed (${bottom} px)`);
      else assert.ok(bottom < 30, `at ${at}s the caption region is the source's (${bottom} px changed)`);
      assert.ok(changed(a, b, TOP) < 30, `at ${at}s the top of the frame is the source's`);
    }
    assert.equal(source, before);
  });

  t("the output is a new H.264/AAC MP4 of the source's size, rate and duration, without metadata", async () => {
    const p = await engine.probe(burned, "out.mp4");
    const src = await engine.probe(source, "src.mp4");
    assert.match(p.formatName, /mp4/);
    const v = firstVideo(p)!;
    const a = firstAudio(p)!;
    assert.is(v.codec, "h264");
    assert.is(a.codec, "aac");
    assert.is(v.width, FRAME.width);
    assert.is(v.height, FRAME.height);
    assert.is(v.fps, firstVideo(src)!.fps);
    assert.is(v.fps, FRAME.fps);
    assert.ok(
      Math.abs(p.durationSeconds - src.durationSeconds) < 0.1,
      `duration ${p.durationSeconds} vs ${src.durationSeconds}`,
    );
    assert.is(p.streams.length, 2);
    // +faststart: the index (moov) comes before the media data (mdat).
    const text = new TextDecoder("latin1").decode(burned.subarray(0, Math.min(burned.byteLength, 1 << 20)));
    assert.ok(text.indexOf("moov") < text.indexOf("mdat"), "moov before mdat");
    assert.not.match(text, /Lavf|x264 - core/, "no encoder tags");
  });

  t(
    "hostile card text is drawn as text: an injected \\an8 does not move it, injected alpha does not hide it",
    async () => {
      const hostile: Card = { start: 0.2, end: 2.8, text: "{\\an8\\alpha&HFF&}Hi\\N{\\pos(10,10)}\n}{" };
      const out = await burnCaptions(engine, {
        source,
        ass: buildAss([hostile], STYLE, font, FRAME),
        font: { file: font.file, bytes: fontBytes },
        frame: FRAME,
        durationSeconds: SECONDS,
      });
      const a = await frameAt(engine, source, 1.5);
      const b = await frameAt(engine, out, 1.5);
      assert.ok(changed(a, b, BOTTOM) > 300, "drawn at the bottom, visible");
      assert.ok(changed(a, b, TOP) < 30, "nothing at the top");
    },
  );

  t("a streamed source is read in chunks and burned like bytes", async () => {
    const stream = chunked(source);
    const out = await burnCaptions(engine, {
      source: stream,
      ass: buildAss([CARD], STYLE, font, FRAME),
      font: { file: font.file, bytes: fontBytes },
      frame: FRAME,
      durationSeconds: SECONDS,
    });
    assert.ok(stream.reads >= Math.ceil(source.byteLength / 4096), "every chunk read");
    assert.is(stream.biggest, 4096);
    const p = await engine.probe(out, "out.mp4");
    assert.is(firstVideo(p)!.codec, "h264");
    const a = await frameAt(engine, source, 1.5);
    const b = await frameAt(engine, out, 1.5);
    assert.ok(changed(a, b, BOTTOM) > 300, "caption drawn");
  });

  if (mode === "native") {
    t("native: a 256 MB streamed input reaches the temp dir without being held in memory", async () => {
      const MB = 1024 * 1024;
      const size = 256 * MB;
      let made = 0;
      const big: StreamedInput = {
        size,
        async *chunks() {
          for (let at = 0; at < size; at += MB) {
            made++;
            yield new Uint8Array(MB).fill(at / MB);
          }
        },
      };
      global.gc?.();
      const base = process.memoryUsage().rss;
      let peak = base;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      try {
        // The blob is an input of the run that ffmpeg never opens: what is measured is the engine writing it.
        await engine.run(["-f", "lavfi", "-i", "color=black:s=16x16:d=0.1", "-frames:v", "1", "o.png"], {
          inputs: { "blob.bin": big },
          outputs: ["o.png"],
        });
      } finally {
        clearInterval(timer);
      }
      assert.ok(made >= 256, "the whole stream was read");
      assert.ok(peak - base < 96 * MB, `RSS grew by ${((peak - base) / MB).toFixed(0)} MB`);
    });
  }

  t("a streamed source is probed like bytes", async () => {
    const stream = chunked(source);
    assert.equal(await engine.probe(stream, "s.mp4"), await engine.probe(source, "s.mp4"));
    assert.ok(stream.reads > 0);
    try {
      await engine.probe(chunked(new TextEncoder().encode("#EXTM3U\nfile:///etc/passwd\n"), 8), "x.mp4");
      assert.unreachable("should fail");
    } catch (e) {
      assert.is((e as { code: string }).code, "invalid_input");
    }
  });

  t("a streamed source that gives fewer or more bytes than it declared fails the run", async () => {
    for (const size of [source.byteLength + 10, source.byteLength - 10]) {
      const inner = chunked(source);
      const lying: StreamedInput = { size, chunks: () => inner.chunks() };
      try {
        await burnCaptions(engine, {
          source: lying,
          ass: buildAss([CARD], STYLE, font, FRAME),
          font: { file: font.file, bytes: fontBytes },
          frame: FRAME,
          durationSeconds: SECONDS,
        });
        assert.unreachable("should fail");
      } catch (e) {
        assert.ok(isMediaError(e), String(e));
        assert.match((e as { detail: string }).detail, /declared/);
      }
    }
  });

  t(
    "a streamed input is sniffed like bytes: a manifest disguised as a video is refused before ffmpeg starts",
    async () => {
      const manifest = new TextEncoder().encode("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n");
      try {
        await engine.run(["-i", "in.mp4", "-c", "copy", "o.mp4"], {
          inputs: { "in.mp4": chunked(manifest, 8) },
          outputs: ["o.mp4"],
        });
        assert.unreachable("should fail");
      } catch (e) {
        assert.ok(isMediaError(e), String(e));
        assert.is((e as { code: string }).code, "invalid_input");
      }
    },
  );

  t("a streamed concat list is refused; aborting while a stream is read stops reading it", async () => {
    const list = new TextEncoder().encode("ffconcat version 1.0\nfile 'v.mp4'\n");
    try {
      await engine.run(["-f", "concat", "-i", "l.txt", "-c", "copy", "o.mp4"], {
        inputs: { "l.txt": chunked(list, 8), "v.mp4": source },
        outputs: ["o.mp4"],
      });
      assert.unreachable("should fail");
    } catch (e) {
      assert.ok(isMediaError(e), String(e));
      assert.match((e as { detail: string }).detail, /concat list/);
    }
    const ctl = new AbortController();
    const total = Math.ceil(source.byteLength / 1024);
    const abortAt = Math.min(total, 256) + 20; // the engine reads the first 256 KiB to sniff, then the file
    assert.ok(total > 40);
    let pulled = 0;
    const slow: StreamedInput = {
      size: source.byteLength,
      async *chunks() {
        for (let at = 0; at < source.byteLength; at += 1024) {
          pulled++;
          if (pulled === abortAt) ctl.abort();
          await new Promise((r) => setTimeout(r, 1));
          yield source.slice(at, at + 1024);
        }
      },
    };
    try {
      await engine.run(["-i", "v.mp4", "-c", "copy", "o.mp4"], {
        inputs: { "v.mp4": slow },
        outputs: ["o.mp4"],
        signal: ctl.signal,
      });
      assert.unreachable("should be aborted");
    } catch (e) {
      assert.ok(isMediaError(e), String(e));
      assert.is((e as { code: string }).code, "aborted");
    }
    const at = pulled;
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(pulled - at <= 1 && pulled < abortAt + 5, `reading stopped (${pulled} pulls, ${total} chunks)`);
  });

  t("libass draws with the font file of the run, not a system substitute", async () => {
    const picked: string[] = [];
    for (const key of ["inter", "lobster", "special-elite"]) {
      const f = fontByKey(key)!;
      const lines: string[] = [];
      await engine.run(burnArgs({}), {
        inputs: {
          [BURN_FILES.source]: source,
          [BURN_FILES.ass]: new TextEncoder().encode(buildAss([CARD], { ...STYLE, font: key }, f, FRAME)),
        },
        fonts: { [f.file]: await readFont(f) },
        outputs: [BURN_FILES.output],
        timeoutMs: 120_000,
        onLog: (l) => void (/fontselect:/.test(l) && lines.push(l)),
      });
      assert.ok(lines.length >= 1, `${key}: libass logged its font choice`);
      for (const l of lines) {
        const chosen = /->\s*([^,]+),/.exec(l)?.[1] ?? "";
        assert.ok(
          chosen
            .replace(/[^a-z]/gi, "")
            .toLowerCase()
            .startsWith(f.css_family.replace(/[^a-z]/gi, "").toLowerCase()),
          `${key}: ${l}`,
        );
        picked.push(chosen);
      }
    }
    assert.is(new Set(picked).size, 3);
  });

  t("the engine allows the libass filter only on an ASS script of the run, with the run's fonts", async () => {
    const ass = new TextEncoder().encode(buildAss([CARD], STYLE, font, FRAME));
    const bad: Array<[string, Record<string, Uint8Array>]> = [
      ["subtitles=filename=/etc/passwd:fontsdir=fonts", {}],
      ["subtitles=filename=c.ass:fontsdir=/usr/share/fonts", { "c.ass": ass }],
      ["subtitles=filename=c.ass:fontsdir=fonts:force_style=Fontname=x", { "c.ass": ass }],
      ["subtitles=filename=c.ass:fontsdir=fonts", { "c.ass": new TextEncoder().encode("#EXTM3U\n") }],
      ["subtitles=filename=missing.ass:fontsdir=fonts", {}],
      ["ass=c.ass", { "c.ass": ass }],
      ["subtitles=c.ass", { "c.ass": ass }],
    ];
    for (const [vf, extra] of bad) {
      try {
        await engine.run(["-i", "v.mp4", "-vf", vf, "-frames:v", "1", "o.mp4"], {
          inputs: { "v.mp4": source, ...extra },
          outputs: ["o.mp4"],
        });
        assert.unreachable(`should refuse ${vf}`);
      } catch (e) {
        assert.ok(isMediaError(e), String(e));
        assert.is((e as { code: string }).code, "failed", vf);
      }
    }
  });

  t.run();
}

const u = suite("captions: burn arguments");
u("AAC audio is copied, anything else re-encoded; x264 yuv420p, faststart, no metadata", () => {
  const copy = burnArgs({ audioCodec: "aac" });
  const enc = burnArgs({ audioCodec: "opus" });
  assert.ok(copy.join(" ").includes("-c:a copy"));
  assert.ok(enc.join(" ").includes("-c:a aac"));
  for (const args of [copy, enc]) {
    const s = args.join(" ");
    for (const part of [
      "-c:v libx264",
      "-pix_fmt yuv420p",
      "-movflags +faststart",
      "-map_metadata -1",
      "-fps_mode passthrough",
      `fontsdir=fonts`,
    ])
      assert.ok(s.includes(part), part);
    assert.is(args.at(-1), BURN_FILES.output);
  }
});

u.run();
