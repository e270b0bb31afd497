// Field rules every plugin shares: partner_job_id (convention 5). Pagination (convention 8) is lib/paging.ts.
import { z } from "zod";
import { KERNEL_ERRORS } from "./errors.ts";

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
