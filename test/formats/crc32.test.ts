// The one CRC-32: published check values (Node 20's zlib has no crc32 to compare with), pieces, and the CRCs
// stored in a real PNG.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { crc32, pngChunks } from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes } from "./helpers.ts";

const t = suite("formats: crc32");

t("known vectors", () => {
  assert.is(crc32(new Uint8Array(0)), 0);
  assert.is(crc32(bytes("123456789")), 0xcbf43926); // the CRC-32/ISO-HDLC check value
  assert.is(crc32(bytes("The quick brown fox jumps over the lazy dog")), 0x414fa339);
  assert.is(crc32(bytes("IEND")), 0xae426082); // the CRC every PNG ends with
  assert.is(crc32(new Uint8Array(32).fill(0xff)), 0xff6cab0b);
});

t("in pieces, the same as at once", () => {
  const all = bytes("The quick brown fox jumps over the lazy dog");
  for (const cut of [0, 1, 9, 20, all.length])
    assert.is(crc32(all.subarray(cut), crc32(all.subarray(0, cut))), crc32(all), String(cut));
});

t("agrees with the CRCs stored in a real PNG", () => {
  const png = fixture("sample1.png");
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let n = 0;
  for (const c of pngChunks(png)) {
    assert.is(crc32(png.subarray(c.start + 4, c.end - 4)), view.getUint32(c.end - 4), c.type);
    n++;
  }
  assert.ok(n >= 3);
});

t.run();
