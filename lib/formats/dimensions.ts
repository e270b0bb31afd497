// A picture's size from its header, never from its pixels: what a pixel budget is judged on before anything
// decodes the file (lib/media/budgets.ts). A 7 MB PNG can declare 50,000 x 50,000 (10 GB of RGBA once decoded),
// so the header is the only safe place to look. Each reader walks a bounded number of items and keeps no list:
// a file that hides its size behind more items than the cap reads as unknown (null), which callers refuse.
//
// What is read, per format:
// - PNG: IHDR's width and height; APNG's frame count from acTL (chunks walked up to the first IDAT);
// - JPEG: the first start-of-frame segment (SOF0-SOF15), segments skipped by their lengths;
// - WebP: VP8 (lossy key frame header), VP8L (lossless header) or VP8X (canvas size); an animated VP8X file's
//   frames are its ANMF chunks, counted;
// - GIF: the logical screen, widened to any frame that reaches past it, and the frames (image descriptors),
//   counted by walking blocks and sub-blocks without decompressing anything.
import { latin1, u16be, u32be, u32le } from "./bytes.ts";
import { isJpeg, isJpegFrameMarker } from "./jpeg.ts";
import { isPng } from "./png.ts";
import { isWebp } from "./riff.ts";

export type PictureFormat = "png" | "jpeg" | "webp" | "gif";

export interface PictureSize {
  format: PictureFormat;
  width: number;
  height: number;
  /** Pictures the file holds: 1 for a still, the frame count of an animation. */
  frames: number;
}

/** Items (chunks, segments, blocks) a reader walks before it gives up: real files have a few dozen. */
export const DIMENSION_SCAN_LIMIT = 100_000;

const u16le = (b: Uint8Array, at: number): number => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
const u24le = (b: Uint8Array, at: number): number => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16);

export const isGif = (b: Uint8Array): boolean =>
  b.length >= 6 && (latin1(b, 0, 6) === "GIF87a" || latin1(b, 0, 6) === "GIF89a");

/** The picture's size and frame count as its header declares them; null when the format is none of the four or the header cannot be read. */
export function pictureSize(bytes: Uint8Array): PictureSize | null {
  const size = isPng(bytes)
    ? pngSize(bytes)
    : isJpeg(bytes)
      ? jpegSize(bytes)
      : isWebp(bytes)
        ? webpSize(bytes)
        : isGif(bytes)
          ? gifSize(bytes)
          : null;
  return size && size.width > 0 && size.height > 0 && size.frames > 0 ? size : null;
}

function pngSize(b: Uint8Array): PictureSize | null {
  if (b.length < 24 || latin1(b, 12, 16) !== "IHDR") return null;
  const width = u32be(b, 16);
  const height = u32be(b, 20);
  let frames = 1;
  // acTL must come before the first IDAT (APNG spec); chunks are skipped by their lengths, CRCs not checked.
  let pos = 8;
  for (let n = 0; n < DIMENSION_SCAN_LIMIT; n++) {
    // A file cut short before its picture data: what it declares is what a decoder would try.
    if (pos + 8 > b.length) return { format: "png", width, height, frames };
    const type = latin1(b, pos + 4, pos + 8);
    if (type === "IDAT" || type === "IEND") return { format: "png", width, height, frames };
    if (type === "acTL" && pos + 12 <= b.length) frames = Math.max(1, u32be(b, pos + 8));
    pos += 12 + u32be(b, pos);
  }
  return null; // more chunks before the picture than anyone writes
}

function jpegSize(b: Uint8Array): PictureSize | null {
  let pos = 2;
  for (let n = 0; n < DIMENSION_SCAN_LIMIT; n++) {
    while (pos < b.length && b[pos] === 0xff && b[pos + 1] === 0xff) pos++; // fill bytes
    if (pos + 4 > b.length || b[pos] !== 0xff) return null;
    const marker = b[pos + 1]!;
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      pos += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end, or a scan before any frame header
    const length = u16be(b, pos + 2);
    if (length < 2) return null;
    if (isJpegFrameMarker(marker)) {
      if (pos + 9 > b.length) return null;
      return { format: "jpeg", width: u16be(b, pos + 7), height: u16be(b, pos + 5), frames: 1 };
    }
    pos += 2 + length;
  }
  return null;
}

