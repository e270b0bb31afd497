// WebP metadata removal by byte surgery: the RIFF chunks are walked, EXIF, XMP and C2PA chunks are cut out,
// the VP8X flags stop announcing EXIF and XMP, and the RIFF size is rewritten; the bitstream chunks (VP8,
// VP8L, ALPH, ANIM/ANMF) and ICCP are copied byte for byte, as is anything after the RIFF.
import { ascii, damaged, sortCategories, type Category, type Cleaned } from "./damage.ts";

export const isWebp = (b: Uint8Array) => b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WEBP";

const u32le = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
const FLAG_EXIF = 0x08;
const FLAG_XMP = 0x04;
const CUT: Record<string, Category> = { "EXIF": "exif", "XMP ": "xmp", "C2PA": "c2pa" };
const IMAGE = new Set(["VP8 ", "VP8L", "ANMF"]);

export function cleanWebp(b: Uint8Array): Cleaned {
  if (!isWebp(b)) damaged("no RIFF/WEBP header");
  const riffEnd = 8 + u32le(b, 4);
  if (riffEnd > b.length || riffEnd < 12) damaged("RIFF size does not match the file");
  const found = new Set<Category>();
  const kept: Array<[number, number]> = [];
  let vp8x = -1;
  let sawImage = false;
  let pos = 12;
  while (pos < riffEnd) {
    if (pos + 8 > riffEnd) damaged("truncated chunk header");
    const type = ascii(b, pos, pos + 4);
    const size = u32le(b, pos + 4);
    const dataEnd = pos + 8 + size;
    if (dataEnd > riffEnd) damaged(`chunk ${JSON.stringify(type)} runs past the RIFF`);
    // Chunks are padded to even sizes; a writer that leaves out the last pad byte is tolerated.
    const end = Math.min(dataEnd + (size & 1), riffEnd);
    if (pos === 12) {
      if (type === "VP8X") {
        if (size < 10) damaged("short VP8X");
        vp8x = pos;
      } else if (type !== "VP8 " && type !== "VP8L") damaged("first chunk is not an image header");
    }
    if (IMAGE.has(type)) sawImage = true;
    const category = CUT[type];
    if (category) found.add(category);
    else kept.push([pos, end]);
    pos = end;
  }
  if (!sawImage) damaged("no image data");

  const body = kept.reduce((n, [s, e]) => n + (e - s), 0);
  const out = new Uint8Array(12 + body + (b.length - riffEnd));
  out.set(b.subarray(0, 12), 0);
  new DataView(out.buffer).setUint32(4, 4 + body, true);
  let at = 12;
  for (const [s, e] of kept) {
    out.set(b.subarray(s, e), at);
    if (s === vp8x) out[at + 8] = out[at + 8]! & ~(FLAG_EXIF | FLAG_XMP);
    at += e - s;
  }
  out.set(b.subarray(riffEnd), at);
  return { bytes: out, removed: sortCategories(found) };
}
