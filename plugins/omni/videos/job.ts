// The Omni video job (spec part 3, "Omni video job", its states and events): one clip rendered through
// `omni.generate`. The job waits for the provider through `ctx.awaitUpstream` (contracts/upstream.ts): it
// submits once and holds no worker slot while the upstream renders; each poll runs the job from the top, so
// what comes before the wait is cheap, and the request (stored images read, URLs fetched) is assembled only at
// submit. Batch sections (../batch) and repaired prompts (../improve) are this same job kind.
//
// Choices where the spec is silent, written down here:
// - Frames and reference images sent by URL are fetched by the job through the outbound guard; a failure
//   there ends the job `error` (refunded, not prompt-fixable).
// - A job whose provider blocked the prompt ends with OMNI_ERRORS.videoUnsafe: that text is what
//   `prompt_fixable` means.
// - The upstream has an hour (UPSTREAM_DEADLINE_SECONDS); past it the job ends `error` with
//   OMNI_ERRORS.videoFailed, refunded, as any other provider failure.
import {
  checkPicture,
  failFromProvider,
  finishGeneratedClip,
  imageKind,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  mediaToken,
  mp4MetadataCategories,
  oneStepStates,
  progressBetween,
  type VideoFrame,
} from "mediagate/plugin";
import { OMNI_ERRORS } from "../errors.ts";
import { LIMITS } from "../prices.ts";
import { type OmniVideoOutput, VIDEOS_TABLE } from "../records.ts";
import { eventData } from "./records.ts";
import { cutReferenceWindow, ReferenceCutError } from "./reference-window.ts";
import type { OmniJobInput, StoredImage } from "./types.ts";

const IMAGE_FETCH = { maxBytes: LIMITS.imageMaxBytes, timeoutMs: 30_000 };

async function storedImage(ctx: JobRunContext, image: StoredImage): Promise<VideoFrame> {
  const bytes = await ctx.blobs.get(image.key);
  if (!bytes) throw new JobFailure(OMNI_ERRORS.referenceLost);
  // Stored before pixel budgets were checked at the door (a character of an older version): not rendered.
  if (!checkPicture(bytes).ok) throw new JobFailure(OMNI_ERRORS.referenceLost);
  return { bytes, mimeType: image.mime_type };
}

async function fetchedImage(ctx: JobRunContext, url: string): Promise<VideoFrame> {
  try {
    const res = await ctx.capability("outbound").fetch(url, { ...IMAGE_FETCH, signal: ctx.signal });
    const mimeType = imageKind(res.body);
    if (!mimeType) throw new Error("not a PNG, JPEG or WebP image");
    // URL frames and images are fetched here, after the charge (the spec's URLs are read when the job runs):
    // one over the pixel budget fails the job, refunded, before anything decodes it.
    const budget = checkPicture(res.body);
    if (!budget.ok) throw new Error(budget.reason);
    return { bytes: res.body, mimeType, url };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn(`omni ${ctx.jobId}: image ${url} unavailable: ${(err as Error).message}`);
    throw new JobFailure(OMNI_ERRORS.referenceLost);
  }
}

/**
 * How long the upstream may take before the job fails, refunded (OMNI_ERRORS.videoFailed; its work cancelled where the
 * provider can): the spec gives no time-out. An hour is far beyond any render of a clip of at most 10 s, 4k
 * included (the job's own per-attempt limit, timeoutSeconds, used to bound the whole render at 30 minutes;
 * now an attempt is one poll, and this bounds the wait).
 */
const UPSTREAM_DEADLINE_SECONDS = 3600;

