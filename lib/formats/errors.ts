// What the format readers throw when bytes do not hold together (a segment running past the end, a missing
// end marker, a chunk with a bad length or checksum) or hold more items than FORMAT_LIMITS allows. It is the
// only thing they throw, so a caller can map it to its own answer (metadata removal's 422, an upload's 400)
// and anything else stays a bug of ours.

export class DamagedMediaError extends Error {
  constructor(readonly detail: string) {
    super(`damaged: ${detail}`);
    this.name = "DamagedMediaError";
  }
}

/** A file past one of FORMAT_LIMITS' caps: not damaged as such, but refused like a damaged one. */
export class FormatLimitError extends DamagedMediaError {
  constructor(what: string, cap: number) {
    super(`more than ${cap} ${what}`);
    this.name = "FormatLimitError";
  }
}

export const isDamagedMedia = (err: unknown): err is DamagedMediaError => err instanceof DamagedMediaError;

export function damagedMedia(detail: string): never {
  throw new DamagedMediaError(detail);
}

/** Throws FormatLimitError when `count` items is past `cap`. */
export function countAgainst(count: number, cap: number, what: string): void {
  if (count > cap) throw new FormatLimitError(what, cap);
}
