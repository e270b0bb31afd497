// Replicate's predictions API as the client speaks it (https://replicate.com/docs/reference/http,
// https://replicate.com/docs/topics/predictions/lifecycle): the public base URL, the prediction statuses and
// what each means for a job, and the texts of the client's failures (no key, no URL in any of them).

export const REPLICATE_BASE_URL = "https://api.replicate.com/v1";

/** Still working: `starting` (booting a worker, possibly a cold boot) and `processing` (predict() running). */
export const PENDING_STATUSES: ReadonlySet<string> = new Set(["starting", "processing"]);
export const SUCCEEDED_STATUS = "succeeded";
/**
 * Ended without output: `failed` (the model raised; `error` says why), `canceled` (by us, or past its deadline
 * once running) and `aborted` (past its deadline before it started running).
 */
export const ENDED_STATUSES: ReadonlySet<string> = new Set(["failed", "canceled", "aborted"]);

/** Time and size caps of one API call (a prediction object holds its input and its logs). */
export const CALL_LIMITS = {
  submit: { timeoutMs: 30_000, maxBytes: 4_000_000 },
  poll: { timeoutMs: 20_000, maxBytes: 4_000_000 },
  cancel: { timeoutMs: 10_000, maxBytes: 4_000_000 },
} as const;

/** A model id a route may name: `owner/name`, `owner/name:<version id>`, or a bare 64-hex version id. */
export const MODEL_ID =
  /^(?:([A-Za-z0-9][A-Za-z0-9._-]*)\/([A-Za-z0-9][A-Za-z0-9._-]*)(?::([A-Za-z0-9]+))?|([0-9a-f]{64}))$/;

export const REPLICATE_ERRORS = {
  badModel: "the route's Replicate model is not owner/name, owner/name:version or a version id",
  unreachable: (step: string, what: string) => `Replicate could not be reached to ${step} (${what})`,
  refused: (step: string, status: number, detail: string) =>
    `Replicate answered ${status} to ${step}${detail ? `: ${detail}` : ""}`,
  unreadable: (step: string) => `Replicate's answer to ${step} is not a prediction`,
  failed: (error: string) => `the Replicate prediction failed${error ? `: ${error}` : ""}`,
  canceled: "the Replicate prediction was canceled",
  aborted: "the Replicate prediction was aborted: its deadline passed before it started",
  gone: "the Replicate prediction is no longer found",
} as const;

/** The step names the texts above use. */
export const STEPS = {
  submit: "create the prediction",
  poll: "read the prediction",
  cancel: "cancel the prediction",
} as const;
