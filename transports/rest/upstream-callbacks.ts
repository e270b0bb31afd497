// Upstream callbacks: `POST /upstream/<provider>/callback` lets a provider say its work moved, so the job
// waiting on it is polled at once instead of at its next scheduled poll (core/upstream-waits.ts). The call
// only wakes a poll, it never carries a result: a forged or replayed callback can at worst cause one early
// poll, and still it must be signed with the provider's key (derived from UPSTREAM_CALLBACK_SECRET; the
// submit options hand it to the provider), over its timestamp and body, within 5 minutes of our clock. Off
// (404) unless the secret is set. A provider with `verifyCallback` (an upstream gateway's route, issue 39: the
// `upstream.gateway` collection names it) is checked by the service's own signature instead, secret or not.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { callbackSecret, PROVIDER_NAME } from "../../core/upstream-waits.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { requestIdOf } from "../http-conventions.ts";
import { json, readBodyCapped } from "./respond.ts";

/** Error texts of the route (not in the spec: providers call it, not partners). */
export const CALLBACK_ERRORS = {
  signature: "Invalid signature.",
  body: 'Body must be a JSON object {"id": "<upstream id>"}.',
  tooLarge: "Callback body too large.",
} as const;

const MAX_BODY_BYTES = 16 * 1024;
/** How far a callback's timestamp may be from our clock. */
const MAX_SKEW_MS = 5 * 60_000;

export function mountUpstreamCallbacks(app: H3, kernel: Kernel): void {
  app.post("/upstream/:provider/callback", async (event) => {
    const requestId = requestIdOf(event);
    const secret = kernel.config.upstreamCallbackSecret;
    const provider = event.context.params?.provider ?? "";
    if (!PROVIDER_NAME.test(provider)) return json(404, { error: KERNEL_ERRORS.notFound, request_id: requestId });
    // A provider that verifies the service's own signature (an upstream gateway's route) is on without the secret.
    const verifier = kernel
      .contributions("upstream.gateway")
      .map((gateway) => gateway.callbackProvider(provider))
      .find((p) => p?.verifyCallback);
    if (!secret && !verifier) return json(404, { error: KERNEL_ERRORS.notFound, request_id: requestId });
    const request = event.req as Request;
    let body: Uint8Array;
    try {
      // Counted as it streams (a chunked body declares no length): nothing unsigned is read past the cap.
      body = await readBodyCapped(request, MAX_BODY_BYTES, CALLBACK_ERRORS.tooLarge);
    } catch (err) {
      if (err instanceof ApiError) return json(err.status, { error: err.message, request_id: requestId });
      return json(400, { error: CALLBACK_ERRORS.body, request_id: requestId }); // the client went away mid-body
    }
    let id: unknown;
    if (verifier) {
      const found = await verifier.verifyCallback!({ headers: request.headers, body }).catch((err: unknown) => {
        kernel.log.warn(`upstream callback of ${provider}: verification failed`, err);
        return null;
      });
      if (!found) return json(401, { error: CALLBACK_ERRORS.signature, request_id: requestId });
      id = found.id;
    } else {
      // Signed with its time, and only recent: a captured callback cannot be replayed later.
      const stamp = request.headers.get("x-upstream-timestamp") ?? "";
      const at = /^\d{1,12}$/.test(stamp) ? Number(stamp) * 1000 : NaN;
      if (!(Math.abs(kernel.clock.now() - at) <= MAX_SKEW_MS))
        return json(401, { error: CALLBACK_ERRORS.signature, request_id: requestId });
      const sent = /^sha256=([0-9a-fA-F]{64})$/.exec(request.headers.get("x-upstream-signature") ?? "")?.[1];
      const expected = createHmac("sha256", callbackSecret(secret!, provider))
        .update(`${stamp}.`)
        .update(body)
        .digest();
      if (!sent || !timingSafeEqual(Buffer.from(sent, "hex"), expected))
        return json(401, { error: CALLBACK_ERRORS.signature, request_id: requestId });
      try {
        id = (JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body)) as { id?: unknown })?.id;
      } catch {
        id = undefined;
      }
    }
    if (typeof id !== "string" || id.length === 0 || id.length > 512 || id.includes("\0"))
      return json(400, { error: CALLBACK_ERRORS.body, request_id: requestId });
    const woken = await kernel.jobs.wakeUpstream(provider, id);
    // `woken`: a job waits on that id and will be polled at once (or right after the poll under way).
    return json(202, { ok: true, woken, request_id: requestId });
  });
}
