// PNG chunks: written and read back, every check of the reader, truncation at every length, real fixtures.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  isPng,
  PNG_METADATA_CHUNKS,
  PNG_SIGNATURE,
  type PngChunk,
  pngChunk,
  pngChunks,
  writePng,
} from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes, readsOrDamaged, throwsDamaged } from "./helpers.ts";

const t = suite("formats: png");

const IHDR = { type: "IHDR", data: bytes([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]) };
const CHUNKS: PngChunk[] = [
  IHDR,
  { type: "iCCP", data: bytes("icc\0\0x") },
  { type: "tEXt", data: bytes("Author\0me") },
  { type: "IDAT", data: bytes([1, 2, 3]) },
  { type: "IEND", data: new Uint8Array(0) },
];
const types = (b: Uint8Array) => [...pngChunks(b)].map((c) => c.type);

t("written, then read back chunk for chunk", () => {
  const png = writePng(CHUNKS);
  assert.ok(isPng(png));
  assert.equal([...png.subarray(0, 8)], [...PNG_SIGNATURE]);
  const read = [...pngChunks(png)];
  assert.equal(
    read.map((c) => [c.type, [...c.data]]),
    CHUNKS.map((c) => [c.type, [...c.data]]),
  );
  // Positions tile the file: each chunk ends where the next starts, the last at the end.
  assert.is(read[0]!.start, 8);
  for (let i = 1; i < read.length; i++) assert.is(read[i]!.start, read[i - 1]!.end);
  assert.is(read.at(-1)!.end, png.length);
  assert.equal([...pngChunk(CHUNKS[2]!)], [...png.subarray(read[2]!.start, read[2]!.end)]);
});

t("bytes after IEND are not read", () => {
  const png = bytes(writePng(CHUNKS), [1, 2, 3]);
  assert.equal(types(png), ["IHDR", "iCCP", "tEXt", "IDAT", "IEND"]);
});

t("a damaged chunk is refused: CRC, length, type, order, end", () => {
  const png = writePng(CHUNKS);
  const flip = (at: number) => {
    const b = png.slice();
    b[at] = b[at]! ^ 1;
    return b;
  };
  throwsDamaged(() => types(flip(8 + 25 + 8)), "a data byte of iCCP (CRC)");
  throwsDamaged(() => types(flip(8 + 3)), "IHDR's length");
  const badType = png.slice();
  badType[8 + 25 + 4] = 0x31; // "1CCP"
  throwsDamaged(() => types(badType), "a type that is not four letters");
  throwsDamaged(() => types(writePng(CHUNKS.slice(1))), "IHDR not first");
  throwsDamaged(() => types(writePng(CHUNKS.slice(0, -1))), "no IEND");
  throwsDamaged(() => types(bytes("GIF89a")), "no signature");
});

t("truncated at every length: damaged, never anything else", () => {
  const png = writePng(CHUNKS);
  for (let n = 0; n < png.length; n++) throwsDamaged(() => types(png.subarray(0, n)), `png[0:${n}]`);
  assert.is(
    readsOrDamaged(() => types(png), "whole"),
    "ok",
  );
});

t("a length that lies, even a huge one, ends the walk cleanly", () => {
  for (const length of [0xffffffff, 0x7fffffff, 1 << 20, 2]) {
    const png = writePng(CHUNKS);
    new DataView(png.buffer).setUint32(8 + 25, length); // iCCP's length
    throwsDamaged(() => types(png), `length ${length}`);
  }
});

t("the writer checks its types", () => {
  assert.throws(() => pngChunk({ type: "IDATA", data: new Uint8Array(0) }), RangeError);
});

t("the real fixtures walk to IEND; the metadata set is what they carry", () => {
  for (const name of ["sample1.png", "libpng-test_with_url.png"]) {
    const all = types(fixture(name));
    assert.is(all[0], "IHDR", name);
    assert.is(all.at(-1), "IEND", name);
    assert.ok(all.includes("IDAT"), name);
    assert.ok(
      all.some((c) => PNG_METADATA_CHUNKS.has(c)),
      `${name} carries metadata`,
    );
  }
  for (const kept of ["IHDR", "PLTE", "IDAT", "IEND", "iCCP", "sRGB", "gAMA", "pHYs"])
    assert.not.ok(PNG_METADATA_CHUNKS.has(kept), kept);
});

t.run();
