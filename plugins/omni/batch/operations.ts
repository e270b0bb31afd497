// The Omni batch runner: POST /omni/script-runner makes one Omni video job per section (1080p, one character
// each), GET /omni/script-runner/<batch_id> and GET /omni/script-runner read the batches back.
//
// Money: every section is priced by its own duration (10 s capped at the 8 s price) and the batch is charged
// once, in one transaction and one ledger line, split into unequal shares: each section job holds its share
// and refunds exactly it, once, when it fails (the kernel's `shares`). The sections are charged as one group
// (`group`): the batch holds one slot of the in-flight cap, until its last section ends, and its id is the
// group's id. A section is an ordinary Omni video job: its own status (GET /omni/video/<job_id>), progress,
// events (to the account's webhook URL: the batch has no callback_url) and refund, so a batch survives a
// crash section by section with nothing of its own to recover.
//
// Choices where the spec is silent, written down here:
// - Batch status, derived from the sections whenever it is read: `processing` while any section is
//   unfinished; then `complete` when every section completed, `error` when every section failed, `partial`
//   when some completed and some failed.
// - Section entries (`jobs`) carry the spec's `section_id`, `title`, `job_id`, `duration`, `credits_used`,
//   and on reads also `status`, `video_url`, `error`, `prompt_fixable` and `credits_refunded`. `section_id`
//   is the partner's `sections[].id`, or `section-<n>` (1-based) when none was given.
// - The batch view adds `sections_complete` and `credits_refunded`; `credits_remaining` is the balance at the
//   time of the answer. The list is `{batches, total, limit, offset}` of the same views, newest first.
// - `sections[].content` is the clip's prompt; `sections[].image_base64` is a reference image of that clip.

import {
  ApiError,
  IMAGE_EXT,
  isJobId,
  limitParam,
  notFound,
  type OperationContext,
  offsetParam,
  operation,
  PAGE_BOUNDS,
  pageBody,
  pageShape,
} from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import { frameSize, OMNI_FEATURE, OMNI_PAUSE, type OmniAspectRatio, sectionPrice } from "../prices.ts";
import { BATCHES_TABLE, findCharacters } from "../records.ts";
import { characterSnapshot, insertVideoRecord, PendingUploads } from "../videos/submit.ts";
import type { OmniJobInput } from "../videos/types.ts";
import { BatchInput, type SectionInput, sectionImages } from "./input.ts";
import { batchPage, batchShape, batchView, findBatch, sectionShape, sectionsOf } from "./records.ts";

const BATCH_RESOLUTION = "1080p" as const;

