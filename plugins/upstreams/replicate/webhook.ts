// Replicate's webhooks, verified as its guide describes (https://replicate.com/docs/topics/webhooks/verify-webhook):
// Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature`, an HMAC-SHA256 over
// `<id>.<timestamp>.<raw body>` keyed with the account's `whsec_...` signing secret (GET /v1/webhooks/default/secret),
// a timestamp within five minutes. The body is the prediction object; its `id` names the work to look at.

import { verifyStandardWebhook } from "mediagate/plugin";

/** Longest prediction id taken from a body (Replicate's are 26 characters). */
const MAX_ID_CHARS = 200;

export interface VerifyReplicateWebhookOptions {
  /** The receiver's clock in ms (tests); default Date.now. */
  now?: () => number;
}

/** The prediction id of a genuine, fresh webhook call; null when it is forged, stale, tampered or malformed. */
export function verifyReplicateWebhook(
  secret: string,
  request: { headers: Headers; body: Uint8Array },
  options: VerifyReplicateWebhookOptions = {},
): { id: string } | null {
  if (!verifyStandardWebhook(secret, request, options.now ? { now: options.now } : {})) return null;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(request.body).toString("utf8"));
  } catch {
    return null;
  }
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" && id !== "" && id.length <= MAX_ID_CHARS ? { id } : null;
}
