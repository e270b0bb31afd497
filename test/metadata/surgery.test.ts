// Image metadata removal by byte surgery on the real-world fixtures: what is found, what exiftool still
// sees afterwards, that the decoded pixels are the same, that nothing grows, that the colour profile and the
// data after the image stay, that MPF offsets follow the cut, and that damaged files are refused.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { DamagedMediaError } from "../../plugins/metadata/damage.ts";
import { imageFormatOf } from "../../plugins/metadata/image.ts";
import { cleanJpeg } from "../../plugins/metadata/jpeg.ts";
import { cleanPng } from "../../plugins/metadata/png.ts";
import { cleanWebp } from "../../plugins/metadata/webp.ts";
import { contains, decodedPixels, EXIFTOOL, exifTags, IMAGE_FIXTURES, leakedMetadata, loadFixture } from "./helpers.ts";

const t = suite("metadata removal: image surgery");

// What each fixture carries (as the fixtures' own notes say, confirmed with exiftool).
const EXPECTED: Record<string, string[]> = {
  "C.jpg": ["c2pa"],
  "earth_apollo17.jpg": ["exif", "xmp", "iptc"],
  "sample1.png": ["exif", "other"],
  "libpng-test_with_url.png": ["xmp"],
  "test_xmp.webp": ["exif", "xmp"],
};

const clean = (bytes: Uint8Array) => imageFormatOf(bytes)!.clean(bytes);

t("every image fixture is known here", () => {
  assert.ok(IMAGE_FIXTURES.length >= 5);
  for (const f of IMAGE_FIXTURES) assert.ok(EXPECTED[f], `no expectation for ${f}`);
});

for (const name of IMAGE_FIXTURES) {
  t(`${name}: reports what it carried and keeps none of it`, async () => {
    const input = loadFixture(name);
    const out = await clean(input);
    assert.equal(out.removed, EXPECTED[name]);
    assert.ok(out.bytes.length <= input.length, "never larger");
    for (const marker of ["jumb", "c2pa", "http://ns.adobe.com/xap/1.0/", "Exif\0\0", "Photoshop 3.0", "caBX"]) {
      assert.not.ok(contains(out.bytes, marker), `${name}: "${marker}" left in the copy`);
    }
    // Idempotent: the copy has nothing left to find.
    const again = await clean(out.bytes);
    assert.equal(again.removed, []);
    assert.equal(Buffer.compare(again.bytes, out.bytes), 0);
  });

  t(`${name}: decoded pixels are identical`, async () => {
    const input = loadFixture(name);
    const before = await decodedPixels(input);
    const after = await decodedPixels((await clean(input)).bytes);
    assert.is(after.width, before.width);
    assert.is(after.height, before.height);
    assert.is(after.bands, before.bands);
    assert.ok(Buffer.compare(after.pixels, before.pixels) === 0, `${name}: pixels differ`);
  });

  if (EXIFTOOL) {
    t(`${name}: exiftool finds no EXIF, XMP, IPTC or JUMBF, and the ICC profile is still there`, async () => {
      const input = loadFixture(name);
      const ext = imageFormatOf(input)!.extension;
      const before = exifTags(input, ext);
      const after = exifTags((await clean(input)).bytes, ext);
      assert.equal(leakedMetadata(after), [], `${name}: ${leakedMetadata(after).join(", ")}`);
      assert.ok(leakedMetadata(before).length > 0, "the fixture had metadata to begin with");
      const icc = (tags: Record<string, unknown>) => tags["ICC_Profile:ProfileDescription"];
      assert.is(icc(after), icc(before));
      assert.not.ok(
        Object.keys(after).some((k) => k.startsWith("ExifTool:Warning") && /error|corrupt/i.test(String(after[k]))),
      );
    });
  }
}

t("a file without metadata comes back byte for byte, with nothing reported", async () => {
  for (const name of IMAGE_FIXTURES) {
    const once = (await clean(loadFixture(name))).bytes;
    const twice = await clean(once);
    assert.equal(twice.removed, []);
    assert.equal(Buffer.compare(twice.bytes, once), 0);
  }
});

// ---------------------------------------------------------------------------------------------------------
// Synthetic cases built from the fixtures: what the fixtures do not carry.

const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
function segment(marker: number, payload: Uint8Array | string): Uint8Array {
  const body = typeof payload === "string" ? Buffer.from(payload, "latin1") : payload;
  return Uint8Array.from([0xff, marker, ...u16(body.length + 2), ...body]);
}
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

