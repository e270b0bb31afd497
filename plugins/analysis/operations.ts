// The endpoints of ad analysis (spec part 1, "Endpoints: Ad analysis"); index.ts says where the spec is silent.

import { ApiError, isJobId, operation, pageBody, pageShape } from "mediagate/plugin";
import { z } from "zod";
import { ANALYSIS_ERRORS } from "./errors.ts";
import { AnalyzeInput, ListInput } from "./input.ts";
import { analysisPrice } from "./prices.ts";
import { analyses, insertAnalysis, recordView, statusView } from "./records.ts";

const texts = z.object({
  summary: z.string(),
  transcription: z.string(),
  analysis: z.string(),
  ugc_script: z.string(),
});

export const analyze = operation({
  method: "POST",
  path: "/analyze",
  status: 202,
  inflight: true,
  bodyNotJson: ANALYSIS_ERRORS.bodyNotJson,
  summary: "Analyze a Facebook, Instagram or TikTok ad: summary, transcription, analysis and a UGC script",
  input: AnalyzeInput,
  output: z.object({
    job_id: z.string(),
    status: z.literal("queued"),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    const { url, link, partnerJobId } = ctx.input;
    const job = await ctx.submitJob({
      kind: "analysis",
      state: "queued",
      credits: ctx.priceFor(analysisPrice),
      partnerJobId,
      description: `Ad analysis: ${link.platform}`,
      input: {},
      insufficientCredits: () => ANALYSIS_ERRORS.insufficientCredits,
      insertRecords: (trx, [jobId]) =>
        insertAnalysis(trx, {
          job_id: jobId!,
          partner_id: ctx.partner.id,
          url,
          normalized_url: link.normalizedUrl,
          platform: link.platform,
        }),
    });
    return {
      job_id: job.jobId,
      status: "queued" as const,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

export const status = operation({
  method: "GET",
  path: "/status/<job_id>",
  summary: "One ad analysis: its stage while it runs, its four texts once complete",
  output: z.object({
    job_id: z.string(),
    status: z.string(),
    message: z.string().nullable().optional(),
    error: z.string().nullable().optional(),
    result: texts.nullable().optional(),
  }),
  async handle(ctx) {
    const id = ctx.params.job_id ?? "";
    if (!isJobId(id)) throw new ApiError(400, ANALYSIS_ERRORS.invalidJobId);
    const record = await analyses.find(ctx.db, ctx.partner.id, id);
    if (!record) throw new ApiError(404, ANALYSIS_ERRORS.jobNotFound);
    return statusView(record);
  },
});

export const list = operation({
  method: "GET",
  path: "/analyses",
  summary: "This account's ad analyses, newest first",
  input: ListInput,
  output: pageShape(
    "analyses",
    z.object({
      job_id: z.string(),
      partner_job_id: z.string().nullable(),
      status: z.string(),
      credits_used: z.number().int(),
      created_at: z.string(),
      result: texts.nullable(),
    }),
  ),
  async handle(ctx) {
    const page = await analyses.page(ctx.db, ctx.partner.id, ctx.input);
    return pageBody("analyses", page, ctx.input, recordView);
  },
});
