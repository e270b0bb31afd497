// Shared counters with expiry, as the rate limiter, the shared slots and plugins (the `counters`
// capability) use them; storage/counters.ts keeps them in process or on Redis.
export interface Counters {
  /**
   * Atomically adds `by` (default 1) to `key`; a key that did not exist expires after `ttlMs`.
   * Returns the new value and the milliseconds left before the key expires.
   */
  increment(key: string, ttlMs: number, by?: number): Promise<{ value: number; ttlMs: number }>;
  get(key: string): Promise<number>;
  /** Resolves when the store answers (Redis: PING); for the boot check and /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
