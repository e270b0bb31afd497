// Captions (spec part 2 "Caption job", "Caption style object", "Caption jobs", the caption endpoints, errors
// and limits; part 1's rate limits, the active caption job cap and the `captions` feature switch).
//
// A caption job reads a source video (one of the account's videos, whichever area made it, through the
// `captionable.videos` collection: source.ts; or an upload: uploads.ts), transcribes it through `speech.transcribe` (provided here: transcribe/), cuts the
// words into cards in the chosen chunking (cards.ts, measured with the font's real metrics), writes them as
// an ASS script in the chosen style (ass.ts) and burns it with libass on the media engine (burn.ts) into a
// new MP4. The partner can then read the cards, edit them and have them re-burned free of charge (edit.ts).
//
// Where the spec is silent, the choices are written beside the code that makes them: records.ts (status,
// pruning, availability), errors.ts (the texts), uploads.ts (sessions), job.ts (states), cards.ts (timing).
import { z } from "zod";
import { ApiError, definePlugin, field, defineInput, notFound, operation, type OperationContext, PAGE_BOUNDS, pageQuery, pageShape } from "mediagate/plugin";
import { CAPTION_ERRORS } from "./errors.ts";
import { EditInput } from "./edit.ts";
import { captionJob, reburnJob, type ReburnInput } from "./job.ts";
import { CAPTION_CREDITS, LIMITS } from "./limits.ts";
import { captionMigrations } from "./migrations.ts";
import { CAPTIONS_TABLE, captionView, chunksOf, type CaptionRow, findCaption, listCaptions, reburnRunning, sourceAvailable } from "./records.ts";
import { checkStyle, resolveStyle } from "./style.ts";
import { styleOptionsBody } from "./style-options.ts";
import { captionJobOut, submittedOut } from "./schemas.ts";
import { findVideo } from "./source.ts";
import { captionPrice, checkCaps, submitCaption } from "./submit.ts";
import { captionsConfig } from "./config.ts";
import { createTranscriber } from "./transcribe/index.ts";
import { uploadMigrations, uploadOperations } from "./uploads.ts";

const FEATURE = "captions";
const SERVICE_ID = /^svc-[0-9a-f]{8}$/;

/** Whether a generated-video source can still be read (null for uploads, which answer from their expiry). */
async function videoAvailable(ctx: OperationContext<any>, row: CaptionRow): Promise<boolean | null> {
  if (row.source_kind !== "video") return null;
  const video = await findVideo(ctx, ctx.partner.id, row.source_video_job_id!);
  return video?.complete === true;
}

async function view(ctx: OperationContext<any>, row: CaptionRow) {
  return captionView(row, { now: ctx.clock.now(), mediaUrl: ctx.mediaUrl, videoAvailable: await videoAvailable(ctx, row) });
}

async function ownedCaption(ctx: OperationContext<any>): Promise<CaptionRow> {
  const row = await findCaption(ctx.db, ctx.partner.id, ctx.params.job_id!);
  if (!row) throw notFound(CAPTION_ERRORS.jobNotFound);
  return row;
}

const styleOptions = operation({
  method: "GET",
  path: "/captions/style-options",
  feature: FEATURE,
  summary: "The caption style whitelist: fonts, presets, allowed values and ranges, the price and the upload limits",
  async handle(ctx) {
    return styleOptionsBody(captionPrice(ctx));
  },
});

