// Errors that carry the spec's status and text. A handler throws one; the transport renders it as
// `{error, ...extra}` with that status. Anything else thrown is an internal error and reaches the partner
// only as the fixed sentence below (invariant 7: internal errors never reach a partner), except an outage
// (a database or Redis out of reach, a full disk: core/transient.ts), which is a 503 or 507 (outageError).
import { ApiError } from "../lib/api-error.ts";
import { transientKind } from "./transient.ts";

/** The 403 edge rejection: an HTML page, not JSON, and never about the key (spec Authentication 3). */
export class EdgeRejection extends Error {
  readonly status = 403;
  readonly html =
    "<!DOCTYPE html>\n<html><head><title>Access denied</title></head><body><h1>Access denied</h1><p>error code: 1010</p></body></html>\n";
  constructor() {
    super("error code: 1010");
  }
}

/** Texts the kernel itself answers with, word for word from the spec where the spec gives them. */
export const KERNEL_ERRORS = {
  missingAuthorization: "Missing or invalid Authorization header",
  invalidApiKey: "Invalid API key",
  deactivatedKey: "API key deactivated",
  featureDisabled: (feature: string) => `Feature '${feature}' is not enabled for this partner.`,
  inflightCap: "Too many in-flight jobs for this partner. Wait for some to finish and retry.",
  // Not quoted by the spec; it says only "HTTP 429 when exceeded, wait at least 10 seconds".
  rateLimited: "Rate limit exceeded. Wait at least 10 seconds, then retry.",
  insufficientCredits: (need: number) => `Insufficient credits. Need ${need} credits.`,
  bodyNotJson: "Request body must be JSON",
  bodyTooLarge: "Request body too large",
  notFound: "Not found",
  // Not in the spec (which lists no wrong-method case); RFC 9110's reason phrase, with the Allow header.
  methodNotAllowed: "Method not allowed",
  internal: "Internal server error",
  invalidLimit: "limit must be a positive integer",
  invalidOffset: "offset must be a non-negative integer",
  invalidSince: "since must be an ISO 8601 date or timestamp",
  invalidPartnerJobId: "partner_job_id must be 1-64 characters: letters, digits, '-', '/' or '_'",
  // Hostile input, refused for every operation before its own rules run (core/validation.ts screenInput).
  // Not quoted by the spec, which says only "400 invalid input" and "415 unsupported content type".
  unsupportedContentType: "Content-Type must be application/json",
  controlCharacter: (field: string) =>
    `${field} must not contain control characters (only tab, line feed and carriage return are allowed)`,
  illFormedText: (field: string) => `${field} must be valid Unicode text (it contains an unpaired surrogate)`,
  invalidFieldName: "Field names must be valid Unicode text without control characters",
  reservedFieldName: (field: string) => `${field} is not an accepted field name`,
  tooDeep: (levels: number) => `Request body is nested too deeply (at most ${levels} levels)`,
  // Ours (transports/rest/json-object.ts MAX_JSON_VALUES): a body of millions of tiny values within the byte cap.
  tooManyValues: (values: number) =>
    `Request body holds too many values (at most ${values.toLocaleString("en-US")} array elements and object members)`,
  // A price the ledger cannot hold: the request asked for more than any balance could pay.
  chargeTooLarge: "The price of this request is out of range. Ask for less.",
  balanceTooLarge: "The adjustment would make the balance too large",
  // Outages (outageError below). The spec lists 503 as "service temporarily unavailable" and gives no words,
  // and has no status for a full disk; these texts and 507 (RFC 4918 Insufficient Storage) are ours.
  serviceUnavailable: "Service temporarily unavailable. Retry in a few seconds.",
  // Said only where it is true: an operation whose request made no charge (core/operations.ts).
  storageFullNothingCharged: "The server is out of storage space. Nothing was charged; retry later.",
  storageFull: "The server is out of storage space. Retry later.",
} as const;

/** Retry-After of a 503 outage: the Redis clients reconnect within a second, a database pool on each request. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/**
 * The public answer to an error that is no ApiError but an outage: something briefly out of reach (a lost
 * database or Redis connection, a time-out: core/transient.ts) is 503 with Retry-After, a full disk 507;
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

export const badRequest = (message: string, extra?: Record<string, unknown>) => new ApiError(400, message, extra);
export const notFound = (message: string = KERNEL_ERRORS.notFound) => new ApiError(404, message);
