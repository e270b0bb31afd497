// PNG at the chunk level (W3C PNG, 3rd edition, section 5). The reader checks every chunk (length inside the
// file, a four-letter type, the CRC): a chunk whose length lies leaves the walk misaligned and fails its CRC,
// which is how a damaged file is told from a clean one without decoding it. The writer computes the CRCs.
import { concatBytes, fourcc, latin1, u32be } from "./bytes.ts";
import { crc32 } from "./crc32.ts";
import { countAgainst, damagedMedia } from "./errors.ts";
import { FORMAT_LIMITS } from "./limits.ts";

export const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

export const isPng = (b: Uint8Array): boolean => b.length >= 8 && PNG_SIGNATURE.every((v, i) => b[i] === v);

/**
 * Chunks that carry metadata rather than picture: EXIF (eXIf), text, XMP and IPTC (tEXt/zTXt/iTXt), C2PA
 * manifests (caBX) and the modification time (tIME). Colour chunks (iCCP, sRGB, gAMA, ...) describe the
 * pixels and are not among them.
 */
export const PNG_METADATA_CHUNKS: ReadonlySet<string> = new Set(["eXIf", "tEXt", "zTXt", "iTXt", "caBX", "tIME"]);

export interface PngChunk {
  type: string;
  data: Uint8Array;
}

/** A chunk as read, with where it sits: [start, end) runs from its length field to the end of its CRC. */
export interface PngChunkAt extends PngChunk {
  start: number;
  end: number;
}

const TYPE = /^[A-Za-z]{4}$/;

/**
 * The chunks from IHDR to IEND, in file order; throws DamagedMediaError on a damaged file (no signature, a
 * chunk past the end, a bad type or CRC, IHDR not first, no IEND) and FormatLimitError past
 * FORMAT_LIMITS.pngChunks. Bytes after IEND are not read. Callers on a request path walk it through `paced`.
 */
export function* pngChunks(b: Uint8Array): Generator<PngChunkAt> {
  if (!isPng(b)) damagedMedia("no PNG signature");
  let pos = 8;
  for (let count = 1; ; count++) {
    countAgainst(count, FORMAT_LIMITS.pngChunks, "chunks");
    if (pos + 12 > b.length) damagedMedia("truncated chunk header");
    const length = u32be(b, pos);
    const type = latin1(b, pos + 4, pos + 8);
    if (length > 0x7fffffff || pos + 12 + length > b.length)
      damagedMedia(`chunk ${JSON.stringify(type)} runs past the end`);
    if (!TYPE.test(type)) damagedMedia("bad chunk type");
    const dataEnd = pos + 8 + length;
    if (crc32(b.subarray(pos + 4, dataEnd)) !== u32be(b, dataEnd)) damagedMedia(`bad CRC in ${type}`);
    if (pos === 8 && type !== "IHDR") damagedMedia("IHDR is not first");
    const end = dataEnd + 4;
    yield { type, data: b.subarray(pos + 8, dataEnd), start: pos, end };
    if (type === "IEND") return;
    pos = end;
  }
}

/** One chunk as stored: length, type, data and the CRC of type and data. */
export function pngChunk({ type, data }: PngChunk): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  const typeBytes = fourcc(type);
  view.setUint32(0, data.length);
  out.set(typeBytes, 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(data, crc32(typeBytes)));
  return out;
}

/** The signature and the chunks, in the order given. */
export function writePng(chunks: readonly PngChunk[]): Uint8Array {
  return concatBytes([PNG_SIGNATURE, ...chunks.map(pngChunk)]);
}
