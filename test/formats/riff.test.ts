// RIFF chunks (WebP): written and read back with odd sizes padded, the header's size checked against the
// file, a chunk past the RIFF refused (or, when asked, cut at the end), truncation at every length, the real
// WebP fixture.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isWebp, latin1, riffChunk, riffChunks, riffHeader, writeRiff } from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes, readsOrDamaged, throwsDamaged } from "./helpers.ts";

const t = suite("formats: riff");

const CHUNKS: Array<[string, number[]]> = [
  ["VP8X", [0x2c, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
  ["ICCP", [1, 2, 3]],
  ["VP8 ", [5, 6]],
  ["EXIF", [7]],
];
const WEBP = writeRiff(
  "WEBP",
  CHUNKS.map(([type, data]) => riffChunk(type, bytes(data))),
);
const walk = (b: Uint8Array) => {
  const { end } = riffHeader(b);
  return [...riffChunks(b, 12, end)];
};

t("written, then read back chunk for chunk, odd sizes padded", () => {
  assert.ok(isWebp(WEBP));
  assert.equal(riffHeader(WEBP), { form: "WEBP", end: WEBP.length });
  assert.is(new DataView(WEBP.buffer).getUint32(4, true), WEBP.length - 8);
  const read = walk(WEBP);
  assert.equal(
    read.map((c) => [c.type, [...WEBP.subarray(c.body, c.dataEnd)]]),
    CHUNKS,
  );
  assert.equal(
    read.map((c) => c.end - c.start),
    [18, 12, 10, 10],
    "8 + size, padded to even",
  );
  for (let i = 1; i < read.length; i++) assert.is(read[i]!.start, read[i - 1]!.end);
});

t("a last chunk without its pad byte is tolerated; bytes after the RIFF are not read", () => {
  const unpadded = WEBP.slice(0, -1);
  new DataView(unpadded.buffer).setUint32(4, unpadded.length - 8, true);
  assert.equal(
    walk(unpadded).map((c) => c.type),
    ["VP8X", "ICCP", "VP8 ", "EXIF"],
  );
  const trailing = bytes(WEBP, "junk");
  assert.equal(riffHeader(trailing).end, WEBP.length);
  assert.equal(
    walk(trailing).map((c) => c.type),
    ["VP8X", "ICCP", "VP8 ", "EXIF"],
  );
});

t("a size that lies is refused", () => {
  const long = WEBP.slice();
  new DataView(long.buffer).setUint32(4, WEBP.length, true);
  throwsDamaged(() => walk(long), "RIFF size past the file");
  const inside = WEBP.slice();
  new DataView(inside.buffer).setUint32(12 + 4, 0xfffffff0, true); // VP8X's size
  throwsDamaged(() => walk(inside), "chunk past the RIFF");
  throwsDamaged(() => walk(bytes("RIFX", [4, 0, 0, 0], "WEBP")), "not RIFF");
  throwsDamaged(() => walk(bytes("RIFF", [2, 0, 0, 0], "WEBP")), "RIFF smaller than its form type");
});

t("cutAtEnd: sizes never filled in are read as far as the bytes go", () => {
  // A WAV streamed with placeholder sizes: the RIFF's and the data chunk's claim more than there is.
  const fmt = riffChunk("fmt ", new Uint8Array(16));
  const wav = bytes("RIFF", [0x24, 0xf0, 0xff, 0x7f], "WAVE", fmt, "data", [0x00, 0xf0, 0xff, 0x7f], [1, 2, 3, 4, 5]);
  throwsDamaged(() => riffHeader(wav), "placeholder RIFF size");
  throwsDamaged(() => [...riffChunks(wav, 12, wav.length)], "placeholder data size");
  const read = [...riffChunks(wav, 12, wav.length, { cutAtEnd: true })];
  assert.equal(
    read.map((c) => [c.type, c.dataEnd - c.body, c.end]),
    [
      ["fmt ", 16, 36],
      ["data", 5, wav.length],
    ],
  );
  const tail = [...riffChunks(bytes(fmt, "dat"), 0, fmt.length + 3, { cutAtEnd: true })];
  assert.equal(
    tail.map((c) => c.type),
    ["fmt "],
    "a partial header ends the walk",
  );
});

t("truncated at every length: damaged, never anything else", () => {
  for (let n = 0; n < WEBP.length; n++) {
    const cut = WEBP.slice(0, n);
    throwsDamaged(() => walk(cut), `webp[0:${n}]`);
    // With the header's size made to fit, a cut inside a chunk is still refused (or read, at a boundary).
    if (n >= 12) {
      new DataView(cut.buffer).setUint32(4, n - 8, true);
      readsOrDamaged(() => walk(cut), `webp[0:${n}] resized`);
    }
  }
});

t("the writer checks its ids", () => {
  assert.throws(() => riffChunk("VP8", new Uint8Array(1)), RangeError);
});

t("the real WebP fixture", () => {
  const b = fixture("test_xmp.webp");
  const types = walk(b).map((c) => c.type);
  assert.is(types[0], "VP8X");
  assert.ok(types.includes("XMP ") && types.includes("EXIF"), types.join());
  assert.is(latin1(b, 8, 12), "WEBP");
});

t.run();
