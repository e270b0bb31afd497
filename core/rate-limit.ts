// The one rate-limit algorithm, shared by the memory and Redis counter stores: fixed windows aligned to the
// clock (bucket = floor(now / window)), one counter per subject, rule, window and bucket, incremented atomically
// with the rest of the window as its expiry. A request passes when every window's new count is within its
// limit. Each increment returns a distinct count, so at most `limit` requests pass per window under any
// concurrency and on any number of API processes sharing the counters.
//
// A refused request takes its increments back. Without that, a client refused by the per-minute window of
// "300/min and 3000/h" would burn its hourly budget on requests that never ran (a client retrying at
// 1000/min would be locked out for the hour after about 900 uploads instead of 3000). The give-back keeps
// the cap exact: a passing request's own increment is never taken back, and every count it is compared with
// includes all earlier passes. The cost is that a concurrent request can briefly see a count one too high
// (a refusal that a moment later would pass), never one too low.
import type { Counters } from "../contracts/counters.ts";
import { isRateLimitName, RATE_LIMITS, type RateLimitName, type RateWindow } from "./rate-limits.ts";

export interface RateLimitDecision {
  allowed: boolean;
  /** `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), plus `Retry-After` when refused. */
  headers: Record<string, string>;
  retryAfterSeconds: number | null;
}

export interface RateLimiter {
  /**
   * Counts one request of `subject` against a row of the spec's table. `override` replaces the limit of the
   * row's first (per-minute) window: the per-account setting of the admin API.
   */
  check(subject: string, rule: RateLimitName, override?: number): Promise<RateLimitDecision>;
  /** The same for a row the table does not have (a plugin's own `rateLimits`), with its windows given. */
  check(subject: string, rule: string, windows: readonly RateWindow[], override?: number): Promise<RateLimitDecision>;
}

/** The spec: "HTTP 429 when exceeded, wait at least 10 seconds". */
const MIN_RETRY_AFTER_SECONDS = 10;

function policyName(windowSeconds: number): string {
  if (windowSeconds === 60) return "per-minute";
  if (windowSeconds === 3600) return "per-hour";
  if (windowSeconds === 86400) return "per-day";
  return `per-${windowSeconds}s`;
}

function effectiveLimit(window: RateWindow, index: number, override: number | undefined): number {
  // An override is operator data read from the database; a malformed one must not turn into "no limit"
  // (NaN compares false with every count) or throw in front of every request.
  if (index === 0 && override !== undefined && Number.isFinite(override) && override >= 0) return Math.floor(override);
  return window.limit;
}

interface WindowCount {
  key: string;
  resetMs: number;
  name: string;
  limit: number;
  windowSeconds: number;
  count: number;
  resetSeconds: number;
}

export function createRateLimiter(counters: Counters, now: () => number): RateLimiter {
  // The key and the reset of one window at one instant, and the count the store returned for it.
  function windowAt(
    subject: string,
    rule: string,
    w: RateWindow,
    i: number,
    at: number,
    override: number | undefined,
  ): WindowCount {
    const windowMs = w.windowSeconds * 1000;
    const bucket = Math.floor(at / windowMs);
    const resetMs = (bucket + 1) * windowMs - at;
    return {
      key: `rl:${subject}:${rule}:${w.windowSeconds}:${bucket}`,
      resetMs,
      name: policyName(w.windowSeconds),
      limit: effectiveLimit(w, i, override),
      windowSeconds: w.windowSeconds,
      count: 0,
      // delay-seconds are integers; rounding down would invite a retry a fraction of a second early.
      resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }

  async function decide(
    subject: string,
    rule: string,
    windows: readonly RateWindow[],
    override: number | undefined,
  ): Promise<RateLimitDecision> {
    if (!windows.length) throw new Error(`rate limit "${rule}" has no windows`);
    // One reading of the clock, so the windows of one request agree on which buckets it falls in.
    const at = now();
    let results: WindowCount[];
    if (windows.length === 1) {
      // Nearly every row has one window: no per-window closure and Promise.all on the hot path.
      const r = windowAt(subject, rule, windows[0]!, 0, at, override);
      r.count = (await counters.increment(r.key, r.resetMs)).value;
      results = [r];
    } else {
      results = windows.map((w, i) => windowAt(subject, rule, w, i, at, override));
      const counts = await Promise.all(results.map((r) => counters.increment(r.key, r.resetMs)));
      for (let i = 0; i < results.length; i++) results[i]!.count = counts[i]!.value;
    }
    const exceeded = results.filter((r) => r.count > r.limit);
    const allowed = exceeded.length === 0;
    if (!allowed) await Promise.all(results.map((r) => counters.increment(r.key, r.resetMs, -1)));
    // After a give-back this request no longer occupies any window, so it must not lower what remains.
    const used = (r: WindowCount) => (allowed ? r.count : r.count - 1);
    // Structured-field Lists (RFC 8941) serialise with ", " between members.
    const headers: Record<string, string> = {
      "RateLimit-Policy": results.map((r) => `"${r.name}";q=${r.limit};w=${r.windowSeconds}`).join(", "),
      RateLimit: results.map((r) => `"${r.name}";r=${Math.max(0, r.limit - used(r))};t=${r.resetSeconds}`).join(", "),
    };
    if (allowed) return { allowed, headers, retryAfterSeconds: null };
    // Every exceeded window must have reset before a retry can pass, so wait for the last of them.
    const retryAfterSeconds = Math.max(MIN_RETRY_AFTER_SECONDS, ...exceeded.map((r) => r.resetSeconds));
    headers["Retry-After"] = String(retryAfterSeconds);
    return { allowed, headers, retryAfterSeconds };
  }

  return {
    check(
      subject: string,
      rule: string,
      windowsOrOverride?: readonly RateWindow[] | number,
      override?: number,
    ): Promise<RateLimitDecision> {
      if (Array.isArray(windowsOrOverride)) return decide(subject, rule, windowsOrOverride, override);
      if (!isRateLimitName(rule)) return Promise.reject(new Error(`"${rule}" is not a row of the rate-limit table`));
      return decide(subject, rule, RATE_LIMITS[rule], windowsOrOverride as number | undefined);
    },
  } as RateLimiter;
}