function webpSize(b: Uint8Array): PictureSize | null {
  const end = Math.min(b.length, 8 + u32le(b, 4));
  let pos = 12;
  let canvas: { width: number; height: number } | null = null;
  let animated = false;
  let frames = 0;
  for (let n = 0; n < DIMENSION_SCAN_LIMIT && pos + 8 <= end; n++) {
    const type = latin1(b, pos, pos + 4);
    const size = u32le(b, pos + 4);
    const body = pos + 8;
    if (type === "VP8X" && n === 0) {
      if (body + 10 > b.length) return null;
      animated = (b[body]! & 0x02) !== 0;
      canvas = { width: u24le(b, body + 4) + 1, height: u24le(b, body + 7) + 1 };
      if (!animated) return { format: "webp", ...canvas, frames: 1 };
    } else if (type === "ANMF") {
      frames++;
    } else if (!canvas && type === "VP8 ") {
      // Frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height (2 scale bits above each).
      if (body + 10 > b.length || b[body + 3] !== 0x9d || b[body + 4] !== 0x01 || b[body + 5] !== 0x2a) return null;
      return { format: "webp", width: u16le(b, body + 6) & 0x3fff, height: u16le(b, body + 8) & 0x3fff, frames: 1 };
    } else if (!canvas && type === "VP8L") {
      if (body + 5 > b.length || b[body] !== 0x2f) return null;
      const bits = u32le(b, body + 1);
      return { format: "webp", width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1, frames: 1 };
    }
    pos = body + size + (size & 1);
  }
  if (!canvas || !animated) return null;
  // An animation is walked to its end: a file with more chunks than the cap reads as unknown.
  if (pos + 8 <= end) return null;
  return { format: "webp", ...canvas, frames: Math.max(1, frames) };
}

function gifSize(b: Uint8Array): PictureSize | null {
  if (b.length < 13) return null;
  let width = u16le(b, 6);
  let height = u16le(b, 8);
  let pos = 13;
  if (b[10]! & 0x80) pos += 3 * 2 ** ((b[10]! & 0x07) + 1); // global colour table
  let frames = 0;
  /** Skips a run of data sub-blocks (a length byte, that many bytes) up to the zero-length terminator. */
  const skipSubBlocks = (at: number, budget: { left: number }): number => {
    while (at < b.length && budget.left-- > 0) {
      const len = b[at]!;
      at += 1 + len;
      if (len === 0) return at;
    }
    return -1;
  };
  // Every block and sub-block counts against one budget: a GIF of millions of tiny blocks reads as unknown.
  const budget = { left: DIMENSION_SCAN_LIMIT * 10 };
  while (pos < b.length && budget.left-- > 0) {
    const introducer = b[pos]!;
    if (introducer === 0x3b) break; // trailer
    if (introducer === 0x21) {
      pos = skipSubBlocks(pos + 2, budget);
    } else if (introducer === 0x2c) {
      if (pos + 10 > b.length) break;
      frames++;
      width = Math.max(width, u16le(b, pos + 1) + u16le(b, pos + 5));
      height = Math.max(height, u16le(b, pos + 3) + u16le(b, pos + 7));
      const flags = b[pos + 9]!;
      pos += 10;
      if (flags & 0x80) pos += 3 * 2 ** ((flags & 0x07) + 1); // local colour table
      pos = skipSubBlocks(pos + 1, budget); // after the LZW minimum code size
    } else break; // not a block: decoders stop here too
    if (pos < 0) break; // truncated: what was counted is what a decoder would show
  }
  if (budget.left <= 0) return null;
  return { format: "gif", width, height, frames: Math.max(1, frames) };
}
