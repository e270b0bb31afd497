// What the byte-surgery parsers throw when a file does not hold together (a segment running past the end, a
// missing end marker, a chunk with a bad length or checksum). It is the only thing they throw: the endpoint
// maps it to its 422, and the fuzz tests hold the parsers to it.

export class DamagedMediaError extends Error {
  constructor(readonly detail: string) {
    super(`damaged: ${detail}`);
    this.name = "DamagedMediaError";
  }
}

export const isDamaged = (err: unknown): err is DamagedMediaError => err instanceof DamagedMediaError;

export function damaged(detail: string): never {
  throw new DamagedMediaError(detail);
}

/** Categories of metadata, as the clean-copy record's `removed` names them. */
export type Category = "c2pa" | "exif" | "xmp" | "iptc" | "other";

export const CATEGORY_ORDER: readonly Category[] = ["c2pa", "exif", "xmp", "iptc", "other"];

export interface Cleaned {
  bytes: Uint8Array;
  removed: Category[];
}

export const sortCategories = (found: Set<Category>): Category[] => CATEGORY_ORDER.filter((c) => found.has(c));

const latin1 = new TextDecoder("latin1");
/** Bytes as a Latin-1 string, for signature comparisons. */
export const ascii = (b: Uint8Array, start: number, end: number): string => latin1.decode(b.subarray(start, Math.min(end, b.length)));

/** The bytes without the cut ranges [start, end) (in order, not overlapping). */
export function withoutRanges(src: Uint8Array, cuts: ReadonlyArray<readonly [number, number]>): Uint8Array {
  const kept: Array<[number, number]> = [];
  let from = 0;
  for (const [s, e] of cuts) {
    if (s > from) kept.push([from, s]);
    from = e;
  }
  kept.push([from, src.length]);
  return joinRanges(src, kept);
}

/** Joins kept byte ranges [start, end) into one array. */
export function joinRanges(src: Uint8Array, ranges: ReadonlyArray<readonly [number, number]>, total?: number): Uint8Array {
  const size = total ?? ranges.reduce((n, [s, e]) => n + (e - s), 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const [s, e] of ranges) {
    out.set(src.subarray(s, e), at);
    at += e - s;
  }
  return out;
}
