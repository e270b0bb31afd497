// WebP metadata removal by byte surgery: the RIFF chunks are walked by the shared reader, EXIF, XMP and C2PA
// chunks are cut out, the VP8X flags stop announcing EXIF and XMP, and the RIFF size is rewritten; the
// bitstream chunks (VP8, VP8L, ALPH, ANIM/ANMF) and ICCP are copied byte for byte, as is anything after the
// RIFF.
import { concatBytes, damagedMedia, isWebp, riffChunks, riffHeader, WEBP_VP8X_FLAGS, writeRiff } from "mediagate/plugin";
import { sortCategories, type Category, type Cleaned } from "./damage.ts";

export { isWebp } from "mediagate/plugin";

const CUT: Record<string, Category> = { "EXIF": "exif", "XMP ": "xmp", "C2PA": "c2pa" };
const IMAGE = new Set(["VP8 ", "VP8L", "ANMF"]);

export function cleanWebp(b: Uint8Array): Cleaned {
  if (!isWebp(b)) damagedMedia("no RIFF/WEBP header");
  const riff = riffHeader(b);
  const found = new Set<Category>();
  const kept: Uint8Array[] = [];
  let sawImage = false;
  for (const chunk of riffChunks(b, 12, riff.end)) {
    const { type, start, end } = chunk;
    if (start === 12) {
      if (type === "VP8X") {
        if (chunk.dataEnd - chunk.body < 10) damagedMedia("short VP8X");
      } else if (type !== "VP8 " && type !== "VP8L") damagedMedia("first chunk is not an image header");
    }
    if (IMAGE.has(type)) sawImage = true;
    const category = CUT[type];
    if (category) found.add(category);
    else if (start === 12 && type === "VP8X") {
      const vp8x = b.slice(start, end); // a copy: its flags change
      vp8x[8] = vp8x[8]! & ~(WEBP_VP8X_FLAGS.exif | WEBP_VP8X_FLAGS.xmp);
      kept.push(vp8x);
    } else kept.push(b.subarray(start, end));
  }
  if (!sawImage) damagedMedia("no image data");
  return { bytes: concatBytes([writeRiff("WEBP", kept), b.subarray(riff.end)]), removed: sortCategories(found) };
}
