// JPEG at the marker-segment level (ITU T.81 annex B). The reader walks from SOI to EOI: fill bytes, segments
// with a length, standalone markers (RSTn, TEM), and after each SOS the entropy-coded data up to the next
// marker that is not a stuffed 0xFF00 or a restart. Whatever follows EOI (MPF images, gain maps, trailers) is
// left to the caller.
import { u16be } from "./bytes.ts";
import { countAgainst, damagedMedia } from "./errors.ts";
import { FORMAT_LIMITS } from "./limits.ts";

export const isJpeg = (b: Uint8Array): boolean => b.length >= 2 && b[0] === 0xff && b[1] === 0xd8;

/** Start-of-frame markers (SOF0-SOF15 but DHT, JPG and DAC, which share the range). */
export const isJpegFrameMarker = (m: number): boolean =>
  m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

export const JPEG_SOS = 0xda;
export const JPEG_EOI = 0xd9;

/**
 * A marker segment. [start, end) runs from its first 0xFF (fill bytes included) to where the next one
 * begins, so the segments tile the file from byte 2 to the end of EOI; [body, bodyEnd) is the payload after
 * the length field (empty for standalone markers and EOI). For SOS, [bodyEnd, end) is the entropy-coded data.
 */
export interface JpegSegment {
  marker: number;
  start: number;
  body: number;
  bodyEnd: number;
  end: number;
}

/**
 * The segments after SOI, EOI last; throws DamagedMediaError on a damaged file (no SOI, a segment past the
 * end, a scan before the frame header or without an end, no scan, no EOI) and FormatLimitError past
 * FORMAT_LIMITS.jpegSegments. Callers on a request path walk it through `paced`.
 */
export function* jpegSegments(b: Uint8Array): Generator<JpegSegment> {
  if (!isJpeg(b)) damagedMedia("no SOI");
  let sawFrame = false;
  let sawScan = false;
  let pos = 2;
  for (let count = 1; ; count++) {
    countAgainst(count, FORMAT_LIMITS.jpegSegments, "segments");
    const start = pos;
    if (pos >= b.length || b[pos] !== 0xff) damagedMedia(`expected a marker at ${pos}`);
    while (pos < b.length && b[pos] === 0xff) pos++; // fill bytes
    if (pos >= b.length) damagedMedia("truncated at a marker");
    const marker = b[pos]!;
    pos++;
    if (marker === JPEG_EOI) {
      if (!sawScan) damagedMedia("no scan");
      yield { marker, start, body: pos, bodyEnd: pos, end: pos };
      return;
    }
    if (marker === 0xd8 || marker === 0x00) damagedMedia(`unexpected marker ${marker.toString(16)}`);
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      yield { marker, start, body: pos, bodyEnd: pos, end: pos }; // no length
      continue;
    }
    if (pos + 2 > b.length) damagedMedia("truncated segment length");
    const length = u16be(b, pos);
    const body = pos + 2;
    const bodyEnd = pos + length;
    if (length < 2 || bodyEnd > b.length) damagedMedia(`segment ${marker.toString(16)} runs past the end`);
    if (isJpegFrameMarker(marker)) sawFrame = true;
    pos = bodyEnd;
    if (marker === JPEG_SOS) {
      if (!sawFrame) damagedMedia("scan before frame header");
      sawScan = true;
      // Entropy-coded data: a 0xFF is data when followed by 0x00 (stuffing) or a restart marker, and fill
      // when followed by another 0xFF. One plain loop over the bytes: an indexOf call per 0xFF took 0.8 s
      // for 20 MB of them, all of it inside this one segment.
      const last = b.length - 1;
      let ff = pos;
      for (; ff < last; ff++) {
        if (b[ff] !== 0xff) continue;
        const next = b[ff + 1]!;
        if (next !== 0x00 && next !== 0xff && (next < 0xd0 || next > 0xd7)) break;
      }
      if (ff >= last) damagedMedia("scan data without an end");
      pos = ff;
    }
    yield { marker, start, body, bodyEnd, end: pos };
  }
}

/** One segment with a length field: 0xFF, the marker, the length (payload + 2) and the payload. */
export function jpegSegment(marker: number, payload: Uint8Array): Uint8Array {
  if (payload.length > 0xfffd) throw new RangeError(`a JPEG segment holds at most 65533 bytes, not ${payload.length}`);
  const out = new Uint8Array(4 + payload.length);
  out[0] = 0xff;
  out[1] = marker;
  out[2] = (payload.length + 2) >> 8;
  out[3] = (payload.length + 2) & 0xff;
  out.set(payload, 4);
  return out;
}
