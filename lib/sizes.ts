// The spec's sizes in bytes. The spec's megabyte is decimal wherever it spells the bytes out (50 MB is
// 50,000,000; 95 MB is 95,000,000), so every "N MB" cap of the service is N x 1,000,000, never N x 1024 x 1024:
// one helper, so a cap and the "max N MB" text beside it cannot disagree.

/** Bytes in one of the spec's megabytes. */
export const MEGABYTE = 1_000_000;

/** `n` of the spec's megabytes, in bytes: `megabytes(100)` is 100,000,000. */
export function megabytes(n: number): number {
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`megabytes: ${n} is not a size`);
  return Math.round(n * MEGABYTE);
}
