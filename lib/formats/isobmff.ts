// ISO-BMFF (MP4, MOV, 3GP, HEIF) at the box level: size, type, an optional 64-bit size, the payload. The
// reader never loops and throws only past a cap: a damaged file ends the walk at the first box that does not
// fit, so callers see what was readable (metadata categories, a first box) and decide for themselves; more
// boxes side by side than `maxBoxes` is FormatLimitError (a DamagedMediaError).
import { concatBytes, fourcc, latin1 } from "./bytes.ts";
import { countAgainst } from "./errors.ts";
import { FORMAT_LIMITS } from "./limits.ts";

export interface Mp4Box {
  type: string;
  start: number;
  /** First byte of the payload. */
  body: number;
  end: number;
}

/**
 * The boxes laid end to end in bytes [from, to); stops at the first that does not fit, throws
 * FormatLimitError past `maxBoxes` (default: a file's top level, FORMAT_LIMITS.isoBmffTopLevelBoxes; pass
 * FORMAT_LIMITS.isoBmffChildBoxes when walking inside a box).
 */
export function* mp4Boxes(
  b: Uint8Array,
  from = 0,
  to = b.length,
  maxBoxes: number = FORMAT_LIMITS.isoBmffTopLevelBoxes,
): Generator<Mp4Box> {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let at = from;
  for (let count = 1; at + 8 <= to; count++) {
    countAgainst(count, maxBoxes, "boxes side by side");
    let size = view.getUint32(at);
    const type = latin1(b, at + 4, at + 8);
    let body = at + 8;
    if (size === 1) {
      if (at + 16 > to) return;
      const big = view.getBigUint64(at + 8);
      if (big > BigInt(to - at)) return;
      size = Number(big);
      body = at + 16;
    } else if (size === 0) {
      size = to - at; // to the end of the enclosing space
    }
    if (size < body - at || at + size > to) return;
    yield { type, start: at, body, end: at + size };
    at += size;
  }
}

/**
 * Types an ISO-BMFF file may start with: ftyp, or for QuickTime files from before ftyp, one of the others.
 * `pnot` (QuickTime's preview atom) leads some old MOV files too, but only where a caller asks for it: video
 * upscale and reference videos have always refused such files, metadata removal accepts them.
 */
const FIRST_BOXES: ReadonlySet<string> = new Set(["ftyp", "moov", "mdat", "wide", "free", "skip"]);

export interface IsoBmffStartOptions {
  /** Whether a leading `pnot` box counts. */
  pnot?: boolean;
}

/** Whether a file whose first box has this type is ISO-BMFF (MP4, MOV, 3GP, ...). */
export const isIsoBmffFirstBox = (type: string, { pnot = false }: IsoBmffStartOptions = {}): boolean =>
  FIRST_BOXES.has(type) || (pnot && type === "pnot");

/** The first box when it fits in the file and marks it as ISO-BMFF; undefined otherwise. Never by extension or content type. */
export function isoBmffFirstBox(b: Uint8Array, options?: IsoBmffStartOptions): Mp4Box | undefined {
  for (const box of mp4Boxes(b)) return isIsoBmffFirstBox(box.type, options) ? box : undefined;
  return undefined;
}

/**
 * Whether an ISO-BMFF file is whole: its top-level boxes fit in it and one is the moov. A download cut short (a
 * box running past the end) or a file without its index still probes, from what is there, as the full length;
 * reference media are refused on this before the charge rather than failing the job's encode.
 */
export function isWholeIsoBmff(bytes: Uint8Array): boolean {
  let end = 0;
  let moov = false;
  try {
    for (const box of mp4Boxes(bytes)) {
      end = box.end;
      if (box.type === "moov") moov = true;
    }
  } catch {
    return false; // more boxes side by side than any real file has
  }
  return moov && bytes.length - end < 8;
}

/** One box as stored: size, type, the 16-byte id of a `uuid` box when `uuid` is given (hex, dashes allowed), payload. */
export function isoBmffBox(type: string, payload: Uint8Array, uuid?: string): Uint8Array {
  const hex = uuid ? uuid.replace(/-/g, "") : undefined;
  if (hex !== undefined && !/^[0-9a-f]{32}$/i.test(hex)) throw new RangeError(`not a UUID: ${uuid}`);
  const id = hex ? Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16)) : new Uint8Array(0);
  const out = new Uint8Array(8 + id.length + payload.length);
  new DataView(out.buffer).setUint32(0, out.length);
  out.set(fourcc(type), 4);
  out.set(id, 8);
  out.set(payload, 8 + id.length);
  return out;
}

/** The bytes with one more top-level box appended (a `uuid` box when `uuid` is given). */
export function appendTopLevelBox(bytes: Uint8Array, type: string, payload: Uint8Array, uuid?: string): Uint8Array {
  return concatBytes([bytes, isoBmffBox(type, payload, uuid)]);
}
