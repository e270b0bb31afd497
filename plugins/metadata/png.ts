// PNG metadata removal by byte surgery: chunks are walked and checked (length, type, CRC), metadata chunks
// are cut out, and every other chunk is copied byte for byte (IHDR, PLTE, IDAT, iCCP, gAMA, ...), as is
// whatever follows IEND. Nothing is recompressed, so the pixels cannot change and the file only shrinks.
//
// Removed: eXIf (EXIF), caBX (C2PA), tEXt/zTXt/iTXt (XMP when keyed "XML:com.adobe.xmp"; ImageMagick's
// "Raw profile type exif|iptc|xmp" by what they hold; any other text is `other`), tIME (`other`).
// Every CRC is verified: a chunk whose length lies leaves the walk misaligned and fails its CRC, which is how
// a damaged file is told from a clean one without decoding it.
import { ascii, damaged, sortCategories, withoutRanges, type Category, type Cleaned } from "./damage.ts";

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export const isPng = (b: Uint8Array) => b.length >= 8 && SIGNATURE.every((v, i) => b[i] === v);

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

function crc32(b: Uint8Array, start: number, end: number): number {
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

const u32 = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const TYPE = /^[A-Za-z]{4}$/;

function textCategory(b: Uint8Array, data: number, end: number): Category {
  const nul = b.subarray(data, Math.min(end, data + 80)).indexOf(0);
  const keyword = nul < 0 ? "" : ascii(b, data, data + nul);
  if (keyword === "XML:com.adobe.xmp") return "xmp";
  const raw = /^Raw profile type (.+)$/i.exec(keyword)?.[1]?.toLowerCase();
  if (raw === "exif" || raw === "app1") return "exif";
  if (raw === "iptc") return "iptc";
  if (raw === "xmp") return "xmp";
  return "other";
}

export function cleanPng(b: Uint8Array): Cleaned {
  if (!isPng(b)) damaged("no PNG signature");
  const found = new Set<Category>();
  const cuts: Array<[number, number]> = [];
  let pos = 8;
  let first = true;
  let sawData = false;
  for (;;) {
    if (pos + 12 > b.length) damaged("truncated chunk header");
    const length = u32(b, pos);
    const type = ascii(b, pos + 4, pos + 8);
    if (length > 0x7fffffff || pos + 12 + length > b.length) damaged(`chunk ${JSON.stringify(type)} runs past the end`);
    if (!TYPE.test(type)) damaged("bad chunk type");
    const data = pos + 8;
    const end = data + length + 4;
    if (crc32(b, pos + 4, data + length) !== u32(b, data + length)) damaged(`bad CRC in ${type}`);
    if (first && type !== "IHDR") damaged("IHDR is not first");
    first = false;

    let category: Category | null = null;
    switch (type) {
      case "eXIf":
        category = "exif";
        break;
      case "caBX":
        category = "c2pa";
        break;
      case "tEXt":
      case "zTXt":
      case "iTXt":
        category = textCategory(b, data, data + length);
        break;
      case "tIME":
        category = "other";
        break;
      case "IDAT":
        sawData = true;
        break;
    }
    if (category) {
      found.add(category);
      cuts.push([pos, end]);
    }
    pos = end;
    if (type === "IEND") break;
  }
  if (!sawData) damaged("no IDAT");
  if (cuts.length === 0) return { bytes: b.slice(), removed: [] };
  return { bytes: withoutRanges(b, cuts), removed: sortCategories(found) };
}