const createBatch = operation({
  method: "POST",
  path: "/omni/script-runner",
  status: 202,
  inflight: true,
  feature: OMNI_FEATURE,
  summary: "One 1080p Omni clip per section, charged once with a refundable share per section",
  input: BatchInput,
  // 72 MB of section images travel as base64; the exact caps are checked in sectionImages.
  maxBodyBytes: 110_000_000,
  bodyTooLarge: OMNI_ERRORS.sectionImagesTooLarge,
  output: batchShape.omit({ sections_complete: true, credits_refunded: true, created_at: true }).extend({
    status: z.literal("processing"),
    jobs: z.array(
      sectionShape.pick({ section_id: true, title: true, job_id: true, duration: true, credits_used: true }),
    ),
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.unavailable);
    // Batch sections render with `omni` (the model their jobs are given).
    if (ctx.capability("omni.generate").serves?.("omni") === false) throw new ApiError(503, OMNI_ERRORS.unavailable);
    const req = ctx.input;
    const images = sectionImages(req.sections);
    const wanted = req.sections.map((s) => s.characterId ?? req.characterId);
    const characters = await findCharacters(ctx.db, ctx.partner.id, wanted);
    if (!characters) throw new ApiError(400, OMNI_ERRORS.charactersNotFound);
    const shares = req.sections.map((s) =>
      ctx.priceFor({ ...sectionPrice(s.duration), customRateMissing: OMNI_ERRORS.customNoRate }),
    );
    const credits = shares.reduce((a, b) => a + b, 0);

    const { width, height } = frameSize(BATCH_RESOLUTION, req.aspectRatio);
    const uploads = new PendingUploads();
    const inputs: OmniJobInput[] = [];
    for (const [i, s] of req.sections.entries()) {
      const image = images[i];
      inputs.push({
        model: "omni",
        width,
        height,
        seconds: s.duration,
        seed: null,
        strip_metadata: false,
        first_frame_url: null,
        last_frame_url: null,
        characters: [await characterSnapshot(ctx, characters[i]!, uploads, i + 1)],
        voices: [],
        image_urls: [],
        images: image
          ? [
              {
                key: uploads.add(
                  `section-${i + 1}.${IMAGE_EXT[image.mimeType as keyof typeof IMAGE_EXT] ?? "img"}`,
                  image.bytes,
                  image.mimeType,
                ),
                mime_type: image.mimeType,
              },
            ]
          : [],
        reference_video: null,
        callback_url: null,
      });
    }
    await uploads.write(ctx);
    let job;
    try {
      job = await submitSections(ctx, {
        credits,
        shares,
        inputs,
        sections: req.sections,
        characterIds: wanted,
        aspectRatio: req.aspectRatio,
        partnerJobId: req.partnerJobId,
      });
    } catch (err) {
      await uploads.remove(ctx);
      throw err;
    }
    return {
      batch_id: job.groupId!,
      partner_job_id: req.partnerJobId,
      status: "processing" as const,
      aspect_ratio: req.aspectRatio,
      resolution: BATCH_RESOLUTION,
      section_count: req.sections.length,
      jobs: req.sections.map((s, i) => ({
        section_id: s.id ?? `section-${i + 1}`,
        title: s.title,
        job_id: job.jobIds[i]!,
        duration: s.duration,
        credits_used: shares[i]!,
      })),
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

/** One charge, one ledger line, one job per section with its own share and input, one group (the batch's id). */
async function submitSections(
  ctx: OperationContext,
  a: {
    credits: number;
    shares: number[];
    inputs: OmniJobInput[];
    sections: SectionInput[];
    characterIds: string[];
    aspectRatio: OmniAspectRatio;
    partnerJobId: string | null;
  },
) {
  return ctx.submitJob({
    kind: "video",
    state: "processing",
    credits: a.credits,
    shares: a.shares,
    inputs: a.inputs.map((input) => ({ ...input })),
    group: true,
    partnerJobId: a.partnerJobId,
    description: `Omni batch: ${a.sections.length} sections`,
    insufficientCredits: OMNI_ERRORS.batchInsufficient,
    insertRecords: async (trx, jobIds, batchId) => {
      await trx
        .insertInto(BATCHES_TABLE)
        .values({
          batch_id: batchId!,
          partner_id: ctx.partner.id,
          partner_job_id: a.partnerJobId,
          aspect_ratio: a.aspectRatio,
          resolution: BATCH_RESOLUTION,
          section_count: a.sections.length,
          credits_used: a.credits,
        })
        .execute();
      for (const [i, jobId] of jobIds.entries()) {
        const s = a.sections[i]!;
        await insertVideoRecord(trx, jobId, ctx.partner.id, {
          model: "omni",
          prompt: s.content,
          character_ids: [a.characterIds[i]!],
          voice_ids: [],
          first_frame_url: null,
          last_frame_url: null,
          duration: s.duration,
          aspect_ratio: a.aspectRatio,
          resolution: BATCH_RESOLUTION,
          reference_video: false,
          input: a.inputs[i]!,
          batch_id: batchId,
          section_index: i,
          section_id: s.id,
          section_title: s.title,
        });
      }
    },
  });
}

const batchStatusOp = operation({
  method: "GET",
  path: "/omni/script-runner/<batch_id>",
  feature: OMNI_FEATURE,
  summary: "An Omni batch and its sections",
  output: batchShape,
  async handle(ctx) {
    const id = ctx.params.batch_id ?? "";
    if (!isJobId(id)) throw notFound();
    const batch = await findBatch(ctx.db, ctx.partner.id, id);
    if (!batch) throw notFound();
    const sections = (await sectionsOf(ctx.db, ctx.partner.id, [id])).get(id)!;
    return batchView(batch, sections, ctx.mediaUrl, await ctx.account.balance(ctx.partner.id));
  },
});

const listBatches = operation({
  method: "GET",
  path: "/omni/script-runner",
  feature: OMNI_FEATURE,
  summary: "This account's Omni batches, newest first",
  input: z.object({ limit: limitParam(PAGE_BOUNDS.omniBatches), offset: offsetParam }),
  output: pageShape("batches", batchShape),
  async handle(ctx) {
    const page = await batchPage(ctx.db, ctx.partner.id, ctx.input);
    const sections = await sectionsOf(
      ctx.db,
      ctx.partner.id,
      page.rows.map((r) => r.batch_id),
    );
    const balance = await ctx.account.balance(ctx.partner.id);
    return pageBody("batches", page, ctx.input, (b) => batchView(b, sections.get(b.batch_id)!, ctx.mediaUrl, balance));
  },
});

export const batchOperations = [createBatch, batchStatusOp, listBatches];
