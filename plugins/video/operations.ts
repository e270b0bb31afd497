// The video operations (spec part 2, the video endpoints): POST /generate-video and /generate-animation
// check every rule before the charge (input.ts; reference media downloaded and measured too, references.ts)
// and queue one job (job.ts); GET /video-status and /videos read the records (records.ts); POST /merge-videos
// is synchronous: charge, concatenate for real (merge.ts), refund on failure.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  findOwnRecord,
  isJobId,
  jobListInput,
  listOwnRecords,
  megabytes,
  type OperationContext,
  operation,
  outboundToApiError,
  PAGE_BOUNDS,
  PRIVATE_KEY_PREFIX,
  pageBody,
  pageShape,
  partnerJobIdField,
  shown,
  videoFrameSize,
} from "mediagate/plugin";
import { z } from "zod";
import { VIDEO_ERRORS } from "./errors.ts";
import { checkRequestUrls, decodedSize, type FrameInput, GenerateAnimationInput, GenerateVideoInput } from "./input.ts";
import type { StoredFrame, StoredInput } from "./job.ts";
import { concatClips } from "./merge.ts";
import { ANIMATION, MERGE_PRICE, MODELS, SHORT_EDGE, type VideoModel, videoPrice } from "./prices.ts";
import {
  insertMerge,
  listView,
  type MergePart,
  mergedSpoken,
  statusView,
  storeMergeFile,
  type VideoOutput,
  type VideoRecords,
  videoJobs,
} from "./records.ts";
import { type MeasuredReference, measureReferenceAudio, measureReferenceVideos } from "./references.ts";

const MAX_FRAME_BYTES = megabytes(20);
const MAX_REF_IMAGES_TOTAL = megabytes(72);
const MERGE_RETENTION_MS = 7 * 24 * 3600 * 1000;
const MIME_EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

interface Upload {
  key: string;
  bytes: Uint8Array;
  contentType: string;
}

/** A base64 frame becomes an upload under a per-request key (deleted again if the charge is refused). */
function storeFrame(frame: FrameInput | null, prefix: string, name: string, uploads: Upload[]): StoredFrame | null {
  if (!frame) return null;
  if ("url" in frame) return { url: frame.url };
  const key = `${prefix}/${name}.${MIME_EXT[frame.mimeType] ?? "img"}`;
  uploads.push({ key, bytes: Buffer.from(frame.base64, "base64"), contentType: frame.mimeType });
  return { key, mime_type: frame.mimeType };
}

const frameUrl = (ctx: OperationContext, f: StoredFrame | null) =>
  f === null ? null : "url" in f ? f.url : ctx.mediaUrl(f.key);

function checkUrls(ctx: OperationContext, req: Parameters<typeof checkRequestUrls>[0], start: "image" | "start_image") {
  const guard = ctx.capability("outbound");
  const failure = checkRequestUrls(req, (u) => guard.checkUrl(u), { start });
  if (failure) throw new ApiError(400, failure);
}

/** The callback URL's host must resolve to public addresses now, before the charge (part 1, "Webhooks"). */
async function checkCallback(ctx: OperationContext, url: string | null) {
  if (!url) return;
  try {
    await ctx.capability("outbound").resolvePublic(url);
  } catch (err) {
    // Only a refused URL is the partner's; a DNS failure here is ours and passes through.
    throw outboundToApiError(err, { invalidUrl: "callback_url must be a public https URL" });
  }
}

/**
 * Charges and queues, and answers the 202; uploads are written first (the job may start at once) and removed if
 * the charge fails. The record's frame links are the stored input's frames.
 */
