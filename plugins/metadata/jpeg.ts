// JPEG metadata removal by byte surgery: marker segments are walked by the shared reader (which refuses a
// damaged file), metadata segments are cut out, and every other byte (tables, frames, scans, the ICC profile,
// data after EOI such as MPF images and gain maps) is copied unchanged, so the decoded pixels cannot change
// and the file can only get smaller. The walk shares the event loop (`paced`) and stops at
// FORMAT_LIMITS.jpegSegments (the 422).
//
// Removed: APP1 EXIF, APP1 XMP (standard and extended), APP13 Photoshop/IPTC, APP11 JUMBF (C2PA), COM.
// Kept: every other segment, unknown APPn included (JPEG XT, Adobe colour transform, ICC, MPF, JFIF).
//
// MPF (CIPA DC-007): the APP2 "MPF\0" segment locates the images after EOI by offsets counted from its own
// header. Cutting segments between that header and EOI moves those images closer, so their offsets are
// lowered by the bytes cut after the header; cuts before the header move both alike and change nothing.
import { jpegSegments, latin1, paced, u16be, u32be, withoutRanges } from "mediagate/plugin";
import { cutRange } from "./cuts.ts";
import { type Category, type Cleaned, sortCategories } from "./damage.ts";

export { isJpeg } from "mediagate/plugin";

const EXIF = "Exif\0";
const XMP = "http://ns.adobe.com/xap/1.0/\0";
const XMP_EXTENDED = "http://ns.adobe.com/xmp/extension/\0";
const PHOTOSHOP = "Photoshop 3.0\0";
const MPF = "MPF\0";

/** Whether a Photoshop image resource block holds an IPTC-NAA record (resource 0x0404). */
function photoshopHasIptc(b: Uint8Array, start: number, end: number): boolean {
  let at = start;
  while (at + 12 <= end && latin1(b, at, at + 4) === "8BIM") {
    const id = u16be(b, at + 4);
    if (id === 0x0404) return true;
    const nameLen = b[at + 6]!;
    // Pascal name, padded so that length byte + name is even.
    const sizeAt = at + 6 + ((nameLen + 2) & ~1);
    if (sizeAt + 4 > end) return false;
    const size = u32be(b, sizeAt);
    at = sizeAt + 4 + size + (size & 1);
  }
  return false;
}

/**
 * APP11 segments that carry JUMBF: "JP", instance (2), sequence (4), then the superbox header repeated in
 * every segment of the box (LBox, TBox "jumb"). C2PA manifests are the superboxes whose description box
 * (jumd) is typed c2pa; later segments of the same instance carry no jumd and follow the first's verdict.
 */
function jumbf(b: Uint8Array, p: number, end: number): { instance: number; c2pa: boolean | null } | null {
  if (end - p < 16 || latin1(b, p, p + 2) !== "JP" || latin1(b, p + 12, p + 16) !== "jumb") return null;
  const instance = u16be(b, p + 2);
  const lbox = u32be(b, p + 8);
  const jumd = p + (lbox === 1 ? 24 : 16);
  if (jumd + 12 <= end && latin1(b, jumd + 4, jumd + 8) === "jumd")
    return { instance, c2pa: latin1(b, jumd + 8, jumd + 12) === "c2pa" };
  return { instance, c2pa: null };
}

interface Mpf {
  /** Position of the TIFF header that MPF offsets count from. */
  header: number;
  end: number;
}

/** Lowers every non-zero MP entry offset in `b` (already cut) by `by`; a malformed MPF is left as it is. */
function shiftMpfOffsets(b: Uint8Array, header: number, end: number, by: number): void {
  if (header + 8 > end) return;
  const order = latin1(b, header, header + 2);
  if (order !== "II" && order !== "MM") return;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const le = order === "II";
  const ifd = header + view.getUint32(header + 4, le);
  if (ifd + 2 > end || ifd < header) return;
  const count = view.getUint16(ifd, le);
  for (let i = 0; i < count; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > end) return;
    if (view.getUint16(entry, le) !== 0xb002) continue;
    const size = view.getUint32(entry + 4, le);
    const at = header + view.getUint32(entry + 8, le);
    if (size % 16 !== 0 || at < header || at + size > end) return;
    for (let e = at; e < at + size; e += 16) {
      const offset = view.getUint32(e + 8, le);
      if (offset !== 0 && offset >= by) view.setUint32(e + 8, offset - by, le);
    }
  }
}

export async function cleanJpeg(b: Uint8Array): Promise<Cleaned> {
  const found = new Set<Category>();
  const cuts: Array<[number, number]> = [];
  const c2paInstances = new Set<number>();
  let mpf: Mpf | null = null;

  for await (const { marker, start, body: p, bodyEnd: end } of paced(jpegSegments(b))) {
    let category: Category | null = null;
    if (marker === 0xe1) {
      if (latin1(b, p, p + EXIF.length) === EXIF) category = "exif";
      else if (latin1(b, p, p + XMP.length) === XMP || latin1(b, p, p + XMP_EXTENDED.length) === XMP_EXTENDED)
        category = "xmp";
    } else if (marker === 0xed) {
      if (latin1(b, p, p + PHOTOSHOP.length) === PHOTOSHOP)
        category = photoshopHasIptc(b, p + PHOTOSHOP.length, end) ? "iptc" : "other";
    } else if (marker === 0xeb) {
      const box = jumbf(b, p, end);
      if (box) {
        if (box.c2pa) c2paInstances.add(box.instance);
        category = box.c2pa || (box.c2pa === null && c2paInstances.has(box.instance)) ? "c2pa" : "other";
      }
    } else if (marker === 0xfe) {
      category = "other";
    } else if (marker === 0xe2 && !mpf && latin1(b, p, p + MPF.length) === MPF) {
      mpf = { header: p + MPF.length, end };
    }
    if (category) {
      found.add(category);
      cutRange(cuts, start, end);
    }
  }

  if (cuts.length === 0) return { bytes: b.slice(), removed: [] };
  const out = withoutRanges(b, cuts);

  if (mpf) {
    const header = mpf.header;
    let before = 0;
    let after = 0;
    for (const [s, e] of cuts) s >= header ? (after += e - s) : (before += e - s);
    if (after > 0) shiftMpfOffsets(out, header - before, mpf.end - before, after);
  }
  return { bytes: out, removed: sortCategories(found) };
}
