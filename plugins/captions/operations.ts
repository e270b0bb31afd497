// The caption job's endpoints (spec part 2 "Caption jobs"): submit from one of the account's videos, read one
// or all, read and edit the cards. The uploads' endpoints are uploads/operations.ts, the style whitelist's
// style/operations.ts.

import {
  ApiError,
  notFound,
  type OperationContext,
  operation,
  PAGE_BOUNDS,
  pageQuery,
  pageShape,
} from "mediagate/plugin";
import { z } from "zod";
import { CAPTIONS_FEATURE } from "./config.ts";
import { CAPTION_ERRORS } from "./errors.ts";
import { CaptionInput, EditInput } from "./input.ts";
import type { ReburnInput } from "./job.ts";
import { LIMITS } from "./limits.ts";
import {
  CAPTIONS_TABLE,
  type CaptionRow,
  captionView,
  chunksOf,
  findCaption,
  listCaptions,
  reburnRunning,
  sourceAvailable,
} from "./records.ts";
import { captionIds, captionJobOut, editState, submittedOut } from "./schemas.ts";
import { findVideo } from "./source.ts";
import { checkCaps, submitCaption } from "./submit.ts";

/** Whether a generated-video source can still be read (null for uploads, which answer from their expiry). */
async function videoAvailable(ctx: OperationContext, row: CaptionRow): Promise<boolean | null> {
  if (row.source_kind !== "video") return null;
  const video = await findVideo(ctx, ctx.partner.id, row.source_video_job_id!);
  return video?.complete === true;
}

async function view(ctx: OperationContext, row: CaptionRow) {
  return captionView(row, {
    now: ctx.clock.now(),
    mediaUrl: ctx.mediaUrl,
    videoAvailable: await videoAvailable(ctx, row),
  });
}

async function ownedCaption(ctx: OperationContext): Promise<CaptionRow> {
  const row = await findCaption(ctx.db, ctx.partner.id, ctx.params.job_id!);
  if (!row) throw notFound(CAPTION_ERRORS.jobNotFound);
  return row;
}

export const createCaption = operation({
  method: "POST",
  path: "/captions",
  feature: CAPTIONS_FEATURE,
  status: 202,
  summary: "Burn captions into one of your completed generated videos",
  input: CaptionInput,
  output: submittedOut,
  async handle(ctx) {
    const video = await findVideo(ctx, ctx.partner.id, ctx.input.video_job_id);
    if (!video) throw notFound(CAPTION_ERRORS.videoNotFound);
    if (!video.complete) throw new ApiError(409, CAPTION_ERRORS.videoNotComplete);
    return submitCaption(ctx, {
      source: { kind: "video", videoJobId: video.job_id },
      style: ctx.input.style,
      partnerJobId: ctx.input.partner_job_id,
    });
  },
});

export const captionStatus = operation({
  method: "GET",
  path: "/captions/<job_id>",
  feature: CAPTIONS_FEATURE,
  summary: "One caption job",
  output: z.object(captionJobOut),
  async handle(ctx) {
    return view(ctx, await ownedCaption(ctx));
  },
});

export const listCaptionJobs = operation({
  method: "GET",
  path: "/captions",
  feature: CAPTIONS_FEATURE,
  summary: "This account's caption jobs, newest first",
  input: pageQuery(PAGE_BOUNDS.standard),
  output: pageShape("captions", z.object(captionJobOut)),
  async handle(ctx) {
    const { rows, total } = await listCaptions(ctx.db, ctx.partner.id, ctx.input);
    return {
      captions: await Promise.all(rows.map((row) => view(ctx, row))),
      total,
      limit: ctx.input.limit,
      offset: ctx.input.offset,
    };
  },
});

export const captionChunks = operation({
  method: "GET",
  path: "/captions/<job_id>/chunks",
  feature: CAPTIONS_FEATURE,
  summary: "The current caption text and timings (edits win over the transcript)",
  output: z.object({
    ...captionIds,
    status: z.string(),
    chunks: z.array(z.object({ start: z.number(), end: z.number(), text: z.string() })),
    chunk_count: z.number().int(),
    too_many_to_edit: z.boolean(),
    max_inline_edit_chunks: z.number().int(),
    ...editState,
  }),
  async handle(ctx) {
    const row = await ownedCaption(ctx);
    const v = await view(ctx, row);
    const tooMany = row.chunk_count > LIMITS.maxInlineEditChunks;
    return {
      job_id: row.job_id,
      partner_job_id: row.partner_job_id,
      status: v.status,
      chunks: tooMany ? [] : chunksOf(row),
      chunk_count: row.chunk_count,
      too_many_to_edit: tooMany,
      max_inline_edit_chunks: LIMITS.maxInlineEditChunks,
      editable: v.editable,
      source_available: v.source_available,
    };
  },
});

export const editCaption = operation({
  method: "POST",
  path: "/captions/<job_id>/edit",
  feature: CAPTIONS_FEATURE,
  status: 202,
  summary: "Replace the captions of a completed job and re-burn them, free of charge",
  input: EditInput,
  output: z.object(captionJobOut),
  async handle(ctx) {
    const row = await ownedCaption(ctx);
    if (reburnRunning(row)) throw new ApiError(409, CAPTION_ERRORS.editInProgress);
    if (row.state !== "complete" || row.chunk_count > LIMITS.maxInlineEditChunks)
      throw new ApiError(409, CAPTION_ERRORS.notEditable);
    if (!sourceAvailable(row, { now: ctx.clock.now(), videoAvailable: await videoAvailable(ctx, row) }))
      throw new ApiError(410, CAPTION_ERRORS.sourcePruned);
    let queued: CaptionRow | undefined;
    await ctx.submitJob({
      kind: "reburn",
      state: "pending",
      credits: 0,
      partnerJobId: row.partner_job_id,
      description: "Captions re-burn (edit)",
      input: { caption_job_id: row.job_id, chunks: ctx.input } satisfies ReburnInput,
      async insertRecords(trx, [jobId]) {
        // Again under the account's lock: a concurrent edit of the same job lost the race.
        const current = await findCaption(trx, ctx.partner.id, row.job_id);
        if (current && reburnRunning(current)) throw new ApiError(409, CAPTION_ERRORS.editInProgress);
        await checkCaps(ctx, trx, row.source_video_job_id);
        await trx.updateTable(CAPTIONS_TABLE).set({ reburn_job_id: jobId! }).where("job_id", "=", row.job_id).execute();
        // The 202 shows the re-burn as committed (pending): read after the commit, a worker may have started it.
        queued = await findCaption(trx, ctx.partner.id, row.job_id);
      },
    });
    return view(ctx, queued!);
  },
});
