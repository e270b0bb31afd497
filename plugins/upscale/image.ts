// Image upscale: measuring the source before the charge, and the job that resamples it (resample.ts) into a
// PNG recorded through `images.records`, so it is polled at GET /image-status like a generated image.
//
// Choices where the spec is silent, written down here:
// - The format is read from the first bytes (JPEG, PNG, WebP signatures) and must agree with what the decoder
//   finds; a file that starts like one but cannot be read is refused with the same format 400.
// - Dimensions are the displayed ones (EXIF orientation applied): that is what the output has and what the
//   8K rule and the tier measure.
// - An animated WebP or PNG is upscaled from its first frame (the output is a single PNG).
import {
  ApiError,
  checkPicture,
  isJpeg,
  isMediaError,
  isPng,
  isWebp,
  JobFailure,
  type JobKindDeclaration,
  PENDING_SUCCESS_FAILED,
  probeImage,
} from "mediagate/plugin";
import { UPSCALE_ERRORS } from "./errors.ts";
import { type Factor, IMAGE, type Tier, tierFor } from "./prices.ts";
import { resampleEngine, upscaleImage } from "./resample.ts";

export type SourceFormat = "jpeg" | "png" | "webp";

export const CONTENT_TYPES: Record<SourceFormat, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp" };

/** The format the bytes announce, whatever a URL's extension or a header claims. */
export function sniffImage(bytes: Uint8Array): SourceFormat | null {
  // SOI with a marker right after it: a decoder would skip junk there, this check refuses it.
  if (isJpeg(bytes) && bytes[2] === 0xff) return "jpeg";
  if (isPng(bytes)) return "png";
  if (isWebp(bytes)) return "webp";
  return null;
}

export interface MeasuredImage {
  format: SourceFormat;
  width: number;
  height: number;
}

/** Format and displayed size from the header (no pixels decoded); the spec's 400, or 500 when we cannot look. */
export async function measureImage(bytes: Uint8Array): Promise<MeasuredImage> {
  const format = sniffImage(bytes);
  if (!format) throw new ApiError(400, UPSCALE_ERRORS.imageFormat);
  // The pixel budget (lib/media/budgets.ts) with the spec's own limit: no source past 8K at any factor. An
  // animation's frames count against the animation budget (a frame bomb is a format we do not take).
  const budget = checkPicture(bytes, {
    maxLongEdge: IMAGE.maxOutputLongEdge,
    maxMegapixels: IMAGE.maxOutputLongEdge ** 2 / 1e6,
  });
  if (!budget.ok)
    throw new ApiError(
      400,
      budget.size && Math.max(budget.size.width, budget.size.height) > IMAGE.maxOutputLongEdge
        ? UPSCALE_ERRORS.over8K
        : UPSCALE_ERRORS.imageFormat,
    );
  try {
    const probe = await probeImage(bytes);
    if (probe.format !== format || probe.width < 1 || probe.height < 1)
      throw new ApiError(400, UPSCALE_ERRORS.imageFormat);
    return { format, width: probe.width, height: probe.height };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (isMediaError(err) && err.code === "engine_unavailable") throw new ApiError(500, UPSCALE_ERRORS.notAvailable);
    throw new ApiError(400, UPSCALE_ERRORS.imageFormat);
  }
}

export interface ImagePlan {
  width: number;
  height: number;
  tier: Tier;
}

/** The output size and price tier; the 8K rule's 400 before any charge. */
export function planImage(source: { width: number; height: number }, factor: Factor): ImagePlan {
  const width = source.width * factor;
  const height = source.height * factor;
  const tier = tierFor(width, height); // null past the 8K tier, which is the spec's output cap
  if (!tier || Math.max(width, height) > IMAGE.maxOutputLongEdge) throw new ApiError(400, UPSCALE_ERRORS.over8K);
  return { width, height, tier };
}

export type StoredImageInput = {
  source_key: string;
  factor: Factor;
  /** The planned (and billed) output size; the job checks the PNG against it. */
  width: number;
  height: number;
};

export const imageUpscaleJob: JobKindDeclaration<StoredImageInput> = {
  // The image states of spec part 1 ("Image generation and image upscale"), so /image-status reads them as is.
  ...PENDING_SUCCESS_FAILED,
  failError: UPSCALE_ERRORS.failed,
  retries: 1,
  timeoutSeconds: 300,
  // The resampler runs one image at a time per process anyway (in the media pool's place, with the other kinds'
  // heavy work); more would only queue in memory.
  concurrency: 1,
  async run(ctx) {
    const input = ctx.input;
    const source = await ctx.blobs.get(input.source_key);
    if (!source) throw new JobFailure(UPSCALE_ERRORS.failed);
    await ctx.progress(10, "Upscaling");
    let out;
    try {
      const engine = await resampleEngine(ctx.config.mediaEngine);
      out = await ctx
        .capability("media")
        .pool.run(() => upscaleImage(source, input.factor, ctx.signal, engine), ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (isMediaError(err) && err.isInputError) {
        ctx.log.warn(`upscale ${ctx.jobId}: ${err.describe()}`);
        await ctx.blobs.remove(input.source_key).catch(() => {});
        throw new JobFailure(UPSCALE_ERRORS.failed);
      }
      throw err; // ours (a crashed worker): retried, then failed and refunded by the runtime
    }
    if (out.width !== input.width || out.height !== input.height) {
      ctx.log.error(`upscale ${ctx.jobId}: planned ${input.width}x${input.height}, made ${out.width}x${out.height}`);
      throw new JobFailure(UPSCALE_ERRORS.failed);
    }
    await ctx.progress(90, "Storing");
    const records = ctx.capability("images.records");
    const output = await records.storeOutput(ctx.jobId, out.bytes, {
      metadata_removed: false,
      width: out.width,
      height: out.height,
    });
    await ctx.blobs.remove(input.source_key).catch(() => {});
    return { state: "success", output: { ...output } };
  },
};
