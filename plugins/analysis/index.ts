// Ad analysis (spec part 1, "Analysis record", "States and transitions: Ad analysis", "Endpoints: Ad analysis",
// the analysis rows of the error and rate-limit tables, the in-flight cap): a link to an ad becomes a breakdown
// in four texts (`summary`, `transcription`, `analysis`, `ugc_script`), every sentence grounded in what was
// measured on the downloaded media. The pipeline is job.ts; the measurements measure.ts and facts.ts.
//
// Choices where the spec is silent, written down here:
// - The host refusal text: errors.ts `invalidUrl` (the spec asks for "a message asking for a valid URL of one
//   of the three networks"). A `url` that is not a string counts as no URL.
// - The hosts: the shared table (lib/social-links.ts), the rows marked `analyze`; an ad library link
//   (www.facebook.com/ads/library/?id=...) is on an allowed host; a bare numeric id becomes that link.
// - GET /status/<job_id>: an id that is not `svc-` + 8 hex is 400 `Invalid job ID`; a well-formed id that is
//   missing or another account's is 404 `Job not found`. While running: `job_id`, `status`, `message`; once
//   complete: `job_id`, `status`, `result`; on `error` (shape not shown by the spec): `job_id`, `status`,
//   `message` and `error`, both the failure's sentence.
// - GET /analyses: newest first; `result` is null until the analysis is complete; `credits_used` is the charge
//   (a failed analysis was refunded: the ledger shows the refund).
// - Downloading uses the social downloader's extractor directly: the account's download quota, its in-flight
//   cap of 2 and its pause switch are the downloader's, not analysis's.
import { z } from "zod";
import { ApiError, definePlugin, operation, pageBody, pageShape } from "mediagate/plugin";
import { ANALYSIS_ERRORS } from "./errors.ts";
import { AnalyzeInput, ListInput } from "./input.ts";
import { analysisJob } from "./job.ts";
import { COSTS } from "./limits.ts";
import { analysisMigrations } from "./migrations.ts";
import { ANALYSES, analyses, JOB_ID, recordView, statusView } from "./records.ts";

const texts = z.object({ summary: z.string(), transcription: z.string(), analysis: z.string(), ugc_script: z.string() });

const analyze = operation({
  method: "POST",
  path: "/analyze",
  status: 202,
  inflight: true,
  bodyNotJson: ANALYSIS_ERRORS.bodyNotJson,
  summary: "Analyze a Facebook, Instagram or TikTok ad: summary, transcription, analysis and a UGC script",
  input: AnalyzeInput,
  output: z.object({ job_id: z.string(), status: z.literal("queued"), credits_used: z.number().int(), credits_remaining: z.number().int() }),
  async handle(ctx) {
    const { url, link, partnerJobId } = ctx.input;
    const job = await ctx.submitJob({
      kind: "analysis",
      state: "queued",
      credits: ctx.priceFor({ lines: [{ key: ["analysis"], rate: COSTS.analysis, units: 1 }] }),
      partnerJobId,
      description: `Ad analysis: ${link.platform}`,
      input: {},
      insufficientCredits: () => ANALYSIS_ERRORS.insufficientCredits,
      async within(trx, [jobId]) {
        await trx.insertInto(ANALYSES).values({ job_id: jobId!, partner_id: ctx.partner.id, url, normalized_url: link.normalizedUrl, platform: link.platform }).execute();
      },
    });
    return { job_id: job.jobId, status: "queued" as const, credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
  },
});

const status = operation({
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
    if (!JOB_ID.test(id)) throw new ApiError(400, ANALYSIS_ERRORS.invalidJobId);
    const record = await analyses.find(ctx.db, ctx.partner.id, id);
    if (!record) throw new ApiError(404, ANALYSIS_ERRORS.jobNotFound);
    return statusView(record);
  },
});

const list = operation({
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

export default definePlugin({
  name: "analysis",
  requires: ["social.extract", "media", "speech.transcribe", "text.generate"],
  costs: COSTS,
  jobs: { analysis: analysisJob },
  operations: [analyze, status, list],
  migrations: analysisMigrations,
});