const CaptionInput = defineInput({
  fields: {
    video_job_id: field.string({ description: "job_id of one of your completed videos" }),
    style: field.object({ description: "Any subset of the caption style object" }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["video_job_id"],
  check(raw, fail) {
    const id = raw.video_job_id;
    if (id === undefined || id === null || id === "") fail(CAPTION_ERRORS.videoJobIdRequired);
    if (typeof id !== "string" || !SERVICE_ID.test(id)) fail(CAPTION_ERRORS.videoJobIdInvalid);
    const style = checkStyle(raw.style ?? {});
    if (!style.ok) return fail(style.message);
    return { video_job_id: id as string, style: resolveStyle(style.value), partner_job_id: raw.partner_job_id };
  },
});

const createCaption = operation({
  method: "POST",
  path: "/captions",
  feature: FEATURE,
  status: 202,
  summary: "Burn captions into one of your completed generated videos",
  input: CaptionInput,
  output: submittedOut,
  async handle(ctx) {
    const video = await findVideo(ctx, ctx.partner.id, ctx.input.video_job_id);
    if (!video) throw notFound(CAPTION_ERRORS.videoNotFound);
    if (!video.complete) throw new ApiError(409, CAPTION_ERRORS.videoNotComplete);
    return submitCaption(ctx, { source: { kind: "video", videoJobId: video.job_id }, style: ctx.input.style, partnerJobId: ctx.input.partner_job_id });
  },
});

const captionStatus = operation({
  method: "GET",
  path: "/captions/<job_id>",
  feature: FEATURE,
  summary: "One caption job",
  output: z.object(captionJobOut),
  async handle(ctx) {
    return view(ctx, await ownedCaption(ctx));
  },
});

const listCaptionJobs = operation({
  method: "GET",
  path: "/captions",
  feature: FEATURE,
  summary: "This account's caption jobs, newest first",
  input: pageQuery(PAGE_BOUNDS.standard),
  output: pageShape("captions", z.object(captionJobOut)),
  async handle(ctx) {
    const { rows, total } = await listCaptions(ctx.db, ctx.partner.id, ctx.input);
    return { captions: await Promise.all(rows.map((row) => view(ctx, row))), total, limit: ctx.input.limit, offset: ctx.input.offset };
  },
});

const captionChunks = operation({
  method: "GET",
  path: "/captions/<job_id>/chunks",
  feature: FEATURE,
  summary: "The current caption text and timings (edits win over the transcript)",
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.string(),
    chunks: z.array(z.object({ start: z.number(), end: z.number(), text: z.string() })),
    chunk_count: z.number().int(),
    too_many_to_edit: z.boolean(),
    max_inline_edit_chunks: z.number().int(),
    editable: z.boolean(),
    source_available: z.boolean(),
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

const editCaption = operation({
  method: "POST",
  path: "/captions/<job_id>/edit",
  feature: FEATURE,
  status: 202,
  summary: "Replace the captions of a completed job and re-burn them, free of charge",
  input: EditInput,
  output: z.object(captionJobOut),
  async handle(ctx) {
    const row = await ownedCaption(ctx);
    if (reburnRunning(row)) throw new ApiError(409, CAPTION_ERRORS.editInProgress);
    if (row.state !== "complete" || row.chunk_count > LIMITS.maxInlineEditChunks) throw new ApiError(409, CAPTION_ERRORS.notEditable);
    if (!sourceAvailable(row, { now: ctx.clock.now(), videoAvailable: await videoAvailable(ctx, row) })) throw new ApiError(410, CAPTION_ERRORS.sourcePruned);
    let queued: CaptionRow | undefined;
    await ctx.submitJob({
      kind: "reburn",
      state: "pending",
      credits: 0,
      partnerJobId: row.partner_job_id,
      description: "Captions re-burn (edit)",
      input: { caption_job_id: row.job_id, chunks: ctx.input } satisfies ReburnInput as unknown as Record<string, unknown>,
      async within(trx, [jobId]) {
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

export default definePlugin({
  name: "captions",
  requires: ["media", "outbound"],
  // The account's videos, from every area that makes them (none registered: every video id is a 404).
  collects: ["captionable.videos"],
  provides: {
    "speech.transcribe": (host) => createTranscriber(host),
  },
  config: captionsConfig,
  costs: { captions: CAPTION_CREDITS },
  features: [FEATURE],
  operations: [styleOptions, createCaption, ...uploadOperations, captionStatus, listCaptionJobs, captionChunks, editCaption],
  jobs: { caption: captionJob, reburn: reburnJob },
  migrations: [...captionMigrations, ...uploadMigrations],
});