export const omniVideoJob: JobKindDeclaration<OmniJobInput> = {
  ...oneStepStates("processing", "complete", "error"),
  failError: OMNI_ERRORS.videoFailed,
  retries: 1,
  timeoutSeconds: 1800,
  concurrency: 2,
  events: {
    success: "omni_video.completed",
    failure: "omni_video.failed",
    data: (trx, job) => eventData(trx, job.jobId),
  },
  async run(ctx) {
    const input = ctx.input;
    // Runs again from the top at every poll of the upstream (ctx.awaitUpstream): "Preparing" is shown only
    // before the request is submitted, so a poll does not put the message back.
    if (ctx.upstreamStep === null) await ctx.progress(1, "Preparing");

    let bytes: Uint8Array;
    let spoken: OmniVideoOutput["spoken"] = null;
    // While the request is assembled, a failure is not the provider's: a JobFailure ends the job as it says,
    // anything else (storage, database) is retried like any error of the job.
    let assembling = false;
    try {
      // Assembled once, when the job first submits: stored images are read and URLs fetched only then.
      const video = await ctx.awaitUpstream(
        "render",
        ctx.capability("omni.generate"),
        async () => {
          assembling = true;
          const row = await ctx.db
            .selectFrom(VIDEOS_TABLE)
            .select(["prompt"])
            .where("job_id", "=", ctx.jobId)
            .executeTakeFirstOrThrow();
          const characters = [];
          for (const c of input.characters)
            characters.push({
              id: c.id,
              name: c.name,
              description: c.description,
              voice: c.voice,
              image: await storedImage(ctx, c.image),
            });
          const referenceImages: VideoFrame[] = [];
          for (const img of input.images) referenceImages.push(await storedImage(ctx, img));
          for (const url of input.image_urls) referenceImages.push(await fetchedImage(ctx, url));
          const firstFrame = input.first_frame_url ? await fetchedImage(ctx, input.first_frame_url) : undefined;
          const lastFrame = input.last_frame_url ? await fetchedImage(ctx, input.last_frame_url) : undefined;
          let referenceVideo = null;
          if (input.reference_video) {
            const ref = input.reference_video;
            const bytes = await ctx.blobs.get(ref.key);
            if (!bytes) throw new JobFailure(OMNI_ERRORS.referenceLost);
            referenceVideo = { bytes, seconds: ref.seconds, url: ref.url };
            // The window is cut here, not in the request (references.ts): a busy media pool makes the job wait.
            if (ref.start !== undefined && ref.end !== undefined) {
              try {
                referenceVideo = await cutReferenceWindow(
                  { bytes, url: ref.url, start: ref.start, end: ref.end },
                  ctx.capability("media"),
                  { signal: ctx.signal },
                );
              } catch (err) {
                if (!(err instanceof ReferenceCutError)) throw err;
                ctx.log.warn(`omni ${ctx.jobId}: reference video ${ref.url} unusable: ${err.message}`);
                throw new JobFailure(OMNI_ERRORS.referenceLost);
              }
            }
          }
          assembling = false;
          // Handed over now: the bar shows the wait at once, as the one-call provider's first report did (the
          // first poll may be a second or more away).
          await ctx.progress(5, "Generating");
          return {
            prompt: row.prompt,
            model: input.model,
            width: input.width,
            height: input.height,
            seconds: input.seconds,
            seed: input.seed,
            characters,
            voices: input.voices,
            referenceImages,
            referenceVideo,
            firstFrame,
            lastFrame,
          };
        },
        { deadlineSeconds: UPSTREAM_DEADLINE_SECONDS, onProgress: progressBetween(ctx, 5, 90) },
      );
      bytes = video.bytes;
      spoken = video.spoken ?? null;
    } catch (err) {
      if (assembling) throw err;
      // A deadline that passed fails with the same sanitized text.
      const texts = { unsafe: OMNI_ERRORS.videoUnsafe, failed: OMNI_ERRORS.videoFailed };
      failFromProvider(ctx, err, texts, `omni ${ctx.jobId}: provider failed`);
    }

    if (input.strip_metadata) await ctx.progress(92, "Removing metadata");
    const clip = await finishGeneratedClip(ctx.capability("media"), bytes, {
      strip: input.strip_metadata,
      signal: ctx.signal,
    });
    bytes = clip.bytes;
    const key = `clips/${ctx.jobId}-${mediaToken()}.mp4`; // a capability URL; a rerun writes a new name
    await ctx.blobs.put(key, bytes, { contentType: "video/mp4" });
    const output: OmniVideoOutput = {
      video_key: key,
      video_url: ctx.mediaUrl(key),
      duration: Math.round(clip.seconds),
      width: input.width,
      height: input.height,
      // From the stored bytes, not from the request.
      metadata_removed: mp4MetadataCategories(bytes).length === 0,
      spoken,
    };
    return { state: "complete", output: { ...output } };
  },
};
