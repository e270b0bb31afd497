// JPEG metadata removal by byte surgery: marker segments are walked, metadata segments are cut out, and
// every other byte (tables, frames, scans, the ICC profile, data after EOI such as MPF images and gain
// maps) is copied unchanged, so the decoded pixels cannot change and the file can only get smaller.
//
// Removed: APP1 EXIF, APP1 XMP (standard and extended), APP13 Photoshop/IPTC, APP11 JUMBF (C2PA), COM.
// Kept: every other segment, unknown APPn included (JPEG XT, Adobe colour transform, ICC, MPF, JFIF).
//
// MPF (CIPA DC-007): the APP2 "MPF\0" segment locates the images after EOI by offsets counted from its own
// header. Cutting segments between that header and EOI moves those images closer, so their offsets are
// lowered by the bytes cut after the header; cuts before the header move both alike and change nothing.
import { ascii, damaged, sortCategories, withoutRanges, type Category, type Cleaned } from "./damage.ts";

const EXIF = "Exif\0";
const XMP = "http://ns.adobe.com/xap/1.0/\0";
const XMP_EXTENDED = "http://ns.adobe.com/xmp/extension/\0";
const PHOTOSHOP = "Photoshop 3.0\0";
const MPF = "MPF\0";

export const isJpeg = (b: Uint8Array) => b.length >= 2 && b[0] === 0xff && b[1] === 0xd8;

const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

/** Whether a Photoshop image resource block holds an IPTC-NAA record (resource 0x0404). */
function photoshopHasIptc(b: Uint8Array, start: number, end: number): boolean {
  let at = start;
  while (at + 12 <= end && ascii(b, at, at + 4) === "8BIM") {
    const id = (b[at + 4]! << 8) | b[at + 5]!;
    if (id === 0x0404) return true;
    const nameLen = b[at + 6]!;
    // Pascal name, padded so that length byte + name is even.
    const sizeAt = at + 6 + ((nameLen + 2) & ~1);
    if (sizeAt + 4 > end) return false;
    const size = ((b[sizeAt]! << 24) | (b[sizeAt + 1]! << 16) | (b[sizeAt + 2]! << 8) | b[sizeAt + 3]!) >>> 0;
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
  if (end - p < 16 || ascii(b, p, p + 2) !== "JP" || ascii(b, p + 12, p + 16) !== "jumb") return null;
  const instance = (b[p + 2]! << 8) | b[p + 3]!;
  const lbox = ((b[p + 8]! << 24) | (b[p + 9]! << 16) | (b[p + 10]! << 8) | b[p + 11]!) >>> 0;
  const jumd = p + (lbox === 1 ? 24 : 16);
  if (jumd + 12 <= end && ascii(b, jumd + 4, jumd + 8) === "jumd") return { instance, c2pa: ascii(b, jumd + 8, jumd + 12) === "c2pa" };
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
  const order = ascii(b, header, header + 2);
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

export function cleanJpeg(b: Uint8Array): Cleaned {
  if (!isJpeg(b)) damaged("no SOI");
  const found = new Set<Category>();
  const cuts: Array<[number, number]> = [];
  const c2paInstances = new Set<number>();
  let mpf: Mpf | null = null;
  let sawFrame = false;
  let sawScan = false;
  let eoi = -1;
  let pos = 2;

  while (eoi < 0) {
    const start = pos;
    if (pos >= b.length || b[pos] !== 0xff) damaged(`expected a marker at ${pos}`);
    while (pos < b.length && b[pos] === 0xff) pos++; // fill bytes
    if (pos >= b.length) damaged("truncated at a marker");
    const marker = b[pos]!;
    pos++;
    if (marker === 0xd9) {
      eoi = pos;
      break;
    }
    if (marker === 0xd8 || marker === 0x00) damaged(`unexpected marker ${marker.toString(16)}`);
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // no length
    if (pos + 2 > b.length) damaged("truncated segment length");
    const length = (b[pos]! << 8) | b[pos + 1]!;
    const end = pos + length;
    if (length < 2 || end > b.length) damaged(`segment ${marker.toString(16)} runs past the end`);
    const p = pos + 2; // payload

    let category: Category | null = null;
    if (marker === 0xe1) {
      if (ascii(b, p, p + EXIF.length) === EXIF) category = "exif";
      else if (ascii(b, p, p + XMP.length) === XMP || ascii(b, p, p + XMP_EXTENDED.length) === XMP_EXTENDED) category = "xmp";
    } else if (marker === 0xed) {
      if (ascii(b, p, p + PHOTOSHOP.length) === PHOTOSHOP) category = photoshopHasIptc(b, p + PHOTOSHOP.length, end) ? "iptc" : "other";
    } else if (marker === 0xeb) {
      const box = jumbf(b, p, end);
      if (box) {
        if (box.c2pa) c2paInstances.add(box.instance);
        category = box.c2pa || (box.c2pa === null && c2paInstances.has(box.instance)) ? "c2pa" : "other";
      }
    } else if (marker === 0xfe) {
      category = "other";
    } else if (marker === 0xe2 && !mpf && ascii(b, p, p + MPF.length) === MPF) {
      mpf = { header: p + MPF.length, end };
    } else if (isSof(marker)) {
      sawFrame = true;
    }
    if (category) {
      found.add(category);
      cuts.push([start, end]);
    }
    pos = end;

    if (marker === 0xda) {
      if (!sawFrame) damaged("scan before frame header");
      sawScan = true;
      // Entropy-coded data: a 0xFF is data when followed by 0x00 (stuffing) or a restart marker.
      for (;;) {
        const ff = b.indexOf(0xff, pos);
        if (ff < 0 || ff + 1 >= b.length) damaged("scan data without an end");
        const next = b[ff + 1]!;
        if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) pos = ff + 2;
        else if (next === 0xff) pos = ff + 1;
        else {
          pos = ff;
          break;
        }
      }
    }
  }
  if (!sawScan) damaged("no scan");

  if (cuts.length === 0) return { bytes: b.slice(), removed: [] };
  const out = withoutRanges(b, cuts);

  if (mpf) {
    const header = mpf.header;
    let before = 0;
    let after = 0;
    for (const [s, e] of cuts) (s >= header ? (after += e - s) : (before += e - s));
    if (after > 0) shiftMpfOffsets(out, header - before, mpf.end - before, after);
  }
  return { bytes: out, removed: sortCategories(found) };
}
