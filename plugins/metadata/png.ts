// PNG metadata removal by byte surgery: the chunks are walked and checked by the shared reader (length, type,
// CRC), metadata chunks are cut out, and every other chunk is copied byte for byte (IHDR, PLTE, IDAT, iCCP,
// gAMA, ...), as is whatever follows IEND. Nothing is recompressed, so the pixels cannot change and the file
// only shrinks. The walk shares the event loop (`paced`) and stops at FORMAT_LIMITS.pngChunks (the 422).
//
// Removed (PNG_METADATA_CHUNKS): eXIf (EXIF), caBX (C2PA), tEXt/zTXt/iTXt (XMP when keyed
// "XML:com.adobe.xmp"; ImageMagick's "Raw profile type exif|iptc|xmp" by what they hold; any other text is
// `other`), tIME (`other`).
import {
  damagedMedia,
  latin1,
  PNG_METADATA_CHUNKS,
  type PngChunk,
  paced,
  pngChunks,
  withoutRanges,
} from "mediagate/plugin";
import { cutRange } from "./cuts.ts";
import { type Category, type Cleaned, sortCategories } from "./damage.ts";

export { isPng } from "mediagate/plugin";

function categoryOf({ type, data }: PngChunk): Category {
  switch (type) {
    case "eXIf":
      return "exif";
    case "caBX":
      return "c2pa";
    case "tEXt":
    case "zTXt":
    case "iTXt":
      return textCategory(data);
    default:
      return "other"; // tIME
  }
}

function textCategory(data: Uint8Array): Category {
  const nul = data.subarray(0, 80).indexOf(0);
  const keyword = nul < 0 ? "" : latin1(data, 0, nul);
  if (keyword === "XML:com.adobe.xmp") return "xmp";
  const raw = /^Raw profile type (.+)$/i.exec(keyword)?.[1]?.toLowerCase();
  if (raw === "exif" || raw === "app1") return "exif";
  if (raw === "iptc") return "iptc";
  if (raw === "xmp") return "xmp";
  return "other";
}

export async function cleanPng(b: Uint8Array): Promise<Cleaned> {
  const found = new Set<Category>();
  const cuts: Array<[number, number]> = [];
  let sawData = false;
  for await (const chunk of paced(pngChunks(b))) {
    if (chunk.type === "IDAT") sawData = true;
    if (PNG_METADATA_CHUNKS.has(chunk.type)) {
      found.add(categoryOf(chunk));
      cutRange(cuts, chunk.start, chunk.end);
    }
  }
  if (!sawData) damagedMedia("no IDAT");
  if (cuts.length === 0) return { bytes: b.slice(), removed: [] };
  return { bytes: withoutRanges(b, cuts), removed: sortCategories(found) };
}
