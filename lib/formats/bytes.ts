// Byte helpers the format readers and writers share. Reads past the end give 0 (or a shorter string) rather
// than throwing, so a reader's own bounds checks decide what "damaged" means.

/** Bytes [start, end) as a Latin-1 string (one character a byte), for four-character codes and signatures. */
export function latin1(b: Uint8Array, start: number, end: number): string {
  const stop = Math.min(end, b.length);
  let s = "";
  // In slices: spreading a large array into one call would overflow the stack.
  for (let at = start; at < stop; at += 8192) s += String.fromCharCode(...b.subarray(at, Math.min(at + 8192, stop)));
  return s;
}

export const u16be = (b: Uint8Array, at: number): number => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
export const u32be = (b: Uint8Array, at: number): number =>
  (((b[at] ?? 0) << 24) | ((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0)) >>> 0;
export const u32le = (b: Uint8Array, at: number): number =>
  ((b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16) | ((b[at + 3] ?? 0) << 24)) >>> 0;

/** The four bytes of a four-character code (a PNG chunk type, a RIFF chunk id, an ISO-BMFF box type). */
export function fourcc(type: string): Uint8Array {
  if (type.length !== 4 || /[^\x00-\xff]/.test(type))
    throw new RangeError(`not a four-character code: ${JSON.stringify(type)}`);
  return Uint8Array.from(type, (c) => c.charCodeAt(0));
}

/** The parts laid end to end in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Joins kept byte ranges [start, end) of `src` into one array. */
export function joinRanges(src: Uint8Array, ranges: ReadonlyArray<readonly [number, number]>): Uint8Array {
  return concatBytes(ranges.map(([s, e]) => src.subarray(s, e)));
}

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
