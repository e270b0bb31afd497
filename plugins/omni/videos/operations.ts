// The Omni video operations (spec part 3, the Omni video endpoints): POST /omni/video checks every rule
// before the charge (input.ts), prices the clip (../prices.ts) and queues one job (job.ts, submit.ts);
// GET /omni/video/<job_id> and GET /omni/videos read the records (records.ts).

import {
  ApiError,
  findOwnRecord,
  jobListInput,
  listOwnRecords,
  operation,
  PAGE_BOUNDS,
  pageBody,
  pageShape,
} from "mediagate/plugin";
import { z } from "zod";
import { charged, picture } from "../answer-fields.ts";
import { OMNI_ERRORS } from "../errors.ts";
import { OMNI_FEATURE, OMNI_PAUSE } from "../prices.ts";
import { omniVideos } from "../records.ts";
import { OmniVideoInput, prepareOmniVideo } from "./input.ts";
import { videoView, videoViewShape } from "./records.ts";
import { priceOf, submitVideo } from "./submit.ts";

const createVideo = operation({
  method: "POST",
  path: "/omni/video",
  status: 202,
  inflight: true,
  feature: OMNI_FEATURE,
  summary: "Generate a character-consistent Omni video",
  input: OmniVideoInput,
  // Up to 72 MB of reference images travel as base64; the exact caps are checked by prepareOmniVideo.
  maxBodyBytes: 110_000_000,
  bodyTooLarge: OMNI_ERRORS.referenceImagesTooLarge,
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.literal("processing"),
    model: z.string(),
    duration: z.number().int(),
    ...picture,
    ...charged,
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.unavailable);
    const fields = ctx.input;
    if (ctx.capability("omni.generate").serves?.(fields.model) === false)
      throw new ApiError(503, OMNI_ERRORS.unavailable);
    // The price depends only on fields the schema checked: a custom account without a rate is refused
    // before any download.
    priceOf(ctx, { resolution: fields.resolution, duration: fields.duration }, fields.video !== null);
    const req = await prepareOmniVideo(fields, {
      guard: ctx.capability("outbound"),
      engine: ctx.capability("media"),
      db: ctx.db,
      partnerId: ctx.partner.id,
      signal: ctx.request.signal,
    });
    const credits = priceOf(ctx, req, req.referenceVideo !== null);
    const job = await submitVideo(
      ctx,
      req,
      credits,
      `Omni video: ${req.model} ${req.resolution} ${req.duration}s${req.referenceVideo ? " + reference video" : ""}`,
    );
    return {
      job_id: job.jobId,
      partner_job_id: req.partnerJobId,
      status: "processing" as const,
      model: req.model,
      duration: req.duration,
      aspect_ratio: req.aspectRatio,
      resolution: req.resolution,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

const videoStatus = operation({
  method: "GET",
  path: "/omni/video/<job_id>",
  feature: OMNI_FEATURE,
  summary: "Status of an Omni video job",
  output: videoViewShape,
  async handle(ctx) {
    const row = await findOwnRecord(omniVideos, ctx.db, ctx.partner.id, ctx.params.job_id);
    return videoView(row, ctx.mediaUrl);
  },
});

const listVideos = operation({
  method: "GET",
  path: "/omni/videos",
  feature: OMNI_FEATURE,
  summary: "This account's Omni videos, newest first",
  input: jobListInput(PAGE_BOUNDS.omniVideos, {
    status: OMNI_ERRORS.listStatus,
    since: "ISO 8601 UTC timestamp: videos created at or after it",
  }),
  output: pageShape("videos", videoViewShape),
  async handle(ctx) {
    const page = await listOwnRecords(omniVideos, ctx.db, ctx.partner.id, ctx.input);
    return pageBody("videos", page, ctx.input, (row) => videoView(row, ctx.mediaUrl));
  },
});

export const videoOperations = [createVideo, videoStatus, listVideos];