/** An MPF APP2 segment (big-endian) whose second entry points `offset` bytes past its header. */
function mpfSegment(secondSize: number, offset: number): Uint8Array {
  const b = Buffer.alloc(4 + 8 + 2 + 12 * 2 + 4 + 32);
  b.write("MPF\0", 0, "latin1");
  const h = 4; // TIFF header
  b.write("MM", h, "latin1");
  b.writeUInt16BE(42, h + 2);
  b.writeUInt32BE(8, h + 4); // IFD at header + 8
  const ifd = h + 8;
  b.writeUInt16BE(2, ifd);
  b.writeUInt16BE(0xb000, ifd + 2); // MPFVersion
  b.writeUInt16BE(7, ifd + 4);
  b.writeUInt32BE(4, ifd + 6);
  b.write("0100", ifd + 10, "latin1");
  b.writeUInt16BE(0xb002, ifd + 14); // MPEntry
  b.writeUInt16BE(7, ifd + 16);
  b.writeUInt32BE(32, ifd + 18);
  const entries = 8 + 2 + 24 + 4;
  b.writeUInt32BE(entries, ifd + 22);
  b.writeUInt32BE(0, ifd + 26); // next IFD
  const e = h + entries;
  b.writeUInt32BE(0x20030000, e); // primary
  b.writeUInt32BE(0, e + 4);
  b.writeUInt32BE(0, e + 8);
  b.writeUInt32BE(0x00000000, e + 16);
  b.writeUInt32BE(secondSize, e + 20);
  b.writeUInt32BE(offset, e + 24);
  return segment(0xe2, new Uint8Array(b));
}

function mpfSecondOffset(jpeg: Uint8Array): { header: number; offset: number } {
  const at = Buffer.from(jpeg).indexOf(Buffer.from("MPF\0", "latin1"));
  const header = at + 4;
  const view = new DataView(jpeg.buffer, jpeg.byteOffset);
  return { header, offset: view.getUint32(header + 8 + 2 + 24 + 4 + 16 + 8) };
}

t("JPEG with MPF: images after EOI stay, and the MP entry offsets still point at them", async () => {
  const primary = loadFixture("earth_apollo17.jpg");
  const second = (await cleanJpeg(loadFixture("C.jpg"))).bytes; // any complete JPEG
  const soiToRest = primary.subarray(2);
  const exif = segment(0xe1, "Exif\0\0MM\0*\0\0\0\x08\0\0");
  const xmpAfter = segment(0xe1, "http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>");
  const comment = segment(0xfe, "made by hand");
  // Built twice: once to measure where the second image lands, once with that offset.
  const build = (offset: number) =>
    concat(
      Uint8Array.from([0xff, 0xd8]),
      exif,
      mpfSegment(second.length, offset),
      xmpAfter,
      comment,
      soiToRest,
      second,
    );
  const draft = build(0);
  const header = mpfSecondOffset(draft).header;
  const input = build(draft.length - second.length - header);
  assert.is(
    Buffer.compare(
      input.subarray(header + mpfSecondOffset(input).offset, header + mpfSecondOffset(input).offset + 2),
      Buffer.from([0xff, 0xd8]),
    ),
    0,
  );

  const out = await cleanJpeg(input);
  assert.equal(out.removed, ["exif", "xmp", "iptc", "other"]);
  const { header: h, offset } = mpfSecondOffset(out.bytes);
  assert.equal(
    Buffer.compare(out.bytes.subarray(h + offset, h + offset + second.length), second),
    0,
    "the MP entry points at the second image",
  );
  assert.equal(
    Buffer.compare(out.bytes.subarray(out.bytes.length - second.length), second),
    0,
    "data after EOI is kept byte for byte",
  );
});

t("JPEG: unknown APPn segments, ICC and Adobe segments stay; COM and extended XMP go", async () => {
  const base = loadFixture("C.jpg");
  const icc = segment(0xe2, "ICC_PROFILE\0\x01\x01fake-profile");
  const unknown = segment(0xe9, "SomeVendor\0data");
  const extended = segment(0xe1, `http://ns.adobe.com/xmp/extension/\0${"0".repeat(32)}\0\0\0\x10\0\0\0\0<x/>`);
  const input = concat(base.subarray(0, 2), icc, unknown, extended, segment(0xfe, "hi"), base.subarray(2));
  const out = await cleanJpeg(input);
  assert.equal(out.removed, ["c2pa", "xmp", "other"]);
  assert.ok(contains(out.bytes, "ICC_PROFILE\0") && contains(out.bytes, "SomeVendor\0"));
  assert.not.ok(contains(out.bytes, "xmp/extension"));
});

