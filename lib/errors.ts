// Errors that carry the spec's status and text: a handler throws one (badRequest, notFound, or an ApiError of its
// own) and the transport renders it as `{error, ...extra}` with that status. The texts the kernel answers with
// live here, on the floor, because the shared field rules (lib/time.ts, lib/paging.ts, lib/validation.ts) answer
// with them too. Anything else thrown is an internal error; core/errors.ts turns an outage into 503 or 507.
import { ApiError } from "./api-error.ts";

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
  // Hostile input, refused for every operation before its own rules run (core/hostile-input.ts screenInput).
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

export const badRequest = (message: string, extra?: Record<string, unknown>) => new ApiError(400, message, extra);
export const notFound = (message: string = KERNEL_ERRORS.notFound) => new ApiError(404, message);
