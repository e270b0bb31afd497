// PNG written and read at the chunk level: the sandbox encodes its pictures here, and metadata is added,
// found and removed as whole ancillary chunks, so removing it is lossless (pixel data is never re-encoded).
import { deflateSync } from "node:zlib";

const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(parts: Uint8Array[]): number {
  let c = 0xffffffff;
  for (const p of parts) for (let i = 0; i < p.length; i++) c = CRC_TABLE[(c ^ p[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export interface Chunk {
  type: string;
  data: Uint8Array;
}

function encodeChunk({ type, data }: Chunk): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  const typeBytes = new TextEncoder().encode(type);
  view.setUint32(0, data.length);
  out.set(typeBytes, 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32([typeBytes, data]));
  return out;
}

export function writePng(chunks: readonly Chunk[]): Uint8Array {
  const encoded = chunks.map(encodeChunk);
  const out = new Uint8Array(SIGNATURE.length + encoded.reduce((n, c) => n + c.length, 0));
  out.set(SIGNATURE, 0);
  let offset = SIGNATURE.length;
  for (const c of encoded) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length > 8 && SIGNATURE.every((b, i) => bytes[i] === b);
}

/** The chunks of a PNG; throws on a damaged file (bad length or CRC). */
export function readPng(bytes: Uint8Array): Chunk[] {
  if (!isPng(bytes)) throw new Error("not a PNG file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: Chunk[] = [];
  let offset = 8;
  while (offset + 12 <= bytes.length) {
    const length = view.getUint32(offset);
    if (offset + 12 + length > bytes.length) throw new Error("truncated PNG chunk");
    const typeBytes = bytes.subarray(offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (crc32([typeBytes, data]) !== view.getUint32(offset + 8 + length)) throw new Error("PNG chunk CRC mismatch");
    const type = new TextDecoder().decode(typeBytes);
    chunks.push({ type, data });
    offset += 12 + length;
    if (type === "IEND") break;
  }
  return chunks;
}

export interface PngInfo {
  width: number;
  height: number;
  /** 6 = RGBA, 2 = RGB. */
  colorType: number;
}

export function pngInfo(bytes: Uint8Array): PngInfo {
  const ihdr = readPng(bytes).find((c) => c.type === "IHDR");
  if (!ihdr) throw new Error("PNG without IHDR");
  const v = new DataView(ihdr.data.buffer, ihdr.data.byteOffset, ihdr.data.byteLength);
  return { width: v.getUint32(0), height: v.getUint32(4), colorType: ihdr.data[9]! };
}

/** Encodes 8-bit RGB or RGBA pixels (rows top to bottom) as a PNG, with extra chunks before the pixels. */
export function encodePng(width: number, height: number, pixels: Uint8Array, channels: 3 | 4, extra: readonly Chunk[] = []): Uint8Array {
  const ihdr = new Uint8Array(13);
  const v = new DataView(ihdr.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  ihdr[8] = 8;
  ihdr[9] = channels === 4 ? 6 : 2;
  // Filter byte 0 (none) before each row: the sandbox's smooth gradients compress well enough without.
  const stride = width * channels;
  const raw = new Uint8Array((stride + 1) * height);
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  return writePng([{ type: "IHDR", data: ihdr }, ...extra, { type: "IDAT", data: deflateSync(raw, { level: 3 }) }, { type: "IEND", data: new Uint8Array() }]);
}

// Chunks that carry metadata: EXIF (eXIf), text, XMP and IPTC (iTXt/tEXt/zTXt), C2PA manifests (caBX),
// and the capture time (tIME). Colour chunks (iCCP, sRGB, gAMA) describe the pixels and are kept.
const METADATA_CHUNKS = new Set(["eXIf", "tEXt", "zTXt", "iTXt", "caBX", "tIME"]);

/** Metadata chunk types present in the file. */
export function metadataChunks(bytes: Uint8Array): string[] {
  return readPng(bytes)
    .filter((c) => METADATA_CHUNKS.has(c.type))
    .map((c) => c.type);
}

/** The same PNG without its metadata chunks; pixels and every other chunk are copied byte for byte. */
export function stripPngMetadata(bytes: Uint8Array): Uint8Array {
  return writePng(readPng(bytes).filter((c) => !METADATA_CHUNKS.has(c.type)));
}

/** An iTXt chunk holding an XMP packet (the keyword the XMP specification gives for PNG). */
export function xmpChunk(xmp: string): Chunk {
  const keyword = new TextEncoder().encode("XML:com.adobe.xmp");
  const text = new TextEncoder().encode(xmp);
  // keyword, NUL, compression flag 0, method 0, empty language tag NUL, empty translated keyword NUL, text
  const data = new Uint8Array(keyword.length + 5 + text.length);
  data.set(keyword, 0);
  data.set(text, keyword.length + 5);
  return { type: "iTXt", data };
}

/** An eXIf chunk: a little-endian TIFF structure with ASCII tags of IFD0. */
export function exifChunk(tags: ReadonlyArray<{ tag: number; value: string }>): Chunk {
  const sorted = [...tags].sort((a, b) => a.tag - b.tag);
  const values = sorted.map((t) => new TextEncoder().encode(t.value.replace(/[^\x20-\x7e]/g, "?") + "\0"));
  const ifdSize = 2 + sorted.length * 12 + 4;
  const dataStart = 8 + ifdSize;
  const total = dataStart + values.reduce((n, v) => n + (v.length > 4 ? v.length + (v.length % 2) : 0), 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out.set([0x49, 0x49, 0x2a, 0x00], 0);
  view.setUint32(4, 8, true);
  view.setUint16(8, sorted.length, true);
  let next = dataStart;
  sorted.forEach((t, i) => {
    const entry = 10 + i * 12;
    const value = values[i]!;
    view.setUint16(entry, t.tag, true);
    view.setUint16(entry + 2, 2, true); // ASCII
    view.setUint32(entry + 4, value.length, true);
    if (value.length <= 4) out.set(value, entry + 8);
    else {
      view.setUint32(entry + 8, next, true);
      out.set(value, next);
      next += value.length + (value.length % 2);
    }
  });
  view.setUint32(10 + sorted.length * 12, 0, true); // no next IFD
  return { type: "eXIf", data: out };
}
