// Functions for test/media/threads.test.ts to run in a worker thread (lib/threads.ts).

/** Busy for `rounds` rounds of arithmetic, then the bytes 0..n-1 and the thread's own view of the work. */
export function crunch(rounds: number, n: number): { bytes: Uint8Array; sum: number } {
  let sum = 0;
  for (let i = 0; i < rounds; i++) sum = (sum + Math.imul(i, 2654435761)) | 0;
  return { bytes: Uint8Array.from({ length: n }, (_, i) => i & 255), sum };
}

/** Never returns (until its thread is ended). */
export function forever(): never {
  for (;;) {
    // spin
  }
}

export function fails(message: string): never {
  throw new RangeError(message);
}

/** A small Node Buffer: a slice of the thread's Buffer pool, which the thread goes on cutting Buffers from. */
export function pooled(text: string): Buffer {
  return Buffer.from(text, "utf8");
}

export const notAFunction = 42;
