// WebP metadata removal by byte surgery: the RIFF chunks are walked by the shared reader, EXIF, XMP and C2PA
// chunks are cut out, the VP8X flags stop announcing EXIF and XMP, and the RIFF size is rewritten; the
// bitstream chunks (VP8, VP8L, ALPH, ANIM/ANMF) and ICCP are copied byte for byte, as is anything after the
// RIFF. The walk shares the event loop (`paced`) and stops at FORMAT_LIMITS.riffChunks (the 422); runs of
// kept chunks are copied as one range, not a view per chunk.
import {
  concatBytes,
  damagedMedia,
  isWebp,
  paced,
  riffChunks,
  riffHeader,
  WEBP_VP8X_FLAGS,
  writeRiff,
} from "mediagate/plugin";
import { type Category, type Cleaned, sortCategories } from "./damage.ts";

export { isWebp } from "mediagate/plugin";

const CUT: Record<string, Category> = { EXIF: "exif", "XMP ": "xmp", C2PA: "c2pa" };
const IMAGE = new Set(["VP8 ", "VP8L", "ANMF"]);

export async function cleanWebp(b: Uint8Array): Promise<Cleaned> {
  if (!isWebp(b)) damagedMedia("no RIFF/WEBP header");
  const riff = riffHeader(b);
  const found = new Set<Category>();
  const kept: Uint8Array[] = [];
  // The run of kept chunks not yet pushed: [runStart, runEnd).
  let runStart = 12;
  let runEnd = 12;
  const flush = () => {
    if (runEnd > runStart) kept.push(b.subarray(runStart, runEnd));
  };
  const keep = (start: number, end: number) => {
    if (start !== runEnd) {
      flush();
      runStart = start;
    }
    runEnd = end;
  };
  let sawImage = false;
  for await (const chunk of paced(riffChunks(b, 12, riff.end))) {
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
      runStart = runEnd = end;
    } else keep(start, end);
  }
  flush();
  if (!sawImage) damagedMedia("no image data");
  return { bytes: concatBytes([writeRiff("WEBP", kept), b.subarray(riff.end)]), removed: sortCategories(found) };
}
