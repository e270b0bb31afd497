// Daily quotas ("200 images and 50 videos per 24 hours, counted separately, every attempt counts") on the
// kernel's shared counters, so every API process (Redis when configured) counts against the same budget.
import { ApiError, type Counters } from "mediagate/plugin";
import { METADATA_ERRORS } from "./errors.ts";

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

export const IMAGE_QUOTA: Quota = { limit: 200, message: METADATA_ERRORS.imageQuota };
export const VIDEO_QUOTA: Quota = { limit: 50, message: METADATA_ERRORS.videoQuota };

/**
 * Counts one attempt against `quota`, or throws its 429 without counting it. Two racing attempts at the
 * limit may both be refused (each sees the other's increment), never both let in.
 */
export async function countAttempt(counters: Counters, key: string, quota: Quota, nowMs: number): Promise<void> {
  const bucket = Math.floor(nowMs / HOUR_MS);
  const ttlMs = (BUCKETS + 1) * HOUR_MS;
  const { value } = await counters.increment(`${key}:${bucket}`, ttlMs, 1);
  const earlier = await Promise.all(
    Array.from({ length: BUCKETS - 1 }, (_, i) => counters.get(`${key}:${bucket - 1 - i}`)),
  );
  const total = value + earlier.reduce((a, b) => a + b, 0);
  if (total > quota.limit) {
    await counters.increment(`${key}:${bucket}`, ttlMs, -1);
    throw new ApiError(429, quota.message);
  }
}