t("PNG: tIME, text chunks and caBX go, iCCP and data after IEND stay", async () => {
  const png = loadFixture("libpng-test_with_url.png");
  const crcOf = (type: string, data: Uint8Array) => {
    // Borrow the cleaner's CRC by building the chunk and letting a round trip verify it.
    let c = -1;
    for (const byte of concat(Buffer.from(type, "latin1"), data)) {
      c ^= byte;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    }
    return (c ^ -1) >>> 0;
  };
  const chunk = (type: string, data: Uint8Array | string) => {
    const d = typeof data === "string" ? new Uint8Array(Buffer.from(data, "latin1")) : data;
    const b = Buffer.alloc(12 + d.length);
    b.writeUInt32BE(d.length, 0);
    b.write(type, 4, "latin1");
    Buffer.from(d).copy(b, 8);
    b.writeUInt32BE(crcOf(type, d), 8 + d.length);
    return new Uint8Array(b);
  };
  const ihdrEnd = 8 + 25;
  const input = concat(
    png.subarray(0, ihdrEnd),
    chunk("iCCP", "fake\0\0xyz"),
    chunk("tIME", new Uint8Array([7, 234, 1, 1, 0, 0, 0])),
    chunk("caBX", "jumbc2pa-manifest"),
    chunk("zTXt", "Raw profile type iptc\0\0xx"),
    png.subarray(ihdrEnd),
    new Uint8Array(Buffer.from("trailing-gain-map", "latin1")),
  );
  const out = await cleanPng(input);
  assert.equal(out.removed, ["c2pa", "xmp", "iptc", "other"]);
  assert.ok(contains(out.bytes, "iCCP"));
  assert.not.ok(contains(out.bytes, "caBX") || contains(out.bytes, "tIME") || contains(out.bytes, "zTXt"));
  assert.ok(Buffer.from(out.bytes).subarray(-17).toString("latin1") === "trailing-gain-map");
});

t("WebP: VP8X flags stop announcing EXIF and XMP, RIFF size matches, ICC flag stays", async () => {
  const input = loadFixture("test_xmp.webp");
  assert.ok((input[20]! & 0x0c) !== 0, "the fixture announces metadata");
  const out = await cleanWebp(input);
  const view = new DataView(out.bytes.buffer, out.bytes.byteOffset);
  assert.is(view.getUint32(4, true), out.bytes.length - 8);
  assert.is(out.bytes[20]! & 0x0c, 0);
  assert.is(out.bytes[20]! & 0x20, input[20]! & 0x20);
});

// ---------------------------------------------------------------------------------------------------------
// Damage: each answers DamagedMediaError (the endpoint's 422), never anything else.

const throwsDamaged = async (fn: () => Promise<unknown>, what: string) => {
  try {
    await fn();
  } catch (err) {
    assert.instance(err, DamagedMediaError, `${what}: ${String(err)}`);
    return;
  }
  assert.unreachable(`${what}: accepted`);
};

t("a truncated JPEG is damaged (in the headers and in the scan)", async () => {
  const jpeg = loadFixture("earth_apollo17.jpg");
  await throwsDamaged(() => cleanJpeg(jpeg.subarray(0, 100)), "in a segment");
  await throwsDamaged(() => cleanJpeg(jpeg.subarray(0, jpeg.length - 2)), "no EOI");
  await throwsDamaged(() => cleanJpeg(jpeg.subarray(0, 2)), "SOI only");
});

t("a PNG with a bad chunk length is damaged", async () => {
  const png = new Uint8Array(loadFixture("sample1.png"));
  png[8 + 25 + 3] = png[8 + 25 + 3]! ^ 0x10; // the length of the chunk after IHDR
  await throwsDamaged(() => cleanPng(png), "bad length");
  await throwsDamaged(() => cleanPng(loadFixture("sample1.png").subarray(0, 5000)), "truncated");
});

t("a RIFF with a lying size is damaged", async () => {
  const webp = new Uint8Array(loadFixture("test_xmp.webp"));
  new DataView(webp.buffer).setUint32(4, webp.length + 100, true);
  await throwsDamaged(() => cleanWebp(webp), "size too large");
  const short = new Uint8Array(loadFixture("test_xmp.webp"));
  new DataView(short.buffer).setUint32(4, 30, true);
  await throwsDamaged(() => cleanWebp(short), "size inside a chunk");
});

t.run();
