// Which kinds of metadata an MP4/MOV file carries, read from its ISO-BMFF boxes without decoding anything:
// what `metadata_removed` is computed from (video generation) and what video metadata removal reports.
// Damaged files never throw and never loop: the walk stops at the first box that does not fit and reports
// what it found so far.
import { latin1 } from "../formats/bytes.ts";
import { type Mp4Box, mp4Boxes } from "../formats/isobmff.ts";
import { FORMAT_LIMITS } from "../formats/limits.ts";

export type Mp4MetadataCategory = "c2pa" | "xmp" | "other";

const C2PA_UUID = "d8fec3d61b0e483c92975828877ec481";
const XMP_UUID = "be7acfcb97a942e89c71999491e3afac";
/** Boxes that only hold other boxes, where metadata can sit further down. */
const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "udta", "edts"]);
/** Boxes that are metadata in themselves. */
const TAG_BOXES = new Set([
  "ilst",
  "keys",
  "chpl",
  "©nam",
  "©too",
  "©cmt",
  "©day",
  "©ART",
  "©alb",
  "©xyz",
  "cprt",
  "titl",
  "auth",
  "dscp",
  "perf",
  "gnre",
  "yrrc",
  "loci",
  "kywd",
  "albm",
  "rtng",
  "clsf",
  "AllF",
  "SelO",
  "WLOC",
  "LOOP",
  "ptv ",
  "hinf",
  "hnti",
  "name",
  "tags",
  "meta",
]);

const hex = (b: Uint8Array, start: number, len: number) =>
  Array.from(b.subarray(start, start + len), (x) => x.toString(16).padStart(2, "0")).join("");
const fourccAt = (b: Uint8Array, at: number) => latin1(b, at, at + 4);

/** The handler type of a trak (`vide`, `soun`, `tmcd`, `text`, ...), or "" when it cannot be read. */
function handlerOf(b: Uint8Array, trak: Mp4Box): string {
  for (const mdia of mp4Boxes(b, trak.body, trak.end)) {
    if (mdia.type !== "mdia") continue;
    for (const hdlr of mp4Boxes(b, mdia.body, mdia.end)) {
      // full box: version/flags (4), pre_defined (4), handler_type (4)
      if (hdlr.type === "hdlr" && hdlr.body + 12 <= hdlr.end) return fourccAt(b, hdlr.body + 8);
    }
  }
  return "";
}

/** The categories found, sorted: `c2pa` (a C2PA manifest), `xmp`, `other` (tags, chapters, non-AV tracks). */
export function mp4MetadataCategories(bytes: Uint8Array): Mp4MetadataCategory[] {
  const found = new Set<Mp4MetadataCategory>();
  let budget = 100_000; // boxes visited: a crafted file cannot make this slow
  const walk = (from: number, to: number, depth: number) => {
    for (const box of mp4Boxes(bytes, from, to)) {
      if (--budget < 0 || depth > FORMAT_LIMITS.isoBmffDepth) return;
      switch (box.type) {
        case "uuid": {
          const id = box.body + 16 <= box.end ? hex(bytes, box.body, 16) : "";
          if (id === C2PA_UUID) found.add("c2pa");
          else if (id === XMP_UUID) found.add("xmp");
          else found.add("other");
          break;
        }
        case "jumb":
        case "c2pa":
          found.add("c2pa");
          break;
        case "XMP_":
          found.add("xmp");
          break;
        case "trak": {
          const handler = handlerOf(bytes, box);
          if (handler !== "vide" && handler !== "soun") found.add("other");
          walk(box.body, box.end, depth + 1);
          break;
        }
        case "meta": {
          // A full box in MP4 (4 bytes of version/flags before the children), a plain one in QuickTime.
          const plain = box.body + 8 <= box.end && fourccAt(bytes, box.body + 4) === "hdlr";
          const childStart = plain ? box.body : box.body + 4;
          let tagged = false;
          for (const child of mp4Boxes(bytes, childStart, box.end)) {
            if (--budget < 0) break; // the same budget: a meta of millions of children is not walked to its end
            if (child.type === "hdlr" || child.type === "free" || child.type === "skip") continue;
            if (child.type === "ilst" && child.end - child.body === 0) continue; // an empty item list says nothing
            if (child.type === "xml " || child.type === "XMP_") found.add("xmp");
            else tagged = true;
          }
          if (tagged) found.add("other");
          break;
        }
        default:
          if (CONTAINERS.has(box.type)) walk(box.body, box.end, depth + 1);
          else if (TAG_BOXES.has(box.type) || box.type.startsWith("©")) found.add("other");
      }
    }
  };
  walk(0, bytes.length, 0);
  return [...found].sort();
}

export const MP4_UUIDS = { c2pa: C2PA_UUID, xmp: XMP_UUID } as const;
