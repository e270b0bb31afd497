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
import type { Selectable } from "kysely";
import { z } from "zod";
import {
  ApiError,
  limitParam,
  listPage,
  notFound,
  offsetParam,
  operation,
  type OperationContext,
  PAGE_BOUNDS,
  pageBody,
  pageShape,
  partnerJobIdField,
  type PluginDb,
  type VideoFrame, checkPicture, decodeImageBase64, IMAGE_EXT,
} from "mediagate/plugin";
import { OMNI_ERRORS } from "../errors.ts";
import { ASPECT_RATIOS, DEFAULT_SECTION_DURATION, DURATIONS, frameSize, LIMITS, OMNI_FEATURE, OMNI_PAUSE, type OmniAspectRatio, type OmniDuration, sectionPrice } from "../prices.ts";
import { BATCHES_TABLE, type BatchRow, findCharacters, omniVideos, type OmniVideoRecord, timestamp } from "../records.ts";
import type { OmniJobInput } from "../videos/types.ts";
import { isPromptFixable } from "../videos/records.ts";
import { characterSnapshot, insertVideoRecord, PendingUploads } from "../videos/submit.ts";

const BATCH_ID = /^svc-[0-9a-f]{8}$/;
const BATCH_RESOLUTION = "1080p" as const;

// ---------------------------------------------------------------------------------------------------------
// The request.

interface SectionInput {
  id: string | null;
  title: string | null;
  content: string;
  characterId: string | null;
  duration: OmniDuration;
  /** Base64 as sent (checked for size and kind in the handler, where a 413 can be told apart). */
  imageBase64: string | null;
}

const optionalString = (v: unknown) => v === undefined || v === null || typeof v === "string";

