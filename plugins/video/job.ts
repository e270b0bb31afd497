// The video job runners (spec part 2, "Video job", the video state table and events): one clip rendered by
// the provider of its model's route, its frames and references read only when it first submits, optionally
// stripped of metadata, stored; and the merge's job kind, which only recovers a merge cut off mid-request.
import {
  checkPicture,
  failFromProvider,
  finishGeneratedClip,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  megabytes,
  mp4MetadataCategories,
  oneStepStates,
  progressBetween,
  QUEUED_PROCESSING_COMPLETE,
  type ReferenceMedia,
  type VideoFrame,
  type VideoOutput,
} from "mediagate/plugin";
import { VIDEO_ERRORS } from "./errors.ts";
import { eventData, jobPrompt } from "./records.ts";
import { normalizeReference, ReferenceEncodeError, type ReferenceKind } from "./references.ts";

/** The largest frame a job fetches by URL (spec part 2, "Limits"): as large as an uploaded one may be. */
const FRAME_FETCH = { maxBytes: megabytes(20), timeoutMs: 30_000 };

/** A frame as the job finds it: a stored upload, or a URL it fetches. */
export type StoredFrame = { key: string; mime_type: string } | { url: string };

export interface StoredInput {
  width: number;
  height: number;
  seconds: number;
  sound: boolean;
  strip_metadata: boolean;
  negative_prompt: string | null;
  /** The provider route: the model used, or "animation". */
  route: string;
  start_frame: StoredFrame | null;
  end_frame: StoredFrame | null;
  reference_images: StoredFrame[];
  /** `raw`: the file as downloaded, normalized by the job (jobs queued before that keep normalized files). */
  reference_videos: Array<{ key: string; seconds: number; url: string; raw?: true }>;
  reference_audio: Array<{ key: string; seconds: number; url: string; raw?: true }>;
}

async function loadFrame(ctx: JobRunContext, frame: StoredFrame): Promise<VideoFrame> {
  if ("key" in frame) {
    const bytes = await ctx.blobs.get(frame.key);
    if (!bytes) throw new JobFailure(VIDEO_ERRORS.frameUnavailable);
    return { bytes, mimeType: frame.mime_type };
  }
  try {
    const res = await ctx.capability("outbound").fetch(frame.url, { ...FRAME_FETCH, signal: ctx.signal });
    // A URL frame is fetched here, after the charge: one over the pixel budget (lib/media/budgets.ts) fails
    // the job, refunded, before anything decodes it.
    const budget = checkPicture(res.body);
    if (!budget.ok) throw new Error(budget.reason);
    return {
      bytes: res.body,
      mimeType: res.headers["content-type"]?.split(";")[0]?.trim() || "image/jpeg",
      url: frame.url,
    };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn(`video ${ctx.jobId}: frame ${frame.url} unavailable: ${(err as Error).message}`);
    throw new JobFailure(VIDEO_ERRORS.frameUnavailable);
  }
}

/** The stored references, normalized here (job work: a busy media pool makes the job wait, never the partner). */
async function loadReferences(
  ctx: JobRunContext,
  refs: StoredInput["reference_videos"],
  kind: ReferenceKind,
): Promise<ReferenceMedia[]> {
  const out: ReferenceMedia[] = [];
  for (const r of refs) {
    let bytes = await ctx.blobs.get(r.key);
    if (!bytes) throw new JobFailure(VIDEO_ERRORS.failed);
    if (r.raw) {
      try {
        bytes = await normalizeReference(kind, bytes, ctx.capability("media"), { signal: ctx.signal });
      } catch (err) {
        if (!(err instanceof ReferenceEncodeError)) throw err;
        ctx.log.warn(`video ${ctx.jobId}: reference ${kind} ${r.url} unusable: ${err.message}`);
        throw new JobFailure(VIDEO_ERRORS.failed);
      }
    }
    out.push({ bytes, seconds: r.seconds, url: r.url });
  }
  return out;
}

/**
 * How long the upstream may take before the job fails, refunded (its work cancelled where the provider can):
 * the spec gives no time-out; an hour is well beyond any model's render of a clip of at most 10 s.
 */
const UPSTREAM_DEADLINE_SECONDS = 3600;

export const videoJob: JobKindDeclaration<StoredInput> = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: VIDEO_ERRORS.failed,
  retries: 1,
  timeoutSeconds: 1800,
  concurrency: 2,
  events: { success: "video.completed", failure: "video.failed", data: (trx, job) => eventData(trx, job.jobId) },
  async run(ctx) {
    if (ctx.state === "queued") await ctx.moveTo("processing", "Preparing");
    const input = ctx.input;
    const provider = ctx.capability("video.generate").route(input.route);
    if (!provider) throw new JobFailure(VIDEO_ERRORS.failed);

    let bytes: Uint8Array;
    let spoken: VideoOutput["spoken"] = null;
    try {
      // Assembled once, when the job first submits: frames and references are read only then.
      const video = await ctx.awaitUpstream(
        "render",
        provider,
        async () => {
          const startFrame = input.start_frame ? await loadFrame(ctx, input.start_frame) : undefined;
          const endFrame = input.end_frame ? await loadFrame(ctx, input.end_frame) : undefined;
          const referenceImages: VideoFrame[] = [];
          for (const f of input.reference_images) referenceImages.push(await loadFrame(ctx, f));
          return {
            prompt: await jobPrompt(ctx.db, ctx.jobId),
            negativePrompt: input.negative_prompt,
            model: input.route,
            width: input.width,
            height: input.height,
            seconds: input.seconds,
            sound: input.sound,
            startFrame,
            endFrame,
            referenceImages,
            referenceVideos: await loadReferences(ctx, input.reference_videos, "video"),
            referenceAudio: await loadReferences(ctx, input.reference_audio, "audio"),
          };
        },
        { deadlineSeconds: UPSTREAM_DEADLINE_SECONDS, onProgress: progressBetween(ctx, 5, 90) },
      );
      bytes = video.bytes;
      spoken = video.spoken ?? null;
    } catch (err) {
      if (err instanceof JobFailure) throw err; // a frame or reference that is gone
      failFromProvider(ctx, err, VIDEO_ERRORS, `video ${ctx.jobId}: provider failed`);
    }

    if (input.strip_metadata) await ctx.progress(92, "Removing metadata");
    const clip = await finishGeneratedClip(ctx.capability("media"), bytes, {
      strip: input.strip_metadata,
      signal: ctx.signal,
      timeoutMs: 120_000,
    });
    bytes = clip.bytes;
    const records = ctx.capability("video.records");
    const output = await records.storeOutput(ctx.jobId, bytes, {
      duration: Math.round(clip.seconds),
      // Computed from the stored bytes, not copied from the request (spec: "carries none of that metadata").
      metadata_removed: input.strip_metadata && mp4MetadataCategories(bytes).length === 0,
      width: input.width,
      height: input.height,
      // Kept with the job for captions (stripping metadata copies the streams: the times still hold).
      spoken,
    });
    return { state: "complete", output: { ...output } };
  },
};

/**
 * Merges run inside their request (no queue); declared so that a merge whose process died mid-request is
 * failed and refunded by the kernel (core/jobs.ts recoverOrphans) with the text a failed merge stores.
 */
export const mergeJob: JobKindDeclaration = {
  ...oneStepStates("processing", "complete", "failed"),
  failError: VIDEO_ERRORS.mergeFailed,
};
