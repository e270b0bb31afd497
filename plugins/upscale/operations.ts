// Image and video upscaling (spec part 1, "Upscaling", the upscale rows of the prices, errors, rate limits and
// payload limits; part 2 for the video states and GET /video-status).
//
// Both submits read and measure the source before any charge (readSource of the plugin API, image.ts, video.ts), so every 400 and
// 413 leaves nothing behind; the source is then kept beside the job until the job ends (a day at most, through
// the kernel's retention). An image upscale is an image job: `images.records` gives it a generation_id and
// /image-status serves it. A video upscale is a video job: `video.records` records it and /video-status and
// /videos serve it. Neither holds an in-flight slot (spec: "Not counted").
//
// Choices where the spec is silent, written down here:
// - The image record of an upscale shows `model` / `model_used` `upscale-<factor>x`, `resolution` the billed
//   tier, `aspect_ratio` the output's reduced ratio, an empty `prompt`, and `ref_image_urls` the source URL
//   (none for base64).
// - The video record shows `model` `upscale-<factor>x`, an empty `prompt` and the output's reduced ratio.
// - A custom account without a negotiated video rate gets its 400 before the download.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  decodedSize,
  type OperationContext,
  operation,
  PRIVATE_KEY_PREFIX,
  type ReadSourceDeps,
  readSource,
} from "mediagate/plugin";
import { z } from "zod";
import { UPSCALE_ERRORS } from "./errors.ts";
import { CONTENT_TYPES, measureImage, planImage, type StoredImageInput } from "./image.ts";
import { UpscaleImageInput, UpscaleVideoInput } from "./input.ts";
import { billedSeconds, IMAGE, imagePrice, TIERS, VIDEO, videoPrice } from "./prices.ts";
import { measureVideo, planVideo, type StoredVideoInput } from "./video.ts";

const IMAGE_FETCH_TIMEOUT_MS = 30_000;
const VIDEO_FETCH_TIMEOUT_MS = 120_000;
/** How long a source waits for its job; the job removes it sooner, the retention sweeper otherwise. */
const SOURCE_RETENTION_MS = 24 * 3600 * 1000;
// base64 of the 20 MB payload cap, plus room for the JSON around it; beyond, the spec's 413 without parsing.
const IMAGE_MAX_BODY_BYTES = Math.ceil((IMAGE.base64MaxBytes * 4) / 3) + 64 * 1024;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const ratio = (w: number, h: number) => `${w / gcd(w, h)}:${h / gcd(w, h)}`;

function sourceDeps(ctx: Pick<OperationContext, "capability" | "request">): ReadSourceDeps {
  return {
    serviceMedia: ctx.capability("service-media"),
    guard: ctx.capability("outbound"),
    signal: ctx.request.signal,
  };
}

/**
 * Keeps the source where the job will find it (it may start at once), then charges; a refused charge (402)
 * takes the file away again, so bad input changes nothing.
 */
async function withSource<T>(
  ctx: Pick<OperationContext, "blobs" | "clock">,
  key: string,
  bytes: Uint8Array,
  contentType: string,
  submit: () => Promise<T>,
): Promise<T> {
  await ctx.blobs.put(key, bytes, { contentType, expiresAt: new Date(ctx.clock.now() + SOURCE_RETENTION_MS) });
  try {
    return await submit();
  } catch (err) {
    await ctx.blobs.remove(key).catch(() => {});
    throw err;
  }
}

