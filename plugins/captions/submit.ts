// Starting a caption job: shared by POST /captions (a generated video), the single upload and a chunked
// upload's finalize. Everything the partner can get wrong was checked by the caller; here the charge, the
// account's active-job cap and the one-job-per-source rule are decided in the charge's transaction (the
// kernel locks the partner row first, so two submits of one account cannot both take the last slot).
import { ApiError, type OperationContext, type PluginDb } from "mediagate/plugin";
import { CAPTION_ERRORS } from "./errors.ts";
import { DAY_MS, LIMITS, RETENTION } from "./limits.ts";
import { captionPrice } from "./prices.ts";
import { activeCaptionJobs, CAPTIONS_TABLE, captionView, findCaption, sourceBusy } from "./records.ts";
import type { CaptionStyle } from "./types.ts";

export type CaptionSource =
  | { kind: "video"; videoJobId: string }
  /** Keys in the captions blob store (under private/), in order: a chunked upload's parts are its keys. */
  | { kind: "upload"; keys: string[]; bytes: number; seconds: number };

export interface CaptionRequest {
  source: CaptionSource;
  style: CaptionStyle;
  partnerJobId: string | null;
  /** More to do in the charge's transaction once the caption row is in (a chunked upload marks its session finalized). */
  inCharge?: (trx: PluginDb, jobId: string) => Promise<void>;
}

/** What the first run's kernel job keeps as input: only its kind; the rest is on the caption row. */
export interface CaptionJobInput {
  first: true;
}

/** The account's cap on caption jobs at work (partner setting `limits.caption_jobs`). */
export const activeCap = (ctx: OperationContext) => ctx.partner.limits.caption_jobs ?? LIMITS.activeJobs;

/**
 * Inside a submit's transaction, after the kernel inserted the new job (so the count includes it): the two
 * caps of caption jobs (429 and 409), re-burns included.
 */
export async function checkCaps(ctx: OperationContext, trx: PluginDb, videoJobId: string | null): Promise<void> {
  if ((await activeCaptionJobs(trx, ctx.partner.id)) > activeCap(ctx))
    throw new ApiError(429, CAPTION_ERRORS.tooManyActive, {}, { "Retry-After": "10" });
  if (videoJobId && (await sourceBusy(trx, ctx.partner.id, videoJobId)))
    throw new ApiError(409, CAPTION_ERRORS.sourceBusy);
}

/** Charges, records and queues one caption job; resolves with the 202 body. */
export async function submitCaption(ctx: OperationContext, req: CaptionRequest): Promise<Record<string, unknown>> {
  const { source } = req;
  const now = ctx.clock.now();
  // The 202 shows the job as it was committed: read after the commit, a fast worker may already have moved it.
  let row: Awaited<ReturnType<typeof findCaption>>;
  const job = await ctx.submitJob({
    kind: "caption",
    state: "pending",
    credits: captionPrice(ctx),
    partnerJobId: req.partnerJobId,
    description: source.kind === "video" ? "Captions (generated video)" : "Captions (upload)",
    input: { first: true } satisfies CaptionJobInput,
    insufficientCredits: CAPTION_ERRORS.insufficientCredits,
    async insertRecords(trx, [jobId]) {
      await checkCaps(ctx, trx, source.kind === "video" ? source.videoJobId : null);
      await trx
        .insertInto(CAPTIONS_TABLE)
        .values({
          job_id: jobId!,
          partner_id: ctx.partner.id,
          source_kind: source.kind,
          source_video_job_id: source.kind === "video" ? source.videoJobId : null,
          source_keys: source.kind === "upload" ? JSON.stringify(source.keys) : null,
          source_bytes: source.kind === "upload" ? source.bytes : null,
          source_expires_at: source.kind === "upload" ? new Date(now + RETENTION.uploadedSourceDays * DAY_MS) : null,
          style: JSON.stringify(req.style),
        })
        .execute();
      await req.inCharge?.(trx, jobId!);
      row = await findCaption(trx, ctx.partner.id, jobId!);
    },
  });
  return {
    ...captionView(row!, { now, mediaUrl: ctx.mediaUrl, videoAvailable: true }),
    credits_remaining: job.creditsRemaining,
  };
}