async function submit(
  ctx: OperationContext,
  args: {
    credits: number;
    partnerJobId: string | null;
    callbackUrl: string | null;
    input: StoredInput;
    uploads: Upload[];
    record: Omit<Parameters<VideoRecords["insert"]>[1], "job_id" | "partner_id" | "start_frame_url" | "end_frame_url">;
    insufficient: (n: number) => string;
    description: string;
  },
) {
  for (const u of args.uploads) await ctx.blobs.put(u.key, u.bytes, { contentType: u.contentType });
  const records = ctx.capability("video.records");
  const frames = {
    start_frame_url: frameUrl(ctx, args.input.start_frame),
    end_frame_url: frameUrl(ctx, args.input.end_frame),
  };
  try {
    const job = await ctx.submitJob({
      kind: "video",
      state: "queued",
      credits: args.credits,
      partnerJobId: args.partnerJobId,
      callbackUrl: args.callbackUrl,
      input: { ...args.input },
      description: args.description,
      insufficientCredits: args.insufficient,
      insertRecords: (trx, [jobId]) =>
        records.insert(trx, { ...args.record, ...frames, job_id: jobId!, partner_id: ctx.partner.id }),
    });
    return {
      job_id: job.jobId,
      partner_job_id: args.partnerJobId,
      status: "queued" as const,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  } catch (err) {
    // Bad input (402, 429) changes nothing: no row, no file.
    for (const u of args.uploads) await ctx.blobs.remove(u.key).catch(() => {});
    throw err;
  }
}

// Field groups of the answers below, in the spec's order.
const jobIds = { job_id: z.string(), partner_job_id: z.string().nullable() };
const charged = { credits_used: z.number().int(), credits_remaining: z.number().int() };

const submitted = z.object({ ...jobIds, status: z.literal("queued"), ...charged });

// ---------------------------------------------------------------------------------------------------------
// Operations.

const generateVideo = operation({
  method: "POST",
  path: "/generate-video",
  status: 202,
  inflight: true,
  summary: "Generate a video from a prompt, frames or reference media",
  input: GenerateVideoInput,
  // Two 20 MB frames or 72 MB of reference images travel as base64; the exact caps are checked below.
  maxBodyBytes: 160_000_000,
  bodyTooLarge: VIDEO_ERRORS.referenceImagesTooLarge,
  output: submitted,
  async handle(ctx) {
    const req = ctx.input;
    const model = MODELS[req.model] as VideoModel;
    for (const [frame, text] of [
      [req.startFrame, VIDEO_ERRORS.imageTooLarge],
      [req.endFrame, VIDEO_ERRORS.endImageTooLarge],
    ] as const) {
      if (frame && "base64" in frame && decodedSize(frame.base64) > MAX_FRAME_BYTES) throw new ApiError(413, text);
    }
    let refBytes = 0;
    for (const r of req.referenceImages) {
      if (!("base64" in r)) continue;
      const size = decodedSize(r.base64);
      if (size > MAX_FRAME_BYTES) throw new ApiError(413, VIDEO_ERRORS.referenceImageTooLarge);
      refBytes += size;
    }
    if (refBytes > MAX_REF_IMAGES_TOTAL) throw new ApiError(413, VIDEO_ERRORS.referenceImagesTooLarge);
    checkUrls(ctx, req, "image");
    await checkCallback(ctx, req.callbackUrl);
    if (!ctx.capability("video.generate").route(req.modelUsed)) throw new ApiError(500, VIDEO_ERRORS.notAvailable);

    // A custom account without a rate is refused before any download (the price only needs to know whether
    // reference videos are present; the measured seconds come next).
    const texts = {
      noReferenceRate: VIDEO_ERRORS.customNoReferenceRate,
      noRate: VIDEO_ERRORS.customNoRate(req.quality, req.duration),
    };
    const hasVideos = req.referenceVideoUrls.length > 0;
    ctx.priceFor(videoPrice(req.model, req.quality, req.outputSeconds, req.sound, hasVideos ? 0 : null, texts));

    let videos: MeasuredReference[] = [];
    let audio: MeasuredReference[] = [];
    if (hasVideos || req.referenceAudioUrls.length > 0) {
      const deps = { guard: ctx.capability("outbound"), engine: ctx.capability("media"), signal: ctx.request.signal };
      if (hasVideos)
        videos = await measureReferenceVideos(req.referenceVideoUrls, model.references!.videos, req.model, deps);
      if (req.referenceAudioUrls.length > 0)
        audio = await measureReferenceAudio(req.referenceAudioUrls, model.references!.audio, req.model, deps);
    }
    const measured = hasVideos ? videos.reduce((s, v) => s + v.seconds, 0) : null;
    const credits = ctx.priceFor(videoPrice(req.model, req.quality, req.outputSeconds, req.sound, measured, texts));

    // Frames are shown as media links (128 random bits); references never are, so they are private.
    const token = randomBytes(16).toString("hex");
    const prefix = `inputs/${token}`;
    const privatePrefix = `${PRIVATE_KEY_PREFIX}inputs/${token}`;
    const uploads: Upload[] = [];
    const start = storeFrame(req.startFrame, prefix, "start", uploads);
    const end = storeFrame(req.endFrame, prefix, "end", uploads);
    const refs = req.referenceImages.map((r, i) => storeFrame(r, privatePrefix, `ref-image-${i + 1}`, uploads)!);
    // Kept as downloaded; the job normalizes them (references.ts).
    const keep = (list: MeasuredReference[], name: string) =>
      list.map((m, i) => {
        const key = `${privatePrefix}/${name}-${i + 1}.bin`;
        uploads.push({ key, bytes: m.bytes, contentType: "application/octet-stream" });
        return { key, seconds: m.seconds, url: m.url, raw: true as const };
      });
    const { width, height } = videoFrameSize(req.aspectRatio, SHORT_EDGE[req.quality]);
    const input: StoredInput = {
      width,
      height,
      seconds: req.outputSeconds,
      sound: req.sound,
      strip_metadata: req.stripMetadata,
      negative_prompt: req.negativePrompt,
      route: req.modelUsed,
      start_frame: start,
      end_frame: end,
      reference_images: refs,
      reference_videos: keep(videos, "ref-video"),
      reference_audio: keep(audio, "ref-audio"),
    };
    return submit(ctx, {
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      input,
      uploads,
      insufficient: VIDEO_ERRORS.insufficient,
      description: `Video generation: ${req.model} ${req.quality} ${req.outputSeconds}s`,
      record: {
        kind: "video",
        prompt: req.prompt,
        model: req.model,
        model_used: req.modelUsed,
        quality: req.quality,
        duration: req.outputSeconds,
        aspect_ratio: req.aspectRatio,
      },
    });
  },
});

const generateAnimation = operation({
  method: "POST",
  path: "/generate-animation",
  status: 202,
  inflight: true,
  summary: "One 8-second 1080p clip with audio from a start frame to an end frame",
  input: GenerateAnimationInput,
  maxBodyBytes: 60_000_000,
  bodyTooLarge: VIDEO_ERRORS.startImageTooLarge,
  output: submitted,
  async handle(ctx) {
    const req = ctx.input;
    for (const [frame, text] of [
      [req.startFrame, VIDEO_ERRORS.startImageTooLarge],
      [req.endFrame, VIDEO_ERRORS.endImageTooLarge],
    ] as const) {
      if ("base64" in frame && decodedSize(frame.base64) > MAX_FRAME_BYTES) throw new ApiError(413, text);
    }
    checkUrls(ctx, req, "start_image");
    await checkCallback(ctx, req.callbackUrl);
    if (!ctx.capability("video.generate").route("animation")) throw new ApiError(500, VIDEO_ERRORS.notAvailable);
    const credits = ctx.priceFor({ lines: [{ key: ["animation"], rate: ANIMATION.price }] });

    const prefix = `inputs/${randomBytes(16).toString("hex")}`; // shown as media links: 128 random bits
    const uploads: Upload[] = [];
    const start = storeFrame(req.startFrame, prefix, "start", uploads);
    const end = storeFrame(req.endFrame, prefix, "end", uploads);
    const { width, height } = videoFrameSize(req.aspectRatio, SHORT_EDGE[ANIMATION.quality]);
    return submit(ctx, {
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      uploads,
      insufficient: VIDEO_ERRORS.animationInsufficient,
      description: "Animation: 8s 1080p",
      input: {
        width,
        height,
        seconds: ANIMATION.seconds,
        sound: true,
        strip_metadata: false,
        negative_prompt: null,
        route: "animation",
        start_frame: start,
        end_frame: end,
        reference_images: [],
        reference_videos: [],
        reference_audio: [],
      },
      record: {
        kind: "animation",
        prompt: req.prompt,
        model: "animation",
        model_used: "animation",
        quality: ANIMATION.quality,
        duration: ANIMATION.seconds,
        aspect_ratio: req.aspectRatio,
      },
    });
  },
});

const videoStatus = operation({
  method: "GET",
  path: "/video-status/<job_id>",
  summary: "Status of a video, animation or video upscale job",
  output: z.object({
    job_id: z.string(),
    status: z.string(),
    progress: z.number().int().optional(),
    message: z.string().optional(),
    video_url: z.string().optional(),
    duration: z.number().int().optional(),
    metadata_removed: z.boolean().optional(),
    error: z.string().optional(),
  }),
  async handle(ctx) {
    const row = await findOwnRecord(videoJobs, ctx.db, ctx.partner.id, ctx.params.job_id);
    return statusView(row, ctx.mediaUrl);
  },
});

const listVideos = operation({
  method: "GET",
  path: "/videos",
  summary: "This account's video jobs, newest first",
  input: jobListInput(PAGE_BOUNDS.videos, {
    status: VIDEO_ERRORS.listStatus,
    since: "ISO 8601 UTC timestamp: jobs created at or after it",
  }),
  output: pageShape(
    "videos",
    z.object({
      ...jobIds,
      status: z.string(),
      prompt: z.string(),
      model: z.string(),
      model_used: z.string(),
      duration: z.number().int(),
      aspect_ratio: z.string(),
      credits_used: z.number().int(),
      credits_refunded: z.number().int(),
      video_url: z.string().nullable(),
      start_frame_url: z.string().nullable(),
      end_frame_url: z.string().nullable(),
      created_at: z.string(),
      metadata_removed: z.boolean(),
      progress: z.number().int().nullable(),
      message: z.string().nullable(),
      error: z.string().nullable(),
    }),
  ),
  async handle(ctx) {
    const page = await listOwnRecords(videoJobs, ctx.db, ctx.partner.id, ctx.input);
    return pageBody("videos", page, ctx.input, (row) => listView(row, ctx.mediaUrl));
  },
});

/**
 * The spoken record of a merge (records.ts mergedSpoken): the clips' records shifted by the clips' lengths, each
 * clip probed for its length and its sound only when some clip has a record. Never fails the merge.
 */
async function mergeSpoken(
  ctx: OperationContext,
  records: Array<VideoOutput["spoken"]>,
  clips: Uint8Array[],
): Promise<VideoOutput["spoken"]> {
  if (!records.some((r) => r)) return null;
  try {
    const parts: MergePart[] = [];
    for (const [i, clip] of clips.entries()) {
      const probe = await ctx.capability("media").probe(clip, "clip.mp4", { signal: ctx.request.signal });
      parts.push({
        spoken: records[i],
        hasAudio: probe.streams.some((st) => st.type === "audio"),
        seconds: probe.durationSeconds,
      });
    }
    return mergedSpoken(parts);
  } catch (err) {
    ctx.log.warn(`merge: no spoken record: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}

const mergeVideos = operation({
  method: "POST",
  path: "/merge-videos",
  summary: "Concatenate 2 or more of your completed clips, in order",
  input: z
    .object({
      job_ids: z
        .unknown()
        .optional()
        .meta({ type: "array", items: { type: "string" }, minItems: 2 }),
      partner_job_id: partnerJobIdField().meta({ type: "string" }),
    })
    .meta({ required: ["job_ids"] })
    .transform((raw, c) => {
      const ids = raw.job_ids;
      if (!Array.isArray(ids) || ids.length < 2) {
        c.addIssue({ code: "custom", message: VIDEO_ERRORS.mergeNeedTwo });
        return z.NEVER;
      }
      for (const id of ids) {
        if (typeof id !== "string" || !isJobId(id)) {
          c.addIssue({ code: "custom", message: VIDEO_ERRORS.mergeInvalidJobId(shown(id, 100)) });
          return z.NEVER;
        }
      }
      return { jobIds: ids as string[], partnerJobId: raw.partner_job_id };
    }),
  output: z.object({
    merge_id: z.string(),
    partner_job_id: z.string().nullable(),
    merged_url: z.string(),
    ...charged,
  }),
  async handle(ctx) {
    const { jobIds, partnerJobId } = ctx.input;
    const unique = [...new Set(jobIds)];
    const rows = await videoJobs
      .owned(ctx.db, ctx.partner.id)
      .where("r.job_id", "in", unique)
      .where("j.state", "=", "complete")
      .execute();
    if (rows.length !== unique.length) throw new ApiError(404, VIDEO_ERRORS.mergeNotFound);
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    const clips: Uint8Array[] = [];
    for (const id of jobIds) {
      const bytes = await ctx.blobs.get(byId.get(id)!.output!.video_key);
      if (!bytes) throw new ApiError(404, VIDEO_ERRORS.mergeFileMissing(id));
      clips.push(bytes);
    }

    const credits = ctx.priceFor({ lines: [{ key: ["merge_videos"], rate: MERGE_PRICE }] });
    const expiresAt = new Date(ctx.clock.now() + MERGE_RETENTION_MS);
    const job = await ctx.submitJob({
      kind: "merge",
      state: "processing",
      credits,
      partnerJobId,
      description: `Merge of ${jobIds.length} clips`,
      insufficientCredits: VIDEO_ERRORS.mergeInsufficient,
      input: { job_ids: jobIds },
      insertRecords: (trx, [mergeId]) =>
        insertMerge(trx, { merge_id: mergeId!, partner_id: ctx.partner.id, job_ids: jobIds, expires_at: expiresAt }),
    });

    let key: string;
    try {
      const merged = await concatClips(ctx.capability("media"), clips, {
        signal: ctx.request.signal,
        timeoutMs: 600_000,
      });
      key = `merges/${job.jobId}-${randomBytes(16).toString("hex")}.mp4`; // 128 random bits: a capability URL
      await ctx.blobs.put(key, merged.bytes, { contentType: "video/mp4", expiresAt });
      await storeMergeFile(ctx.db, job.jobId, key, merged.durationSeconds);
      const spoken = await mergeSpoken(
        ctx,
        jobIds.map((id) => byId.get(id)!.output!.spoken),
        clips,
      );
      await ctx.finishJob(job.jobId, {
        state: "complete",
        refund: false,
        output: { video_key: key, duration: merged.durationSeconds, spoken },
      });
    } catch (err) {
      await ctx.finishJob(job.jobId, { state: "failed", refund: true, error: VIDEO_ERRORS.mergeFailed });
      ctx.log.warn(`merge ${job.jobId} failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new ApiError(502, VIDEO_ERRORS.mergeFailed);
    }
    return {
      merge_id: job.jobId,
      partner_job_id: partnerJobId,
      merged_url: ctx.mediaUrl(key),
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

export const videoOperations = [generateVideo, videoStatus, listVideos, generateAnimation, mergeVideos];