export const upscaleImage = operation({
  method: "POST",
  path: "/upscale-image",
  status: 202,
  summary: "Upscale a JPEG, PNG or WebP by 1 (enhance), 2 or 4 into a PNG; poll /image-status",
  input: UpscaleImageInput,
  maxBodyBytes: IMAGE_MAX_BODY_BYTES,
  bodyTooLarge: UPSCALE_ERRORS.base64TooLarge,
  output: z.object({
    generation_id: z.number().int(),
    public_id: z.string(),
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.literal("pending"),
    upscale_factor: z.number().int(),
    output: z.object({ width: z.number().int(), height: z.number().int(), tier: z.enum(TIERS) }),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    const { source, factor, partnerJobId } = ctx.input;
    let bytes: Uint8Array;
    if ("base64" in source) {
      const size = decodedSize(source.base64);
      if (size > IMAGE.base64MaxBytes) throw new ApiError(413, UPSCALE_ERRORS.base64TooLarge);
      if (size > IMAGE.inputMaxBytes) throw new ApiError(413, UPSCALE_ERRORS.imageTooLarge);
      bytes = new Uint8Array(Buffer.from(source.base64, "base64"));
    } else {
      const texts = {
        invalidUrl: UPSCALE_ERRORS.imageUrl,
        download: UPSCALE_ERRORS.imageFetch,
        tooLarge: UPSCALE_ERRORS.imageTooLarge,
      };
      bytes = await readSource(
        source.url,
        { maxBytes: IMAGE.inputMaxBytes, timeoutMs: IMAGE_FETCH_TIMEOUT_MS, texts },
        sourceDeps(ctx),
      );
    }
    const measured = await measureImage(bytes);
    const plan = planImage(measured, factor);
    const credits = ctx.priceFor(imagePrice(plan.tier));

    // The partner's source is never shown: private, so `/media` does not serve it (docs/architecture.md "Media links").
    const key = `${PRIVATE_KEY_PREFIX}sources/${randomBytes(16).toString("hex")}.${measured.format === "jpeg" ? "jpg" : measured.format}`;
    const records = ctx.capability("images.records");
    let generationId = 0;
    const stored: StoredImageInput = { source_key: key, factor, width: plan.width, height: plan.height };
    const job = await withSource(ctx, key, bytes, CONTENT_TYPES[measured.format], () =>
      ctx.submitJob({
        kind: "image",
        state: "pending",
        credits,
        partnerJobId,
        input: stored,
        description: `Image upscale: ${factor}x to ${plan.width}x${plan.height} (${plan.tier})`,
        async insertRecords(trx, [jobId]) {
          generationId = await records.insert(trx, {
            job_id: jobId!,
            partner_id: ctx.partner.id,
            prompt: "",
            model: `upscale-${factor}x`,
            aspect_ratio: ratio(plan.width, plan.height),
            resolution: plan.tier,
            ref_image_urls: "url" in source ? [source.url] : [],
          });
        },
      }),
    );
    return {
      generation_id: generationId,
      public_id: job.jobId,
      job_id: job.jobId,
      partner_job_id: partnerJobId,
      status: "pending",
      upscale_factor: factor,
      output: { width: plan.width, height: plan.height, tier: plan.tier },
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

export const upscaleVideo = operation({
  method: "POST",
  path: "/upscale-video",
  status: 202,
  summary: "Upscale an MP4 or MOV by 1 (enhance), 2 or 4, billed per whole input second; poll /video-status",
  input: UpscaleVideoInput,
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.literal("queued"),
    upscale_factor: z.number().int(),
    input_seconds: z.number().int(),
    output: z.object({ width: z.number().int(), height: z.number().int() }),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    const { url, factor, partnerJobId } = ctx.input;
    ctx.priceFor(videoPrice(factor, 1)); // a custom account without this rate: 400 before any download
    const texts = {
      invalidUrl: UPSCALE_ERRORS.videoUrl,
      download: UPSCALE_ERRORS.videoDownload,
      tooLarge: UPSCALE_ERRORS.videoTooLarge,
    };
    const bytes = await readSource(
      url,
      { maxBytes: VIDEO.inputMaxBytes, timeoutMs: VIDEO_FETCH_TIMEOUT_MS, texts },
      sourceDeps(ctx),
    );
    const measured = await measureVideo(bytes, ctx.capability("media"), ctx.request.signal);
    const plan = planVideo(measured, factor);
    const inputSeconds = billedSeconds(measured.seconds);
    const credits = ctx.priceFor(videoPrice(factor, inputSeconds));

    const key = `${PRIVATE_KEY_PREFIX}sources/${randomBytes(16).toString("hex")}.mp4`; // private, as above
    const records = ctx.capability("video.records");
    const stored: StoredVideoInput = {
      source_key: key,
      factor,
      source_width: measured.width,
      source_height: measured.height,
      width: plan.width,
      height: plan.height,
      seconds: measured.seconds,
      audio: measured.audio,
    };
    const model = `upscale-${factor}x`;
    const job = await withSource(ctx, key, bytes, "video/mp4", () =>
      ctx.submitJob({
        kind: "video",
        state: "queued",
        credits,
        partnerJobId,
        input: stored,
        description: `Video upscale: ${factor}x, ${inputSeconds}s`,
        insertRecords: (trx, [jobId]) =>
          records.insert(trx, {
            job_id: jobId!,
            partner_id: ctx.partner.id,
            kind: "upscale",
            prompt: "",
            model,
            model_used: model,
            quality: null,
            duration: inputSeconds,
            aspect_ratio: ratio(plan.width, plan.height),
          }),
      }),
    );
    return {
      job_id: job.jobId,
      partner_job_id: partnerJobId,
      status: "queued",
      upscale_factor: factor,
      input_seconds: inputSeconds,
      output: { width: plan.width, height: plan.height },
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});
