// Image generation (spec part 1, "Image generation", "Image record", the image states table).
// POST /generate-image validates everything before the charge, charges the whole request once (quantity
// included, tier applied by the kernel) and makes one job per image; each job renders through the model's
// provider chain (`image.generate`, the sandbox by default) and stores its PNG under a capability URL.
//
// Choices where the spec is silent, written down here:
// - `model` in GET /image-status is the model's display label (models.ts); `model_used` in the list is its id.
// - `aspect_ratio` and `resolution` report what was requested (`auto` stays `auto`).
// - `image_url` is null while an image is pending or after it failed (the record lists it as a string).
// - A pending status also carries `progress` (0-100), a non-breaking addition (versioning rule 3).
// - `ref_image_urls` lists the references used: uploaded `ref_images` first (served as media links), then
//   `reference_image_urls`, at most 5 in all, as the spec says only the first 5 are used.
// - Each uploaded reference is stored under a name of its own request (128 random bits), never by content:
//   a content-addressed name would be shared by every account sending the same bytes (one account's refused
//   charge could remove the file another's job is about to read) and would be derivable from the bytes,
//   which a media link must not be. The content hash still seeds the sandbox, so identical references
//   render identical images.
// - Each image of a `quantity` request is its own job holding its share of the single charge, so a failed
//   image refunds its share and the shares sum to `credits_used`.
import { createHash } from "node:crypto";
import {
  ApiError,
  checkPicture,
  decodedSize,
  formatTimestamp,
  mediaToken,
  megabytes,
  notFound,
  operation,
  PAGE_BOUNDS,
  pageBody,
  pageQuery,
  pageShape,
} from "mediagate/plugin";
import { z } from "zod";
import { IMAGE_ERRORS } from "./errors.ts";
import { checkReferenceUrls, GenerateImageInput, MAX_REFERENCES } from "./input.ts";
import type { StoredInput } from "./job.ts";
import { imageRoutes, MODELS, type ModelId, pixelSize } from "./models.ts";
import { priceOf } from "./prices.ts";
import { imageJobs, insertGenerations } from "./records.ts";

const MAX_REF_BYTES = megabytes(20);
const MAX_REFS_TOTAL_BYTES = megabytes(72);
const REF_EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

