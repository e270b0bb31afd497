// Webhook management (spec part 1 "Webhook management", "Webhook settings and delivery records"). Events
// are made by the kernel when a job kind that declares `events` ends (core/webhooks.ts); this plugin is the
// partner's view: settings, a synchronous test send, and the delivery records.
//
// Choices where the spec is silent, written down here:
// - The 400 text for a URL that is not public https: `url must be a public https URL` (the spec describes
//   the error without quoting it; the other URL fields of the spec word it this way).
// - POST /webhook answers like GET /webhook: `request_id` plus the settings after the change.
// - `webhook.test` carries `data: {message}`; its delivery is listed in GET /webhook/deliveries with
//   `job_id` null and `max_attempts` 1, since it is never retried.
// - `status_code` of the test is null when no HTTP answer came (timeout, refused, not public).
// - A delivery's status is `pending` while attempts remain (the spec's "in retry"), then `delivered` or `failed`.
// - Beyond the spec (additive, allowed by its versioning rule): `POST /webhook/deliveries/<event_id>/resend`
//   sends a stored event again, byte for byte, as a new delivery record (the partner console's resend
//   button). 202 with the new record's fields; 404 for an event of another account or none; 409 while a
//   delivery of the event is still pending; 400 when there is nowhere to send it. 10 a minute per key.

import {
  ApiError,
  badRequest,
  limitParam,
  notFound,
  type OperationContext,
  operation,
  PAGE_BOUNDS,
} from "mediagate/plugin";
import { z } from "zod";
import { WEBHOOK_ERRORS } from "./errors.ts";

// The success bodies, declared so OpenAPI and GraphQL type them (times of deliveries are unix seconds).
const settingsOutput = z.object({
  url: z.string().nullable(),
  secret: z.string().nullable(),
  events: z.array(z.string()),
  max_attempts: z.number().int(),
  retry_delays_seconds: z.array(z.number().int()),
  signature_header: z.string(),
});
const testOutput = z.object({
  delivered: z.boolean(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  event_id: z.string(),
  url: z.string(),
});
const unixSeconds = z.number().int().nullable();
const deliveriesOutput = z.object({
  deliveries: z.array(
    z.object({
      event_id: z.string(),
      event: z.string(),
      job_id: z.string().nullable(),
      url: z.string(),
      status: z.enum(["pending", "delivered", "failed"]),
      attempt: z.number().int(),
      max_attempts: z.number().int(),
      last_status_code: z.number().int().nullable(),
      last_error: z.string().nullable(),
      created_at: unixSeconds,
      last_attempt_at: unixSeconds,
      next_attempt_at: unixSeconds,
      delivered_at: unixSeconds,
    }),
  ),
  limit: z.number().int(),
});

const resendOutput = z.object({
  event_id: z.string(),
  event: z.string(),
  url: z.string(),
  status: z.literal("pending"),
});

/** Syntax, then DNS: every address the name resolves to must be public (checked again at each delivery). */
async function publicUrl(ctx: OperationContext<unknown>, text: string): Promise<string> {
  const guard = ctx.capability("outbound");
  const checked = guard.checkUrl(text);
  if (!checked.ok) throw badRequest(WEBHOOK_ERRORS.notPublic);
  try {
    await guard.resolvePublic(checked.url);
  } catch {
    throw badRequest(WEBHOOK_ERRORS.notPublic);
  }
  return checked.url.href;
}

export const getSettings = operation({
  method: "GET",
  path: "/webhook",
  summary: "The account's webhook settings",
  output: settingsOutput,
  async handle(ctx) {
    return { ...(await ctx.webhooks.settings(ctx.partner.id)) };
  },
});

export const setSettings = operation({
  method: "POST",
  path: "/webhook",
  summary: "Set or clear the webhook URL, or rotate the signing secret",
  output: settingsOutput,
  input: z.object({
    url: z
      .union([z.string(), z.null()], { error: WEBHOOK_ERRORS.urlType })
      .optional()
      .meta({ type: ["string", "null"], description: 'public https URL; null or "" clears it' }),
    rotate_secret: z.boolean({ error: WEBHOOK_ERRORS.rotateSecret }).optional(),
  }),
  async handle(ctx) {
    const { url, rotate_secret } = ctx.input;
    const next = url === undefined || url === null || url === "" ? url : await publicUrl(ctx, url);
    return { ...(await ctx.webhooks.update(ctx.partner.id, { url: next, rotateSecret: rotate_secret === true })) };
  },
});

export const testSend = operation({
  method: "POST",
  path: "/webhook/test",
  summary: "Send one signed webhook.test event now (not retried)",
  output: testOutput,
  input: z.object({ url: z.string({ error: WEBHOOK_ERRORS.notPublic }).optional() }),
  async handle(ctx) {
    const target = ctx.input.url ?? (await ctx.webhooks.settings(ctx.partner.id)).url;
    if (!target) throw badRequest(WEBHOOK_ERRORS.noUrl);
    const url = await publicUrl(ctx, target);
    return { ...(await ctx.webhooks.test(ctx.partner.id, url)) };
  },
});

export const deliveries = operation({
  method: "GET",
  path: "/webhook/deliveries",
  summary: "Delivery records, newest first",
  output: deliveriesOutput,
  input: z.object({
    limit: limitParam(PAGE_BOUNDS.webhookDeliveries),
    job_id: z.string().optional().meta({ type: "string", description: "only this job's deliveries" }),
  }),
  async handle(ctx) {
    const rows = await ctx.webhooks.deliveries(ctx.partner.id, { limit: ctx.input.limit, jobId: ctx.input.job_id });
    return { deliveries: rows, limit: ctx.input.limit };
  },
});

const RESEND_REFUSALS = {
  not_found: () => notFound(WEBHOOK_ERRORS.eventNotFound),
  pending: () => new ApiError(409, WEBHOOK_ERRORS.stillPending),
  no_url: () => badRequest(WEBHOOK_ERRORS.noResendUrl),
} as const;

export const resend = operation({
  method: "POST",
  path: "/webhook/deliveries/<event_id>/resend",
  summary: "Send a stored event again, byte for byte, as a new delivery (beyond the spec)",
  status: 202,
  output: resendOutput,
  async handle(ctx) {
    const result = await ctx.webhooks.resend(ctx.partner.id, ctx.params.event_id!);
    if (result.outcome !== "queued") throw RESEND_REFUSALS[result.outcome]();
    return { event_id: result.event_id, event: result.event, url: result.url, status: "pending" as const };
  },
});
