// Places shared by every process: "at most N of this at once, service-wide" (the video reference encoder,
// video metadata removal), on the kernel's shared counters.

import type { Counters } from "../contracts/counters.ts";
import type { ApiError } from "./api-error.ts";

export interface SharedSlots {
  /** How long a holder can count on its place; `fn`'s signal fires then. */
  readonly holdMs: number;
  /** Runs `fn` in one of the places, or throws `busy` when all are taken. */
  run<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/**
 * `capacity` places shared by every process on `counters` (Redis when configured); a holder that died frees
 * its place within `ttlMs` (default 10 minutes).
 *
 * A single counter key would not do: Counters only set an expiry when a key is created, so a key reused by
 * many holders expires on a schedule of its own, possibly under a live holder, whose release then drives the
 * count negative and lets too many in. Instead time is cut into buckets of ttlMs/2 with a key each; a holder
 * counts in the bucket it started in, and a newcomer increments its own bucket first and then reads both
 * neighbours, leaving again when the total is over capacity. Of racing newcomers, whichever reads last sees
 * the others' increments, so never more than `capacity` get in; a holder stays visible until the end of the
 * next bucket (so for at least holdMs = ttlMs/2), and a dead one blocks for at most ttlMs. Reading the next
 * bucket too covers processes whose clocks run ahead.
 */
export function createSharedSlots(
  counters: Counters,
  options: { key: string; capacity: number; busy: () => ApiError; ttlMs?: number; now?: () => number },
): SharedSlots {
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const now = options.now ?? Date.now;
  const bucketMs = ttlMs / 2;
  const bucketKey = (n: number) => `${options.key}:${n}`;
  return {
    holdMs: bucketMs,
    async run(fn) {
      const n = Math.floor(now() / bucketMs);
      // A failed release only keeps the place until its key expires; it must not fail the request.
      const release = () =>
        counters.increment(bucketKey(n), ttlMs, -1).then(
          () => {},
          () => {},
        );
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
