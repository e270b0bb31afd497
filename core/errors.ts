// The kernel's part of the error answers; the public part (badRequest, notFound and the kernel's texts) is
// lib/errors.ts. A handler throws an ApiError; the transport renders it as `{error, ...extra}` with that status.
// Anything else thrown is an internal error and reaches the partner only as the fixed KERNEL_ERRORS.internal
// (invariant 7: internal errors never reach a partner), except an outage (a database or Redis out of reach, a
// full disk: lib/transient.ts), which is a 503 or 507 (outageError).
import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";
import { transientKind } from "../lib/transient.ts";

/** The 403 edge rejection: an HTML page, not JSON, and never about the key (spec Authentication 3). */
export class EdgeRejection extends Error {
  readonly status = 403;
  readonly html =
    "<!DOCTYPE html>\n<html><head><title>Access denied</title></head><body><h1>Access denied</h1><p>error code: 1010</p></body></html>\n";
  constructor() {
    super("error code: 1010");
  }
}

/** Retry-After of a 503 outage: the Redis clients reconnect within a second, a database pool on each request. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/**
 * The public answer to an error that is no ApiError but an outage: something briefly out of reach (a lost
 * database or Redis connection, a time-out: lib/transient.ts) is 503 with Retry-After, a full disk 507;
 * anything else is null (an internal error, the fixed 500). `nothingCharged`: the caller knows this request
 * charged nothing, which the 507's text may then say. The original error rides along as `cause`, for the log.
 */
export function outageError(err: unknown, options: { nothingCharged?: boolean } = {}): ApiError | null {
  const kind = transientKind(err);
  if (kind === null) return null;
  const answer =
    kind === "disk"
      ? new ApiError(507, options.nothingCharged ? KERNEL_ERRORS.storageFullNothingCharged : KERNEL_ERRORS.storageFull)
      : new ApiError(503, KERNEL_ERRORS.serviceUnavailable, {}, { "Retry-After": String(OUTAGE_RETRY_AFTER_SECONDS) });
  answer.cause = err;
  return answer;
}
