// Validation pieces every plugin shares: pagination (convention 8) and partner_job_id (convention 5).
// Each list names its bounds here, so the whole of convention 8 reads as one table.
import { z } from "zod";
import { KERNEL_ERRORS } from "./errors.ts";

export const PAGE_BOUNDS = {
  standard: { default: 20, max: 50 },
  scriptRunner: { default: 20, max: 100 },
  omniBatches: { default: 20, max: 100 },
  voiceovers: { default: 30, max: 200 },
  music: { default: 30, max: 200 },
  transactions: { default: 50, max: 200 },
  videos: { default: 20, max: 200 },
  omniVideos: { default: 20, max: 200 },
  socialDownloads: { default: 25, max: 100 },
  webhookDeliveries: { default: 50, max: 200 },
} as const satisfies Record<string, { default: number; max: number }>;

export type PageBounds = (typeof PAGE_BOUNDS)[keyof typeof PAGE_BOUNDS];

// Choice where the spec is silent: a limit above the maximum is clamped to it (the response's `limit` says
// what was applied); a limit that is not a positive integer, or a negative offset, is a 400.
const integerText = /^\d+$/;

export function limitParam(bounds: PageBounds) {
  return z
    .unknown()
    .optional()
    // What documents and GraphQL show; the transform below is what accepts query-string text.
    .meta({ type: "integer", minimum: 1, maximum: bounds.max, default: bounds.default })
    .transform((value, ctx) => {
      if (value === undefined || value === "") return bounds.default;
      const text = String(value);
      if (!integerText.test(text) || Number(text) < 1) {
        ctx.addIssue({ code: "custom", message: KERNEL_ERRORS.invalidLimit });
        return z.NEVER;
      }
      return Math.min(Number(text), bounds.max);
    });
}

export const offsetParam = z.unknown().optional().meta({ type: "integer", minimum: 0, default: 0 }).transform((value, ctx) => {
  if (value === undefined || value === "") return 0;
  const text = String(value);
  if (!integerText.test(text)) {
    ctx.addIssue({ code: "custom", message: KERNEL_ERRORS.invalidOffset });
    return z.NEVER;
  }
  return Number(text);
});

/** `limit` and `offset` of a list endpoint with the given bounds. */
export function pageQuery(bounds: PageBounds) {
  return z.object({ limit: limitParam(bounds), offset: offsetParam });
}

const PARTNER_JOB_ID = /^[A-Za-z0-9\-/_]{1,64}$/;
const PARTNER_JOB_ID_MUSIC = /^[A-Za-z0-9_-]{1,64}$/;

/** Optional `partner_job_id` (convention 5); `music` selects the narrower music-extension alphabet. */
export function partnerJobIdField(options: { music?: boolean; message?: string } = {}) {
  const pattern = options.music ? PARTNER_JOB_ID_MUSIC : PARTNER_JOB_ID;
  const message = options.message ?? KERNEL_ERRORS.invalidPartnerJobId;
  return z
    .unknown()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === null) return null;
      if (typeof value !== "string" || !pattern.test(value)) {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      return value;
    });
}
