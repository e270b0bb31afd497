// Daily quotas ("200 images and 50 videos per 24 hours, counted separately, every attempt counts") and the
// shared video slot behind "Video metadata removal is busy", both on the kernel's shared counters so every
// API process (Redis when configured) counts against the same budget.
import { ApiError } from "../../core/errors.ts";
import type { Counters } from "../../storage/counters.ts";

const HOUR_MS = 3_600_000;
/**
 * A rolling 24 hours, counted in hourly buckets: an attempt keeps counting until the 24 buckets after its
 * own have passed, so for between 24 and 25 hours, never less than the spec's 24.
 */
const BUCKETS = 25;

export interface Quota {
  limit: number;
  message: string;
}

/**
 * Counts one attempt against `quota`, or throws its 429 without counting it. Two racing attempts at the
 * limit may both be refused (each sees the other's increment), never both let in.
 */
export async function countAttempt(counters: Counters, key: string, quota: Quota, nowMs: number): Promise<void> {
  const bucket = Math.floor(nowMs / HOUR_MS);
  const ttlMs = (BUCKETS + 1) * HOUR_MS;
  const { value } = await counters.increment(`${key}:${bucket}`, ttlMs, 1);
  const earlier = await Promise.all(Array.from({ length: BUCKETS - 1 }, (_, i) => counters.get(`${key}:${bucket - 1 - i}`)));
  const total = value + earlier.reduce((a, b) => a + b, 0);
  if (total > quota.limit) {
    await counters.increment(`${key}:${bucket}`, ttlMs, -1);
    throw new ApiError(429, quota.message);
  }
}

export interface SharedSlots {
  /** How long a holder can count on its place; `fn`'s signal fires then. */
  readonly holdMs: number;
  /** Runs `fn` in one of the places, or throws `busy` when all are taken. */
  run<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/**
 * `capacity` places shared by every process on `counters`; a holder that died frees its place within ttlMs.
 * Time is cut into buckets of ttlMs/2 with a key each, for the reason plugins/video/references.ts gives (a
 * single key's expiry would run on its own schedule, under live holders): a newcomer increments its own
 * bucket, then reads both neighbours, and leaves again when the total is over capacity.
 */
export function createSharedSlots(counters: Counters, options: { key: string; capacity: number; busy: () => ApiError; ttlMs?: number; now?: () => number }): SharedSlots {
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const now = options.now ?? Date.now;
  const bucketMs = ttlMs / 2;
  const bucketKey = (n: number) => `${options.key}:${n}`;
  return {
    holdMs: bucketMs,
    async run(fn) {
      const n = Math.floor(now() / bucketMs);
      // A failed release only keeps the place until its key expires; it must not fail the request.
      const release = () => counters.increment(bucketKey(n), ttlMs, -1).then(() => {}, () => {});
      const { value } = await counters.increment(bucketKey(n), ttlMs, 1);
      let taken: number;
      try {
        const [before, after] = await Promise.all([counters.get(bucketKey(n - 1)), counters.get(bucketKey(n + 1))]);
        taken = value + before + after;
      } catch (err) {
        await release();
        throw err;
      }
      if (taken > options.capacity) {
        await release();
        throw options.busy();
      }
      const hold = new AbortController();
      const timer = setTimeout(() => hold.abort(new Error("slot hold time is over")), bucketMs);
      (timer as { unref?: () => void }).unref?.();
      try {
        return await fn(hold.signal);
      } finally {
        clearTimeout(timer);
        await release();
      }
    },
  };
}
