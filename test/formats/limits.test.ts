// FORMAT_LIMITS (lib/formats/limits.ts): every walker stops at its cap with FormatLimitError (a
// DamagedMediaError, the areas' "not a valid file"), exactly one item past it, and `paced` lets the event
// loop turn during a long walk. The same caps in their callers: metadata removal (the 422 path), the captions
// MP4 check (notMp4, the 400), each refusing a flood of empty items.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  FORMAT_LIMITS,
  FormatLimitError,
  isoBmffFirstBox,
  jpegSegment,
  jpegSegments,
  mp4Boxes,
  paced,
  pngChunk,
  pngChunks,
  riffChunk,
  riffChunks,
  writePng,
  writeRiff,
} from "../../lib/formats/index.ts";
import { bytesSource, checkMp4 } from "../../plugins/captions/uploads/mp4-check.ts";
import { cleanJpeg } from "../../plugins/metadata/jpeg.ts";
import { cleanPng } from "../../plugins/metadata/png.ts";
import { hasMultiEditList } from "../../plugins/metadata/video.ts";
import { cleanWebp } from "../../plugins/metadata/webp.ts";
import { box, ftyp, mdatHeader, moov } from "../captions/uploads-mp4.ts";
import { bytes } from "./helpers.ts";

const t = suite("formats: caps");

const concat = (parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.byteLength);
  return out;
};
const repeat = (one: Uint8Array, count: number) => {
  const out = new Uint8Array(one.length * count);
  for (let i = 0; i < count; i++) out.set(one, i * one.length);
  return out;
};
const walk = (items: Iterable<unknown>) => {
  let n = 0;
  for (const _ of items) n++;
  return n;
};
const throwsLimit = (fn: () => unknown, what: string) => {
  try {
    fn();
  } catch (err) {
    assert.instance(err, FormatLimitError, `${what}: ${String(err)}`);
    return;
  }
  assert.unreachable(`${what}: accepted`);
};
const rejectsLimit = async (p: Promise<unknown>, what: string) => {
  try {
    await p;
  } catch (err) {
    assert.instance(err, FormatLimitError, `${what}: ${String(err)}`);
    return;
  }
  assert.unreachable(`${what}: accepted`);
};

// A 1x1 PNG with `texts` empty tEXt chunks: 3 + texts chunks in all.
const IHDR = pngChunk({ type: "IHDR", data: bytes([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]) });
const IDAT = pngChunk({ type: "IDAT", data: bytes([0x78, 0x9c, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01]) });
const pngWithTexts = (texts: number) =>
  concat([
    writePng([]),
    IHDR,
    repeat(pngChunk({ type: "tEXt", data: new Uint8Array(0) }), texts),
    IDAT,
    pngChunk({ type: "IEND", data: new Uint8Array(0) }),
  ]);

t("PNG: exactly pngChunks chunks are read, one more is FormatLimitError", async () => {
  const cap = FORMAT_LIMITS.pngChunks;
  assert.is(walk(pngChunks(pngWithTexts(cap - 3))), cap);
  throwsLimit(() => walk(pngChunks(pngWithTexts(cap - 2))), "cap + 1");
  // Metadata removal: the flood at the cap is cleaned to one range cut, past it is the 422's error.
  const out = await cleanPng(pngWithTexts(cap - 3));
  assert.equal(
    [...pngChunks(out.bytes)].map((c) => c.type),
    ["IHDR", "IDAT", "IEND"],
  );
  assert.equal(out.removed, ["other"]);
  await rejectsLimit(cleanPng(pngWithTexts(cap - 2)), "cleanPng cap + 1");
});

// SOI, `coms` empty COM segments, a frame, a scan, EOI: 3 + coms segments.
const SOF = jpegSegment(0xc0, new Uint8Array(15));
const SOS = jpegSegment(0xda, new Uint8Array(8));
const jpegWithComs = (coms: number) =>
  concat([bytes([0xff, 0xd8]), repeat(bytes([0xff, 0xfe, 0, 2]), coms), SOF, SOS, bytes([1, 2, 3, 0xff, 0xd9])]);

t("JPEG: exactly jpegSegments segments are read, one more is FormatLimitError", async () => {
  const cap = FORMAT_LIMITS.jpegSegments;
  assert.is(walk(jpegSegments(jpegWithComs(cap - 3))), cap);
  throwsLimit(() => walk(jpegSegments(jpegWithComs(cap - 2))), "cap + 1");
  const out = await cleanJpeg(jpegWithComs(cap - 3));
  assert.equal(out.bytes, jpegWithComs(0));
  await rejectsLimit(cleanJpeg(jpegWithComs(cap - 2)), "cleanJpeg cap + 1");
});

