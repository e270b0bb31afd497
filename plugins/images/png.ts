// PNG written and read at the chunk level: the sandbox encodes its pictures here, and metadata is added,
// found and removed as whole ancillary chunks, so removing it is lossless (pixel data is never re-encoded).
import { deflateSync } from "node:zlib";
import { PNG_METADATA_CHUNKS, type PngChunk, pngChunks, writePng } from "mediagate/plugin";

export interface PngInfo {
  width: number;
  height: number;
  /** 6 = RGBA, 2 = RGB. */
  colorType: number;
}

/** Size and colour type from IHDR; throws DamagedMediaError when any chunk is damaged. */
export function pngInfo(bytes: Uint8Array): PngInfo {
  const [ihdr] = [...pngChunks(bytes)]; // the reader checks them all, and that IHDR comes first
  if (!ihdr) throw new Error("unreachable: pngChunks yields IHDR or throws");
  const v = new DataView(ihdr.data.buffer, ihdr.data.byteOffset, ihdr.data.byteLength);
  return { width: v.getUint32(0), height: v.getUint32(4), colorType: ihdr.data[9]! };
}

/** Encodes 8-bit RGB or RGBA pixels (rows top to bottom) as a PNG, with extra chunks before the pixels. */
export function encodePng(
  width: number,
  height: number,
  pixels: Uint8Array,
  channels: 3 | 4,
  extra: readonly PngChunk[] = [],
): Uint8Array {
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
  return writePng([
    { type: "IHDR", data: ihdr },
    ...extra,
    { type: "IDAT", data: deflateSync(raw, { level: 3 }) },
    { type: "IEND", data: new Uint8Array() },
  ]);
}

/** Metadata chunk types present in the file (PNG_METADATA_CHUNKS: EXIF, text, XMP, IPTC, C2PA, time). */
export function metadataChunks(bytes: Uint8Array): string[] {
  return [...pngChunks(bytes)].filter((c) => PNG_METADATA_CHUNKS.has(c.type)).map((c) => c.type);
}

/** The same PNG without its metadata chunks; pixels and every other chunk (colour ones too) are kept as they are. */
export function stripPngMetadata(bytes: Uint8Array): Uint8Array {
  return writePng([...pngChunks(bytes)].filter((c) => !PNG_METADATA_CHUNKS.has(c.type)));
}

/** An iTXt chunk holding an XMP packet (the keyword the XMP specification gives for PNG). */
export function xmpChunk(xmp: string): PngChunk {
  const keyword = new TextEncoder().encode("XML:com.adobe.xmp");
  const text = new TextEncoder().encode(xmp);
  // keyword, NUL, compression flag 0, method 0, empty language tag NUL, empty translated keyword NUL, text
  const data = new Uint8Array(keyword.length + 5 + text.length);
  data.set(keyword, 0);
  data.set(text, keyword.length + 5);
  return { type: "iTXt", data };
}

/** An eXIf chunk: a little-endian TIFF structure with ASCII tags of IFD0. */
export function exifChunk(tags: ReadonlyArray<{ tag: number; value: string }>): PngChunk {
  const sorted = [...tags].sort((a, b) => a.tag - b.tag);
  const values = sorted.map((t) => new TextEncoder().encode(`${t.value.replace(/[^\x20-\x7e]/g, "?")}\0`));
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
