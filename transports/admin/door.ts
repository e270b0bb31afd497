// The admin door: who may knock, and how often. A wrong admin token is counted per client address
// (ADMIN_AUTH_FAILURES a minute); past that, the address's wrong tokens get a 429 in the spec's error shape
// with Retry-After, logged at warn, until the window ends. The right token is always let in, from any
// address: the throttle is there to make guessing slow and loud, and must not let an attacker who shares an
// address with the operator (a NAT, a reverse proxy without TRUST_PROXY) lock the operator out. With a token
// of 100 bits or more (core/token-strength.ts) a guesser learns nothing from the 429 but that the guess was
// wrong, which the 401 said too. The counters are the kernel's rate-limit counters, so with REDIS_URL every
// API process shares them.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "../../core/log.ts";
import type { RateLimiter } from "../../core/rate-limit.ts";
import { ApiError } from "../../lib/api-error.ts";
import { addressKey } from "../address-key.ts";
import { clientAddress } from "../graphql/limits.ts";

/** Wrong admin tokens an address may send a minute before its wrong tokens are refused with 429. */
export const ADMIN_AUTH_FAILURES = 5;
const WINDOWS = [{ limit: ADMIN_AUTH_FAILURES, windowSeconds: 60 }] as const;
const RULE = "admin authentication failures";

export const ADMIN_DOOR_ERRORS = {
  invalidToken: "Missing or invalid admin token",
  tooManyFailures: "Too many failed admin authentications from this address. Wait the Retry-After seconds, then retry.",
} as const;

/** Whether an Authorization header carries the admin token (constant time). */
export function tokenMatches(expected: string, header: string | null): boolean {
  const m = header ? /^Bearer\s+(\S+)\s*$/.exec(header) : null;
  if (!m) return false;
  // Hash both sides first: timingSafeEqual needs equal lengths and must not leak the token's length.
  const a = createHash("sha256").update(m[1]!).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

export interface AdminDoor {
  /**
   * Lets the request in (resolves) when it carries the admin token; otherwise throws the 401, or the 429
   * once its address has failed ADMIN_AUTH_FAILURES times this minute. `challenge` is the 401's
   * WWW-Authenticate.
   */
  admit(request: Request, challenge: Record<string, string>): Promise<void>;
}

export function adminDoor(token: string, limiter: RateLimiter, log: Logger): AdminDoor {
  return {
    async admit(request, challenge) {
      if (tokenMatches(token, request.headers.get("authorization"))) return;
      const address = clientAddress(request);
      // In process (app.fetch in tests, no socket): no address to count, the 401 alone.
      if (address === undefined) throw new ApiError(401, ADMIN_DOOR_ERRORS.invalidToken, {}, challenge);
      const decision = await limiter.check(`admin:${addressKey(address)}`, RULE, WINDOWS);
      if (decision.allowed) throw new ApiError(401, ADMIN_DOOR_ERRORS.invalidToken, {}, challenge);
      log.warn("admin authentication throttled", {
        address,
        retry_after_seconds: decision.retryAfterSeconds,
        limit_per_minute: ADMIN_AUTH_FAILURES,
      });
      throw new ApiError(429, ADMIN_DOOR_ERRORS.tooManyFailures, {}, decision.headers);
    },
  };
}