t("JPEG: scan data of nothing but stuffed and fill bytes is one segment, read to its end", () => {
  const scan = concat([
    bytes([0xff, 0xd8]),
    SOF,
    SOS,
    repeat(bytes([0xff, 0x00, 0xff, 0xff, 0xff, 0xd3]), 100_000),
    bytes([0xff, 0xd9]),
  ]);
  assert.equal(
    [...jpegSegments(scan)].map((s) => s.marker),
    [0xc0, 0xda, 0xd9],
  );
});

t("RIFF: riffChunks chunks are read, one more is FormatLimitError; maxChunks narrows it", async () => {
  const cap = FORMAT_LIMITS.riffChunks;
  const webp = (extra: number) =>
    writeRiff("WEBP", [
      riffChunk("VP8L", bytes([0x2f, 0, 0, 0, 0])),
      repeat(riffChunk("EXIF", new Uint8Array(0)), extra),
    ]);
  assert.is(walk(riffChunks(webp(cap - 1), 12, webp(cap - 1).length)), cap);
  throwsLimit(() => walk(riffChunks(webp(cap), 12, webp(cap).length)), "cap + 1");
  throwsLimit(() => walk(riffChunks(webp(3), 12, webp(3).length, { maxChunks: 3 })), "maxChunks");
  assert.equal((await cleanWebp(webp(cap - 1))).removed, ["exif"]);
  await rejectsLimit(cleanWebp(webp(cap)), "cleanWebp cap + 1");
});

t("ISO-BMFF: boxes side by side are capped (top level by default, a box's children when asked)", async () => {
  const top = FORMAT_LIMITS.isoBmffTopLevelBoxes;
  const flood = (n: number) => concat([ftyp(), repeat(box("free"), n - 1)]);
  assert.is(walk(mp4Boxes(flood(top))), top);
  throwsLimit(() => walk(mp4Boxes(flood(top + 1))), "top level + 1");
  throwsLimit(() => walk(mp4Boxes(flood(100), 0, undefined, 99)), "maxBoxes");
  // The first box is still there to sniff: the cap is on walks, not on reading one header.
  assert.is(isoBmffFirstBox(flood(top + 1))?.type, "ftyp");
  // Video metadata removal's edit-list check: a moov of more children than a box may hold is the 422's error.
  const children = FORMAT_LIMITS.isoBmffChildBoxes;
  const wide = concat([ftyp(), box("moov", repeat(box("free"), children + 1))]);
  await rejectsLimit(hasMultiEditList(wide), "moov children + 1");
  assert.not.ok(await hasMultiEditList(concat([ftyp(), box("moov", repeat(box("free"), children))])));
});

t("captions MP4 check: moov children, fragments and top-level boxes past their caps are notMp4", async () => {
  const notMp4 = { ok: false, reason: "notMp4" };
  const check = (b: Uint8Array) => checkMp4(bytesSource(b), { maxSeconds: 1800 });
  const real = moov({ seconds: 10 });
  const wideMoov = (children: number) => {
    const m = concat([real, repeat(box("free"), children)]);
    new DataView(m.buffer).setUint32(0, m.length);
    return concat([ftyp(), m, mdatHeader(8), new Uint8Array(8)]);
  };
  const inMoov = FORMAT_LIMITS.isoBmffChildBoxes - 2; // mvhd and the trak are children too
  assert.equal(await check(wideMoov(inMoov)), { ok: true, seconds: 10 });
  assert.equal(await check(wideMoov(inMoov + 1)), notMp4);
  const fragmented = (moofs: number) => concat([ftyp(), moov({ seconds: 10 }), repeat(box("moof"), moofs)]);
  assert.equal(await check(fragmented(FORMAT_LIMITS.isoBmffFragments)), { ok: true, seconds: 10 });
  assert.equal(await check(fragmented(FORMAT_LIMITS.isoBmffFragments + 1)), notMp4);
  const flat = (boxes: number) =>
    concat([ftyp(), moov({ seconds: 10 }), mdatHeader(8), new Uint8Array(8), repeat(box("free"), boxes - 3)]);
  assert.equal(await check(flat(FORMAT_LIMITS.isoBmffTopLevelBoxes)), { ok: true, seconds: 10 });
  assert.equal(await check(flat(FORMAT_LIMITS.isoBmffTopLevelBoxes + 1)), notMp4);
});

t("paced: every item in order, and the event loop turns during a long walk", async () => {
  let turned = false;
  setImmediate(() => (turned = true));
  function* slow() {
    for (let i = 0; i < 400; i++) {
      const until = performance.now() + 0.25;
      while (performance.now() < until);
      if (i === 399)
        yield turned; // by the last item, the event loop has turned at least once
      else yield i;
    }
  }
  const seen: unknown[] = [];
  for await (const x of paced(slow(), 5)) seen.push(x);
  assert.is(seen.length, 400);
  assert.equal(seen.slice(0, 3), [0, 1, 2]);
  assert.is(seen[399], true);
});

t.run();
