// What the format readers throw when bytes do not hold together (a segment running past the end, a missing
// end marker, a chunk with a bad length or checksum). It is the only thing they throw, so a caller can map it
// to its own answer (metadata removal's 422) and anything else stays a bug of ours.

export class DamagedMediaError extends Error {
  constructor(readonly detail: string) {
    super(`damaged: ${detail}`);
    this.name = "DamagedMediaError";
  }
}

export const isDamagedMedia = (err: unknown): err is DamagedMediaError => err instanceof DamagedMediaError;

export function damagedMedia(detail: string): never {
  throw new DamagedMediaError(detail);
}