export const generateImage = operation({
  method: "POST",
  path: "/generate-image",
  status: 202,
  summary: "Generate 1-4 images from a prompt",
  input: GenerateImageInput,
  // ref_images may carry 5 x 20 MB as base64; the per-reference and combined caps are checked below.
  maxBodyBytes: 100_000_000,
  bodyTooLarge: IMAGE_ERRORS.refsTooLarge,
  output: z.object({
    generation_ids: z.array(z.number().int()),
    public_ids: z.array(z.string()),
    generation_id: z.number().int().optional(),
    public_id: z.string().optional(),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    const req = ctx.input;
    const guard = ctx.capability("outbound");
    const badUrl = checkReferenceUrls(req.reference_image_urls, (u) => guard.checkUrl(u));
    if (badUrl !== null) throw new ApiError(400, badUrl);
    let total = 0;
    for (const ref of req.ref_images) {
      const size = decodedSize(ref.base64);
      if (size > MAX_REF_BYTES) throw new ApiError(413, IMAGE_ERRORS.refTooLarge);
      total += size;
    }
    if (total > MAX_REFS_TOTAL_BYTES) throw new ApiError(413, IMAGE_ERRORS.refsTooLarge);
    // Each upload must be a picture within the pixel budget (lib/media/budgets.ts), judged by its header: a
    // provider decodes what it is given, and a 746 KB PNG can declare 16,000 x 16,000.
    for (const ref of req.ref_images.slice(0, MAX_REFERENCES)) {
      const budget = checkPicture(new Uint8Array(Buffer.from(ref.base64, "base64")));
      if (!budget.ok) throw new ApiError(400, IMAGE_ERRORS.refImageUnusable(budget.reason));
    }

    if (imageRoutes(ctx.capability("image.generate"), req.model).length === 0)
      throw new ApiError(500, IMAGE_ERRORS.notAvailable);

    const credits = ctx.priceFor(priceOf(req.model, req.quality, req.quantity));
    const uploads = req.ref_images.slice(0, MAX_REFERENCES).map((ref) => {
      const bytes = Buffer.from(ref.base64, "base64");
      const id = `refs/${createHash("sha256").update(bytes).digest("hex")}.${REF_EXT[ref.mime_type]}`;
      return { key: `refs/${mediaToken()}.${REF_EXT[ref.mime_type]}`, id, mime_type: ref.mime_type, bytes };
    });
    const urls = req.reference_image_urls.slice(0, MAX_REFERENCES - uploads.length);
    const { width, height } = pixelSize(req.quality, req.aspect_ratio);
    const stored: StoredInput = {
      width,
      height,
      background: req.background,
      strip_metadata: req.strip_metadata,
      references: [
        ...uploads.map(({ key, id, mime_type }) => ({ key, id, mime_type })),
        ...urls.map((url) => ({ url })),
      ],
    };
    const refUrls = [...uploads.map((u) => ctx.mediaUrl(u.key)), ...urls];

    // Written before the charge: the job is queued in the charge's transaction and may start at once, and a
    // provider reads its references. Every key is this request's own, so a refused charge removes them all.
    for (const u of uploads) await ctx.blobs.put(u.key, u.bytes, { contentType: u.mime_type });
    const removeCreated = () => Promise.all(uploads.map((u) => ctx.blobs.remove(u.key).catch(() => {})));

    let generationIds: number[] = [];
    const job = await ctx
      .submitJob({
        kind: "image",
        state: "pending",
        credits,
        count: req.quantity,
        partnerJobId: req.partner_job_id,
        input: stored,
        description: `Image generation: ${req.quantity} x ${req.model} ${req.quality}`,
        async insertRecords(trx, jobIds) {
          const record = {
            partner_id: ctx.partner.id,
            prompt: req.prompt,
            model: req.model,
            aspect_ratio: req.aspect_ratio,
            resolution: req.quality,
            ref_image_urls: JSON.stringify(refUrls),
          };
          generationIds = await insertGenerations(
            trx,
            jobIds.map((jobId, index) => ({ ...record, job_id: jobId, request_index: index })),
          );
        },
      })
      .catch(async (err: unknown) => {
        await removeCreated();
        throw err;
      });

    return {
      generation_ids: generationIds,
      public_ids: job.jobIds,
      ...(req.quantity === 1 ? { generation_id: generationIds[0], public_id: job.jobId } : {}),
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

/** What the status of a successful image adds (none of it while pending or once failed). */
const finishedImage = z.object({
  image_url: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  resolution: z.string(),
  prompt: z.string(),
  metadata_removed: z.boolean(),
});

export const imageStatus = operation({
  method: "GET",
  path: "/image-status/<id>",
  rateLimit: "GET /image-status/<gen_id>",
  summary: "Status of one image, by generation_id or public_id",
  output: z.object({
    status: z.enum(["pending", "success", "failed"]),
    generation_id: z.number().int(),
    ...finishedImage.partial().shape,
    progress: z.number().int().nullable().optional(),
    error: z.string().optional(),
  }),
  async handle(ctx) {
    // By integer generation_id or svc- public_id; anything else, or another account's image, is a 404.
    const id = ctx.params.id ?? "";
    const row = /^\d{1,15}$/.test(id)
      ? await imageJobs.findBy(ctx.db, ctx.partner.id, (q) => q.where("r.generation_id", "=", Number(id)))
      : /^svc-[0-9a-f]{8}$/.test(id)
        ? await imageJobs.find(ctx.db, ctx.partner.id, id)
        : undefined;
    if (!row) throw notFound();
    const generationId = Number(row.generation_id);
    if (row.state === "pending") return { status: "pending", generation_id: generationId, progress: row.progress ?? 0 };
    if (row.state === "failed") return { status: "failed", generation_id: generationId, error: row.error };
    const output = row.output!;
    return {
      status: "success",
      generation_id: generationId,
      image_url: ctx.mediaUrl(output.image_key),
      // Another area's images (upscales, through `images.records`) carry no generation model.
      model: MODELS[row.model as ModelId]?.label ?? row.model,
      aspect_ratio: row.aspect_ratio,
      resolution: row.resolution,
      prompt: row.prompt,
      metadata_removed: output.metadata_removed,
    };
  },
});

export const listImages = operation({
  method: "GET",
  path: "/images",
  summary: "This account's images, newest first",
  input: pageQuery(PAGE_BOUNDS.standard),
  output: pageShape(
    "images",
    z.object({
      generation_id: z.number().int(),
      public_id: z.string(),
      partner_job_id: z.string().nullable(),
      prompt: z.string(),
      model_used: z.string(),
      aspect_ratio: z.string(),
      resolution: z.string(),
      credits_used: z.number().int(),
      status: z.enum(["pending", "success", "failed"]),
      image_url: z.string().nullable(),
      ref_image_urls: z.array(z.string()),
      metadata_removed: z.boolean(),
      created_at: z.string(),
    }),
  ),
  async handle(ctx) {
    const page = await imageJobs.page(ctx.db, ctx.partner.id, ctx.input);
    return pageBody("images", page, ctx.input, (row) => {
      const output = row.output;
      return {
        generation_id: Number(row.generation_id),
        public_id: row.job_id,
        partner_job_id: row.partner_job_id,
        prompt: row.prompt,
        model_used: row.model,
        aspect_ratio: row.aspect_ratio,
        resolution: row.resolution,
        credits_used: Number(row.credits_used),
        status: row.state,
        image_url: row.state === "success" && output ? ctx.mediaUrl(output.image_key) : null,
        ref_image_urls: row.ref_image_urls,
        metadata_removed: output?.metadata_removed ?? false,
        created_at: formatTimestamp(row.created_at),
      };
    });
  },
});
