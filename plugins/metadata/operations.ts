// Metadata removal (spec part 1, "Clean-copy record", "Metadata removal", the POST /remove-metadata rows of
// "Errors", "Daily quotas", convention 9). POST /remove-metadata is synchronous and free: it reads the
// source, removes the metadata (images by byte surgery in jpeg.ts/png.ts/webp.ts, never re-encoded; videos by
// stream copy in video.ts), stores only the cleaned copy for 7 days and answers the clean-copy record.
//
// Choices where the spec is silent, written down here:
// - Order: the fields (400), the base64 size (413) and the URLs (400) are checked first and count nothing;
//   then the pause (503); for videos a place in the shared remux slot (503 busy, not counted); then the
//   attempt is counted against its daily quota (429 when over; a refused attempt does not count). From
//   there every outcome counts, failures included: 404, fetch failures, 413, 415, 422 and success.
// - Quotas: 200 images and 50 videos per rolling 24 hours per account, counted separately (quota.ts).
// - Pause: an operator pauses removal for every account with the service-wide switch `metadata_removal`
//   (`PUT /api/v1/admin/pauses/metadata_removal {"paused": true}`, core/pauses.ts); every API process reads it
//   per request, so it needs no restart. Accounts are switched off one by one with the admin feature `metadata_removal` (403).
// - Busy: video remuxes run in at most VIDEO_SLOTS places shared by every process; images need no slot
//   (milliseconds of byte surgery, walked in slices of the event loop).
// - A file past a walker's cap (lib/formats FORMAT_LIMITS: 100,000 PNG chunks, 10,000 JPEG segments, ...)
//   is the 422 "could not be processed (damaged or not a valid format)", counted like any other 422.
// - Image downloads have the video's 30-second deadline too; sizes are binary megabytes (source.ts).
// - The format is read from the bytes, never from the URL or a content type; an image sent as video_url (or
//   the reverse) is a 415.
// - `expires_at` is 7 days after the copy was made; the kernel's retention sweeper removes the file then.
// - Each counted attempt leaves a row in metadata_removals (status, categories, sizes, blob key), for
//   operators; the partner sees only the response.
import { randomBytes } from "node:crypto";
import { ApiError, formatTimestamp, isDamagedMedia, type OperationContext, operation } from "mediagate/plugin";
import { z } from "zod";
import type { Cleaned } from "./damage.ts";
import { METADATA_ERRORS } from "./errors.ts";
import { imageFormatOf } from "./image.ts";
import { type RemovalSource, RemoveMetadataInput } from "./input.ts";
import { countAttempt, IMAGE_QUOTA, VIDEO_QUOTA } from "./quota.ts";
import { recordAttempt } from "./records.ts";
import { type SlotHold, videoSlots } from "./slots.ts";
import { IMAGE_LIMITS, type Located, load, locate, VIDEO_LIMITS } from "./source.ts";
import { cleanVideo, videoContainerOf } from "./video.ts";

export const FEATURE = "metadata_removal";
/** The service-wide pause switch (core/pauses.ts). */
export const PAUSE = "metadata_removal";
export const RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DOWNLOAD_TIMEOUT_MS = 30_000;

type RemovalContext = OperationContext<RemovalSource>;

interface Made {
  url: string;
  format: string;
  contentType: string;
  cleaned: Cleaned;
  bytesIn: number;
  key: string;
  expiresAt: Date;
}

async function make(
  ctx: RemovalContext,
  source: RemovalSource,
  located: Located,
  downloadTimeoutMs: number,
  hold?: SlotHold,
): Promise<Made> {
  const limits = source.kind === "image" ? IMAGE_LIMITS : VIDEO_LIMITS;
  const signal = hold ? AbortSignal.any([ctx.request.signal, hold.signal]) : ctx.request.signal;
  const guard = ctx.capability("outbound");
  const bytes = await load(located, limits, { guard, timeoutMs: downloadTimeoutMs, signal });

  let cleaned: Cleaned;
  let format: string;
  let contentType: string;
  let extension: string;
  try {
    if (source.kind === "image") {
      const info = imageFormatOf(bytes);
      if (!info) throw new ApiError(415, METADATA_ERRORS.unsupportedImage);
      cleaned = await info.clean(bytes);
      ({ format, contentType, extension } = info);
    } else {
      const container = videoContainerOf(bytes);
      if (!container) throw new ApiError(415, METADATA_ERRORS.unsupportedVideo);
      const timeoutMs = Math.max(1, (hold?.deadline ?? Infinity) - Date.now());
      cleaned = await cleanVideo(ctx.capability("media"), bytes, container, { signal, timeoutMs });
      ({ format, contentType, extension } = container);
    }
  } catch (err) {
    if (!isDamagedMedia(err)) throw err;
    ctx.log.info(`metadata ${ctx.requestId}: ${err.detail}`);
    throw new ApiError(422, source.kind === "image" ? METADATA_ERRORS.imageDamaged : METADATA_ERRORS.videoDamaged);
  }

  const expiresAt = new Date(ctx.clock.now() + RETENTION_MS);
  const key = `clean/${randomBytes(16).toString("hex")}.${extension}`;
  await ctx.blobs.put(key, cleaned.bytes, { contentType, expiresAt });
  return { url: ctx.mediaUrl(key), format, contentType, cleaned, bytesIn: bytes.byteLength, key, expiresAt };
}

