// fal's queue API and webhooks as they appear on the wire, in one table: the default URLs, the status names,
// the headers, the answers of a cancel, and the texts our errors say. From fal's public documentation:
// docs.fal.ai "Queue" (submit, status, response, cancel; status_url/response_url/cancel_url under the app's
// owner and name only), "Webhooks" (`fal_webhook`, the OK/ERROR body, verification), "Request errors"
// (`detail` plus `error_type`) and the Inference API reference (202 while queued or running, 200 when done).

/** Where the queue API lives when the providers file gives no `base_url`. */
export const FAL_BASE_URL = "https://queue.fal.run";
/** Where fal publishes the ED25519 keys its webhooks are signed with (a JWKS; older docs name rest.alpha.fal.ai). */
export const FAL_JWKS_URL = "https://rest.fal.ai/.well-known/jwks.json";

/** The submit's query parameter naming the webhook fal POSTs to when the request ends. */
export const WEBHOOK_QUERY = "fal_webhook";

export const STATUS = { inQueue: "IN_QUEUE", inProgress: "IN_PROGRESS", completed: "COMPLETED" } as const;
export type FalStatus = (typeof STATUS)[keyof typeof STATUS];

/** What `PUT cancel_url` answers in its `status` field. */
export const CANCEL = {
  requested: "CANCELLATION_REQUESTED",
  alreadyCompleted: "ALREADY_COMPLETED",
  notFound: "NOT_FOUND",
} as const;

/** The webhook body's `status`. */
export const WEBHOOK_STATUS = { ok: "OK", error: "ERROR" } as const;

/** The four headers of a signed webhook (lowercase, as node and fetch's Headers give them). */
export const WEBHOOK_HEADERS = {
  requestId: "x-fal-webhook-request-id",
  userId: "x-fal-webhook-user-id",
  timestamp: "x-fal-webhook-timestamp",
  signature: "x-fal-webhook-signature",
} as const;

/** How far a webhook's timestamp may be from our clock, in seconds (fal's documented tolerance). */
export const WEBHOOK_TOLERANCE_S = 300;

/** The header fal names the category of a request error with (also `error_type` in the body). */
export const ERROR_TYPE_HEADER = "x-fal-error-type";

/** What a submit answers (the URLs fal serves the request under; never rebuilt from the model id). */
export interface SubmitAnswer {
  request_id: string;
  status_url: string;
  response_url: string;
  cancel_url: string;
  queue_position?: number;
}

/** What a status look answers. `error`/`error_type` appear on a COMPLETED request that failed. */
export interface StatusAnswer {
  status: string;
  queue_position?: number;
  logs?: Array<{ message?: string }> | null;
  error?: string | null;
  error_type?: string | null;
}

/** The webhook's body. */
export interface WebhookBody {
  request_id: string;
  gateway_request_id?: string;
  status: string;
  payload: unknown;
  error?: string;
  payload_error?: string;
}

/** The texts of our errors (no key, no URL: the upstream's own words only after redaction and a cap). */
export const TEXT = {
  badModel: "fal model id is not owner/app[/path]",
  submitFailed: (why: string) => `fal submit failed (${why})`,
  submitAnswered: (status: number, detail: string) => `fal submit answered ${status}${detail}`,
  submitMalformed: "fal submit answered no request id and URLs",
  lookFailed: (what: string, why: string) => `fal ${what} failed (${why})`,
  lookAnswered: (what: string, status: number, detail: string) => `fal ${what} answered ${status}${detail}`,
  lookMalformed: (what: string) => `fal ${what} answered malformed JSON`,
  unknownStatus: "fal status answered an unknown status",
  unknownRequest: "fal does not know the request",
  requestFailed: (status: number, detail: string) => `fal request failed (${status}${detail})`,
  requestFailedType: (type: string, detail: string) => `fal request failed (${type}${detail})`,
  badHandle: "fal handle holds no usable URLs",
  cancelAnswered: (status: number) => `fal cancel answered ${status}`,
  cancelFailed: (why: string) => `fal cancel failed (${why})`,
  inQueue: (position: number | undefined) => (position === undefined ? "in queue" : `in queue (position ${position})`),
  inProgress: "in progress",
} as const;
