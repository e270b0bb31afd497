// RIFF at the chunk level (the container of WebP, and of WAV): "RIFF", a little-endian size, a form type,
// then chunks of id, little-endian size and data padded to an even length.
import { concatBytes, fourcc, latin1, u32le } from "./bytes.ts";
import { countAgainst, damagedMedia } from "./errors.ts";
import { FORMAT_LIMITS } from "./limits.ts";

export const isWebp = (b: Uint8Array): boolean =>
  b.length >= 12 && latin1(b, 0, 4) === "RIFF" && latin1(b, 8, 12) === "WEBP";

/** The flags byte of a WebP VP8X chunk (the first of its data). */
export const WEBP_VP8X_FLAGS = { icc: 0x20, alpha: 0x10, exif: 0x08, xmp: 0x04, animation: 0x02 } as const;

/** The form type and where the RIFF ends (its chunks run from 12 to `end`); throws DamagedMediaError when the size does not fit the file. */
export function riffHeader(b: Uint8Array): { form: string; end: number } {
  if (b.length < 12 || latin1(b, 0, 4) !== "RIFF") damagedMedia("no RIFF header");
  const end = 8 + u32le(b, 4);
  if (end > b.length || end < 12) damagedMedia("RIFF size does not match the file");
  return { form: latin1(b, 8, 12), end };
}

/** A chunk as read: [start, end) runs from its id to the end of its padding, [body, dataEnd) is its data. */
export interface RiffChunk {
  type: string;
  start: number;
  body: number;
  dataEnd: number;
  end: number;
}

export interface RiffChunksOptions {
  /**
   * Sizes may run past `to` (a stream written before its length was known, its placeholder sizes never filled
   * in): the bytes present are what counts, so such a chunk ends at `to` and ends the walk, and so do a few
   * bytes too short for a chunk header. Without it both are DamagedMediaError.
   */
  cutAtEnd?: boolean;
  /** The most chunks walked before FormatLimitError; default FORMAT_LIMITS.riffChunks. */
  maxChunks?: number;
}

/**
 * The chunks laid end to end in [from, to) (for a whole file: 12 and riffHeader's end); throws
 * DamagedMediaError when a chunk runs past `to`, FormatLimitError past `maxChunks`. A writer that leaves
 * out the last pad byte is tolerated.
 */
export function* riffChunks(
  b: Uint8Array,
  from: number,
  to: number,
  { cutAtEnd = false, maxChunks = FORMAT_LIMITS.riffChunks }: RiffChunksOptions = {},
): Generator<RiffChunk> {
  let pos = from;
  for (let count = 1; pos < to; count++) {
    countAgainst(count, maxChunks, "chunks");
    if (pos + 8 > to) {
      if (cutAtEnd) return;
      damagedMedia("truncated chunk header");
    }
    const type = latin1(b, pos, pos + 4);
    const size = u32le(b, pos + 4);
    if (cutAtEnd && pos + 8 + size > to) {
      yield { type, start: pos, body: pos + 8, dataEnd: to, end: to };
      return;
    }
    const dataEnd = pos + 8 + size;
    if (dataEnd > to) damagedMedia(`chunk ${JSON.stringify(type)} runs past the RIFF`);
    const end = Math.min(dataEnd + (size & 1), to);
    yield { type, start: pos, body: pos + 8, dataEnd, end };
    pos = end;
  }
}

/** One chunk as stored: id, size, data and the pad byte when the size is odd. */
export function riffChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + data.length + (data.length & 1));
  out.set(fourcc(type), 0);
  new DataView(out.buffer).setUint32(4, data.length, true);
  out.set(data, 8);
  return out;
}

/** A RIFF of the form type holding the chunks, each already stored (riffChunk, or copied from another file). */
export function writeRiff(form: string, chunks: readonly Uint8Array[]): Uint8Array {
  const head = new Uint8Array(12);
  head.set(fourcc("RIFF"), 0);
  head.set(fourcc(form), 8);
  const out = concatBytes([head, ...chunks]);
  new DataView(out.buffer).setUint32(4, out.length - 8, true);
  return out;
}
