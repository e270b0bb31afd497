// Errors of the operation pipeline as GraphQL errors. The message is the REST `error` text word for word,
// and the extensions carry the REST status and the rest of the REST error body (`credits_remaining` on
// 402, `feature` on a switched-off feature), so a client handles both APIs with one table of texts.
//
// The HTTP status of a GraphQL response stays 200 even when a field failed: a document may ask for
// several fields, some of which succeed, and GraphQL clients read errors from the body. That is why the
// REST status travels in `extensions.status` instead. (Setting `extensions.http` would make yoga change
// the HTTP status; we never do.)
import { GraphQLError } from "graphql";
import { EdgeRejection, outageError } from "../../core/errors.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";

const CODES: Readonly<Record<number, string>> = {
  400: "BAD_REQUEST",
  401: "UNAUTHENTICATED",
  402: "PAYMENT_REQUIRED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  406: "NOT_ACCEPTABLE",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE_ENTITY",
  429: "RATE_LIMITED",
  500: "INTERNAL_SERVER_ERROR",
  502: "BAD_GATEWAY",
  503: "SERVICE_UNAVAILABLE",
  507: "INSUFFICIENT_STORAGE",
};

export const codeFor = (status: number): string =>
  CODES[status] ?? (status >= 500 ? "INTERNAL_SERVER_ERROR" : "BAD_REQUEST");

export function statusError(status: number, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { ...extra, code: codeFor(status), status } });
}

/**
 * Renders what the pipeline threw. Only ApiError and the edge rejection carry public text; anything else
 * is reported through `onInternal` and reaches the client as the fixed sentence REST uses.
 */
export function toGraphqlError(
  error: unknown,
  headers: Record<string, string>,
  onInternal: (error: unknown) => void,
): GraphQLError {
  if (error instanceof GraphQLError) return error;
  if (error instanceof EdgeRejection) return statusError(403, error.message);
  if (error instanceof ApiError) return fromApiError(error, headers);
  onInternal(error);
  // A database or Redis out of reach, or a full disk: SERVICE_UNAVAILABLE (503) with retry_after_seconds, or
  // 507, as REST answers them (core/errors.ts outageError).
  const outage = outageError(error);
  if (outage) return fromApiError(outage, headers);
  return statusError(500, KERNEL_ERRORS.internal);
}

function fromApiError(error: ApiError, headers: Record<string, string>): GraphQLError {
  // WebSocket and SSE clients never see HTTP headers, so a refusal says how long to wait in the body too.
  const retryAfter = Number(headers["Retry-After"] ?? error.headers["Retry-After"]);
  return statusError(error.status, error.message, {
    ...error.extra,
    ...(Number.isFinite(retryAfter) ? { retry_after_seconds: retryAfter } : {}),
  });
}