const BatchInput = z
  .object({
    character_id: z.unknown().optional().meta({ type: "string" }),
    sections: z.unknown().optional().meta({
      type: "array",
      minItems: LIMITS.sectionsMin,
      maxItems: LIMITS.sectionsMax,
      items: {
        type: "object",
        required: ["content"],
        properties: {
          id: { type: "string" },
          title: { type: "string" },
          content: { type: "string", maxLength: LIMITS.sectionContentChars },
          character_id: { type: "string" },
          duration: { type: "integer", enum: [...DURATIONS], default: DEFAULT_SECTION_DURATION },
          image_base64: { type: "string" },
        },
      },
    }),
    aspect_ratio: z.unknown().optional().meta({ type: "string", enum: [...ASPECT_RATIOS], default: ASPECT_RATIOS[0] }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["character_id", "sections"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    if (typeof raw.character_id !== "string" || raw.character_id.trim() === "") return fail(OMNI_ERRORS.characterIdRequired);
    const list = raw.sections;
    if (!Array.isArray(list) || list.length < LIMITS.sectionsMin || list.length > LIMITS.sectionsMax) return fail(OMNI_ERRORS.sectionsRequired);
    const sections: SectionInput[] = [];
    for (const [i, s] of list.entries()) {
      if (s === null || typeof s !== "object" || Array.isArray(s)) return fail(OMNI_ERRORS.sectionContentRequired(i));
      const o = s as Record<string, unknown>;
      if (typeof o.content !== "string" || o.content.trim() === "") return fail(OMNI_ERRORS.sectionContentRequired(i));
      if (o.content.length > LIMITS.sectionContentChars) return fail(OMNI_ERRORS.sectionContentTooLong(i));
      for (const field of ["id", "title", "character_id", "image_base64"]) if (!optionalString(o[field])) return fail(OMNI_ERRORS.sectionField(i, field));
      const duration = o.duration ?? DEFAULT_SECTION_DURATION;
      if (typeof duration !== "number" || !(DURATIONS as readonly number[]).includes(duration)) return fail(OMNI_ERRORS.sectionDuration(i));
      sections.push({
        id: (o.id as string | undefined) ?? null,
        title: (o.title as string | undefined) ?? null,
        content: o.content,
        characterId: (o.character_id as string | undefined) || null,
        duration: duration as OmniDuration,
        imageBase64: (o.image_base64 as string | undefined) || null,
      });
    }
    const aspect = raw.aspect_ratio ?? ASPECT_RATIOS[0];
    if (typeof aspect !== "string" || !(ASPECT_RATIOS as readonly string[]).includes(aspect)) return fail(OMNI_ERRORS.invalidAspectRatio);
    return { characterId: raw.character_id, sections, aspectRatio: aspect as OmniAspectRatio, partnerJobId: raw.partner_job_id };
  });

/** Each section's reference image decoded: 413 over 20 MB each or 72 MB together, 400 when not an image. */
function sectionImages(sections: readonly SectionInput[]): Array<VideoFrame | null> {
  let total = 0;
  return sections.map((s, i) => {
    if (!s.imageBase64) return null;
    const decoded = decodeImageBase64(s.imageBase64, LIMITS.imageMaxBytes);
    if (!decoded.ok) throw decoded.reason === "too_large" ? new ApiError(413, OMNI_ERRORS.sectionImageTooLarge(i)) : new ApiError(400, OMNI_ERRORS.sectionImage(i));
    if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, OMNI_ERRORS.sectionImage(i)); // over the pixel budget (lib/media/budgets.ts)
    total += decoded.image.bytes.byteLength;
    if (total > LIMITS.imagesMaxTotalBytes) throw new ApiError(413, OMNI_ERRORS.sectionImagesTooLarge);
    return decoded.image;
  });
}

// ---------------------------------------------------------------------------------------------------------
// Reading.

type BatchStatus = "processing" | "complete" | "partial" | "error";

/** The rule of the header: derived from the sections. */
export function batchStatus(states: readonly { state: string; finished: boolean }[]): BatchStatus {
  if (states.some((s) => !s.finished)) return "processing";
  const complete = states.filter((s) => s.state === "complete").length;
  if (complete === states.length) return "complete";
  return complete === 0 ? "error" : "partial";
}

const sectionId = (row: OmniVideoRecord) => row.section_id ?? `section-${(row.section_index ?? 0) + 1}`;

type Batch = Selectable<BatchRow>;

function batchView(batch: Batch, sections: OmniVideoRecord[], mediaUrl: (key: string) => string, creditsRemaining: number) {
  return {
    batch_id: batch.batch_id,
    partner_job_id: batch.partner_job_id,
    status: batchStatus(sections.map((s) => ({ state: s.state, finished: s.finished_at !== null }))),
    aspect_ratio: batch.aspect_ratio,
    resolution: batch.resolution,
    section_count: Number(batch.section_count),
    sections_complete: sections.filter((s) => s.state === "complete").length,
    jobs: sections.map((s) => ({
      section_id: sectionId(s),
      title: s.section_title,
      job_id: s.job_id,
      duration: Number(s.duration),
      credits_used: Number(s.credits_used),
      status: s.state,
      video_url: s.state === "complete" && s.output ? mediaUrl(s.output.video_key) : null,
      error: s.error,
      prompt_fixable: isPromptFixable(s),
      credits_refunded: Number(s.credits_refunded),
    })),
    credits_used: Number(batch.credits_used),
    credits_refunded: sections.reduce((sum, s) => sum + Number(s.credits_refunded), 0),
    credits_remaining: creditsRemaining,
    created_at: timestamp(batch.created_at),
  };
}

const sectionShape = z.object({
  section_id: z.string(),
  title: z.string().nullable(),
  job_id: z.string(),
  duration: z.number().int(),
  credits_used: z.number().int(),
  status: z.string(),
  video_url: z.string().nullable(),
  error: z.string().nullable(),
  prompt_fixable: z.boolean(),
  credits_refunded: z.number().int(),
});

const batchShape = z.object({
  batch_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.enum(["processing", "complete", "partial", "error"]),
  aspect_ratio: z.string(),
  resolution: z.string(),
  section_count: z.number().int(),
  sections_complete: z.number().int(),
  jobs: z.array(sectionShape),
  credits_used: z.number().int(),
  credits_refunded: z.number().int(),
  credits_remaining: z.number().int(),
  created_at: z.string(),
});

async function sectionsOf(db: PluginDb, partnerId: string, batchIds: readonly string[]): Promise<Map<string, OmniVideoRecord[]>> {
  const by = new Map<string, OmniVideoRecord[]>(batchIds.map((id) => [id, []]));
  if (batchIds.length === 0) return by;
  const rows = await omniVideos.owned(db, partnerId).where("r.batch_id", "in", batchIds).orderBy("r.section_index", "asc").execute();
  for (const r of rows) by.get(r.batch_id!)?.push(r);
  return by;
}

// ---------------------------------------------------------------------------------------------------------
// Operations.

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
    jobs: z.array(sectionShape.pick({ section_id: true, title: true, job_id: true, duration: true, credits_used: true })),
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.unavailable);
    const req = ctx.input;
    const images = sectionImages(req.sections);
    const wanted = req.sections.map((s) => s.characterId ?? req.characterId);
    const characters = await findCharacters(ctx.db, ctx.partner.id, wanted);
    if (!characters) throw new ApiError(400, OMNI_ERRORS.charactersNotFound);
    const shares = req.sections.map((s) => ctx.priceFor({ ...sectionPrice(s.duration), customRateMissing: OMNI_ERRORS.customNoRate }));
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
        images: image ? [{ key: uploads.add(`section-${i + 1}.${IMAGE_EXT[image.mimeType as keyof typeof IMAGE_EXT] ?? "img"}`, image.bytes, image.mimeType), mime_type: image.mimeType }] : [],
        reference_video: null,
        callback_url: null,
      });
    }
    await uploads.write(ctx);
    let job;
    try {
      job = await submitSections(ctx, { credits, shares, inputs, sections: req.sections, characterIds: wanted, aspectRatio: req.aspectRatio, partnerJobId: req.partnerJobId });
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
      jobs: req.sections.map((s, i) => ({ section_id: s.id ?? `section-${i + 1}`, title: s.title, job_id: job.jobIds[i]!, duration: s.duration, credits_used: shares[i]! })),
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

/** One charge, one ledger line, one job per section with its own share and input, one group (the batch's id). */
async function submitSections(
  ctx: OperationContext<any>,
  a: { credits: number; shares: number[]; inputs: OmniJobInput[]; sections: SectionInput[]; characterIds: string[]; aspectRatio: OmniAspectRatio; partnerJobId: string | null },
) {
  return ctx.submitJob({
    kind: "video",
    state: "processing",
    credits: a.credits,
    shares: a.shares,
    inputs: a.inputs as unknown as Record<string, unknown>[],
    group: true,
    partnerJobId: a.partnerJobId,
    description: `Omni batch: ${a.sections.length} sections`,
    insufficientCredits: OMNI_ERRORS.batchInsufficient,
    within: async (trx, jobIds, batchId) => {
      await trx
        .insertInto(BATCHES_TABLE)
        .values({ batch_id: batchId!, partner_id: ctx.partner.id, partner_job_id: a.partnerJobId, aspect_ratio: a.aspectRatio, resolution: BATCH_RESOLUTION, section_count: a.sections.length, credits_used: a.credits })
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
    if (!BATCH_ID.test(id)) throw notFound();
    const batch = (await ctx.db.selectFrom(BATCHES_TABLE).selectAll().where("partner_id", "=", ctx.partner.id).where("batch_id", "=", id).executeTakeFirst()) as Batch | undefined;
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
    const query = ctx.db.selectFrom(BATCHES_TABLE).selectAll().where("partner_id", "=", ctx.partner.id).orderBy("created_at", "desc").orderBy("batch_id", "desc");
    const page = (await listPage(query, ctx.input)) as { rows: Batch[]; total: number };
    const sections = await sectionsOf(ctx.db, ctx.partner.id, page.rows.map((r) => r.batch_id));
    const balance = await ctx.account.balance(ctx.partner.id);
    return pageBody("batches", page, ctx.input, (b) => batchView(b, sections.get(b.batch_id)!, ctx.mediaUrl, balance));
  },
});

export const batchOperations = [createBatch, batchStatusOp, listBatches];