/** One counted attempt: quota, the work, and its row whatever the outcome. */
async function attempt(
  ctx: RemovalContext,
  source: RemovalSource,
  located: Located,
  downloadTimeoutMs: number,
  hold?: SlotHold,
) {
  const counters = ctx.capability("counters");
  await countAttempt(
    counters,
    `metadata:quota:${source.kind}:${ctx.partner.id}`,
    source.kind === "image" ? IMAGE_QUOTA : VIDEO_QUOTA,
    ctx.clock.now(),
  );
  let made: Made | null = null;
  let status = 500;
  try {
    made = await make(ctx, source, located, downloadTimeoutMs, hold);
    status = 200;
  } catch (err) {
    if (err instanceof ApiError) status = err.status;
    throw err;
  } finally {
    await recordAttempt(ctx.db, {
      partner_id: ctx.partner.id,
      request_id: ctx.requestId,
      kind: source.kind,
      status,
      format: made?.format ?? null,
      removed: JSON.stringify(made?.cleaned.removed ?? []),
      bytes_in: made?.bytesIn ?? null,
      bytes_out: made?.cleaned.bytes.byteLength ?? null,
      blob_key: made?.key ?? null,
      expires_at: made?.expiresAt ?? null,
      created_at: new Date(ctx.clock.now()),
    }).catch((err) => ctx.log.error(`metadata ${ctx.requestId}: audit row not written`, err));
  }
  return {
    [source.kind === "image" ? "image_url" : "video_url"]: made.url,
    format: made.format,
    content_type: made.contentType,
    removed: made.cleaned.removed,
    c2pa_found: made.cleaned.removed.includes("c2pa"),
    bytes_in: made.bytesIn,
    bytes_out: made.cleaned.bytes.byteLength,
    expires_at: formatTimestamp(made.expiresAt),
  };
}

/**
 * POST /remove-metadata; `downloadTimeoutMs` is the source download deadline (the spec's 30 s), which tests
 * shorten.
 */
export const removeMetadataOperation = ({ downloadTimeoutMs = DOWNLOAD_TIMEOUT_MS } = {}) =>
  operation({
    method: "POST",
    path: "/remove-metadata",
    feature: FEATURE,
    summary: "Remove C2PA, EXIF, XMP and IPTC from an image or a video (synchronous, free)",
    input: RemoveMetadataInput,
    // About 20 MB of image data as base64 (28 million characters) plus the JSON around it.
    maxBodyBytes: 28_000_000,
    bodyTooLarge: METADATA_ERRORS.imageBase64TooLarge,
    output: z.object({
      image_url: z.string().optional(),
      video_url: z.string().optional(),
      format: z.string(),
      content_type: z.string(),
      removed: z.array(z.enum(["c2pa", "exif", "xmp", "iptc", "other"])),
      c2pa_found: z.boolean(),
      bytes_in: z.number().int(),
      bytes_out: z.number().int(),
      expires_at: z.string().nullable(),
    }),
    async handle(ctx) {
      const source = ctx.input;
      const limits = source.kind === "image" ? IMAGE_LIMITS : VIDEO_LIMITS;
      const located = await locate(source, limits, {
        guard: ctx.capability("outbound"),
        serviceMedia: ctx.capability("service-media"),
      });
      if (await ctx.isPaused(PAUSE)) throw new ApiError(503, METADATA_ERRORS.paused);
      if (source.kind === "image") return attempt(ctx, source, located, downloadTimeoutMs);
      const slots = videoSlots(ctx.capability("counters"), ctx.clock);
      const deadline = Date.now() + slots.holdMs;
      return slots.run((signal) => attempt(ctx, source, located, downloadTimeoutMs, { signal, deadline }));
    },
  });

export const removeMetadata = removeMetadataOperation();
