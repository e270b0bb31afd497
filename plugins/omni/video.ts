// Omni videos: the job that renders one clip through `omni.generate`, POST /omni/video, its status, the list
// and the events. Batch sections (batch.ts) and repaired prompts (improve.ts) are the same job kind, their
// records written through `insertVideoRecord` (and, for sections, `PendingUploads` + `characterSnapshot`)
// below, so every Omni clip reads, lists and signals alike.
//
// The job waits for the provider through `ctx.awaitUpstream` (contracts/upstream.ts): it submits once and
// holds no worker slot while the upstream renders; each poll runs the job from the top, so what comes before
// the wait is cheap, and the request (stored images read, URLs fetched) is assembled only at submit.
//
// Choices where the spec is silent, written down here:
// - The status view and the list entries carry the same fields (the spec's list), plus `partner_job_id`,
//   and `progress` and `message` while the clip renders (non-breaking additions); `video_url` is null until
//   the job is complete; `duration` is the clip's measured length once complete, the requested one before.
// - The webhook `data` is the status view without `request_id` (part 1: "the fields of the Omni status response").
// - Character images, voices and base64 reference images are copied with the job at submit (private keys):
//   deleting a character or voice afterwards does not change a clip already asked for. Frames and reference
//   images sent by URL are fetched by the job through the outbound guard; a failure there ends the job
//   `error` (refunded, not prompt-fixable).
// - A job whose provider blocked the prompt ends with E.videoUnsafe: that text is what `prompt_fixable` means.
// - The upstream has an hour (UPSTREAM_DEADLINE_SECONDS); past it the job ends `error` with E.videoFailed,
//   refunded, as any other provider failure.
import { z } from "zod";
import {
  ApiError,
  type JobKindDeclaration,
  type JobRunContext,
  finishGeneratedClip,
  JobFailure,
  progressBetween,
  limitParam,
  mediaToken,
  mp4MetadataCategories,
  notFound,
  offsetParam,
  operation,
  type OperationContext,
  PAGE_BOUNDS,
  pageBody,
  pageShape,
  parseSince,
  type PluginDb,
  PRIVATE_KEY_PREFIX,
  UnsafeContentError,
  type VideoFrame, checkPicture, IMAGE_EXT, imageKind,
  isTransient,
} from "mediagate/plugin";
import { OMNI_ERRORS as E } from "./errors.ts";
import { frameSize, LIMITS, OMNI_FEATURE, OMNI_PAUSE, omniVideoPrice, type OmniAspectRatio, type OmniDuration, type OmniModel, type OmniResolution } from "./limits.ts";
import { type CharacterRecord, type CharacterVoice, type OmniVideoOutput, type OmniVideoRecord, omniVideos, timestamp, VIDEOS_TABLE } from "./records.ts";
import type { OmniJobInput, PreparedOmniVideo, StoredImage } from "./types.ts";
import { OmniVideoInput, prepareOmniVideo } from "./video-input.ts";
import { cutReferenceWindow, ReferenceCutError } from "./reference-video.ts";

const JOB_ID = /^svc-[0-9a-f]{8}$/;
const IMAGE_FETCH = { maxBytes: LIMITS.imageMaxBytes, timeoutMs: 30_000 };

// ---------------------------------------------------------------------------------------------------------
// The job.

async function storedImage(ctx: JobRunContext, image: StoredImage): Promise<VideoFrame> {
  const bytes = await ctx.blobs.get(image.key);
  if (!bytes) throw new JobFailure(E.referenceLost);
  // Stored before pixel budgets were checked at the door (a character of an older version): not rendered.
  if (!checkPicture(bytes).ok) throw new JobFailure(E.referenceLost);
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
    throw new JobFailure(E.referenceLost);
  }
}

/**
 * How long the upstream may take before the job fails, refunded (E.videoFailed; its work cancelled where the
 * provider can): the spec gives no time-out. An hour is far beyond any render of a clip of at most 10 s, 4k
 * included (the job's own per-attempt limit, timeoutSeconds, used to bound the whole render at 30 minutes;
 * now an attempt is one poll, and this bounds the wait).
 */
const UPSTREAM_DEADLINE_SECONDS = 3600;

export const omniVideoJob: JobKindDeclaration<OmniJobInput> = {
  states: ["processing", "complete", "error"],
  initial: "processing",
  transitions: { processing: ["complete", "error"] },
  terminal: { complete: "success", error: "failure" },
  failState: "error",
  failError: E.videoFailed,
  retries: 1,
  timeoutSeconds: 1800,
  concurrency: 2,
  events: { success: "omni_video.completed", failure: "omni_video.failed", data: (trx, job) => eventData(trx, job.jobId) },
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
          const row = await ctx.db.selectFrom(VIDEOS_TABLE).select(["prompt"]).where("job_id", "=", ctx.jobId).executeTakeFirstOrThrow();
          const characters = [];
          for (const c of input.characters) characters.push({ id: c.id, name: c.name, description: c.description, voice: c.voice, image: await storedImage(ctx, c.image) });
          const referenceImages: VideoFrame[] = [];
          for (const img of input.images) referenceImages.push(await storedImage(ctx, img));
          for (const url of input.image_urls) referenceImages.push(await fetchedImage(ctx, url));
          const firstFrame = input.first_frame_url ? await fetchedImage(ctx, input.first_frame_url) : undefined;
          const lastFrame = input.last_frame_url ? await fetchedImage(ctx, input.last_frame_url) : undefined;
          let referenceVideo = null;
          if (input.reference_video) {
            const ref = input.reference_video;
            const bytes = await ctx.blobs.get(ref.key);
            if (!bytes) throw new JobFailure(E.referenceLost);
            referenceVideo = { bytes, seconds: ref.seconds, url: ref.url };
            // The window is cut here, not in the request (reference-video.ts): a busy media pool makes the job wait.
            if (ref.start !== undefined && ref.end !== undefined) {
              try {
                referenceVideo = await cutReferenceWindow({ bytes, url: ref.url, start: ref.start, end: ref.end }, ctx.capability("media"), { signal: ctx.signal });
              } catch (err) {
                if (!(err instanceof ReferenceCutError)) throw err;
                ctx.log.warn(`omni ${ctx.jobId}: reference video ${ref.url} unusable: ${err.message}`);
                throw new JobFailure(E.referenceLost);
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
      if (ctx.signal.aborted || assembling || isTransient(err)) throw err;
      if (err instanceof UnsafeContentError) throw new JobFailure(E.videoUnsafe);
      // The provider's own words stay in our log; the partner gets the sanitized text (a deadline passed too).
      ctx.log.warn(`omni ${ctx.jobId}: provider failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new JobFailure(E.videoFailed);
    }

    if (input.strip_metadata) await ctx.progress(92, "Removing metadata");
    const clip = await finishGeneratedClip(ctx.capability("media"), bytes, { strip: input.strip_metadata, signal: ctx.signal });
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
    return { state: "complete", output: output as unknown as Record<string, unknown> };
  },
};

// ---------------------------------------------------------------------------------------------------------
// Reading: status, list entries and event data are one view.

/** Whether a failed job's error is the prompt-fixable safety block (POST /omni/improve-prompt may repair it). */
export const isPromptFixable = (row: Pick<OmniVideoRecord, "state" | "error">) => row.state === "error" && row.error === E.videoUnsafe;

const ids = (v: unknown): string[] => (typeof v === "string" ? JSON.parse(v) : (v as string[]) ?? []);

export function videoView(row: OmniVideoRecord, mediaUrl: (key: string) => string | null) {
  const out = row.state === "complete" ? row.output : null;
  const running = row.finished_at === null;
  return {
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    model: row.model,
    prompt: row.prompt,
    character_ids: ids(row.character_ids),
    voice_ids: ids(row.voice_ids),
    first_frame_url: row.first_frame_url,
    last_frame_url: row.last_frame_url,
    duration: out ? out.duration : Number(row.duration),
    aspect_ratio: row.aspect_ratio,
    resolution: row.resolution,
    video_url: out ? mediaUrl(out.video_key) : null,
    error: row.error,
    prompt_fixable: isPromptFixable(row),
    credits_used: Number(row.credits_used),
    credits_refunded: Number(row.credits_refunded),
    created_at: timestamp(row.created_at),
    metadata_removed: out?.metadata_removed ?? false,
    progress: running ? (row.progress ?? 0) : null,
    message: running ? (row.message ?? "Queued") : null,
  };
}

export const videoViewShape = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.string(),
  model: z.string(),
  prompt: z.string(),
  character_ids: z.array(z.string()),
  voice_ids: z.array(z.string()),
  first_frame_url: z.string().nullable(),
  last_frame_url: z.string().nullable(),
  duration: z.number().int(),
  aspect_ratio: z.string(),
  resolution: z.string(),
  video_url: z.string().nullable(),
  error: z.string().nullable(),
  prompt_fixable: z.boolean(),
  credits_used: z.number().int(),
  credits_refunded: z.number().int(),
  created_at: z.string(),
  metadata_removed: z.boolean(),
  progress: z.number().int().nullable(),
  message: z.string().nullable(),
});

/** The Omni events' `data`, read in the transaction that ends the job: the status view less its progress. */
async function eventData(trx: PluginDb, jobId: string): Promise<Record<string, unknown>> {
  const row = await omniVideos.inTransaction(trx, jobId);
  // The link the job stored with its output: event data is built where no media link function is at hand.
  const { progress: _p, message: _m, ...view } = videoView(row, () => row.output?.video_url ?? null);
  return view;
}

// ---------------------------------------------------------------------------------------------------------
// Submitting: what POST /omni/video, batch sections and repaired prompts share.

interface Upload {
  key: string;
  bytes: Uint8Array;
  contentType: string;
}

/** Files a submit writes before its charge (the job may start at once) and removes if the charge is refused. */
export class PendingUploads {
  readonly list: Upload[] = [];
  readonly prefix = `${PRIVATE_KEY_PREFIX}inputs/${mediaToken()}`;
  add(name: string, bytes: Uint8Array, contentType: string): string {
    const key = `${this.prefix}/${name}`;
    this.list.push({ key, bytes, contentType });
    return key;
  }
  async write(ctx: OperationContext<any>) {
    for (const u of this.list) await ctx.blobs.put(u.key, u.bytes, { contentType: u.contentType });
  }
  async remove(ctx: OperationContext<any>) {
    for (const u of this.list) await ctx.blobs.remove(u.key).catch(() => {});
  }
}

/** A character as the job keeps it: its image copied under the submit's private prefix. */
export async function characterSnapshot(ctx: OperationContext<any>, c: CharacterRecord, uploads: PendingUploads, n: number): Promise<OmniJobInput["characters"][number]> {
  const bytes = await ctx.blobs.get(c.image_key);
  if (!bytes) throw new ApiError(400, E.charactersNotFound);
  const mime = c.image_mime as keyof typeof IMAGE_EXT;
  const key = uploads.add(`character-${n}.${IMAGE_EXT[mime] ?? "img"}`, bytes, c.image_mime);
  // The identity description: the name when the partner gave none (spec "Omni character").
  return { id: c.character_id, name: c.name, description: c.description || c.name, image: { key, mime_type: c.image_mime }, voice: c.voice };
}

export interface VideoRecordFields {
  model: OmniModel;
  prompt: string;
  character_ids: string[];
  voice_ids: string[];
  first_frame_url: string | null;
  last_frame_url: string | null;
  duration: OmniDuration;
  aspect_ratio: OmniAspectRatio;
  resolution: OmniResolution;
  reference_video: boolean;
  /** The job's input, kept with the record: prompt repair resubmits it with the new prompt. */
  input: OmniJobInput;
  batch_id?: string | null;
  section_index?: number | null;
  section_id?: string | null;
  section_title?: string | null;
}

export async function insertVideoRecord(trx: PluginDb, jobId: string, partnerId: string, f: VideoRecordFields) {
  await trx
    .insertInto(VIDEOS_TABLE)
    .values({ ...f, job_id: jobId, partner_id: partnerId, character_ids: JSON.stringify(f.character_ids), voice_ids: JSON.stringify(f.voice_ids), input: JSON.stringify(f.input) })
    .execute();
}

/** The job input of a prepared request, its files added to `uploads`. */
async function jobInput(ctx: OperationContext<any>, req: PreparedOmniVideo, uploads: PendingUploads): Promise<OmniJobInput> {
  const { width, height } = frameSize(req.resolution, req.aspectRatio);
  const characters = [];
  for (const [i, c] of req.characters.entries()) characters.push(await characterSnapshot(ctx, c, uploads, i + 1));
  const images = req.images.map((img, i) => {
    const mime = img.mimeType as keyof typeof IMAGE_EXT;
    return { key: uploads.add(`image-${i + 1}.${IMAGE_EXT[mime] ?? "img"}`, img.bytes, img.mimeType), mime_type: img.mimeType };
  });
  const ref = req.referenceVideo;
  return {
    model: req.model,
    width,
    height,
    seconds: req.duration,
    seed: req.seed,
    strip_metadata: req.stripMetadata,
    first_frame_url: req.firstFrameUrl,
    last_frame_url: req.lastFrameUrl,
    characters,
    voices: req.voices satisfies CharacterVoice[],
    image_urls: req.imageUrls,
    images,
    // As downloaded, with its window: the job cuts it (reference-video.ts).
    reference_video: ref ? { key: uploads.add("reference-source.bin", ref.bytes, "application/octet-stream"), seconds: Math.round((ref.end - ref.start) * 100) / 100, url: ref.url, start: ref.start, end: ref.end } : null,
    callback_url: req.callbackUrl,
  };
}

/** Charges and queues one Omni clip of a prepared request; nothing stays behind when the charge is refused. */
export async function submitVideo(ctx: OperationContext<any>, req: PreparedOmniVideo, credits: number, description: string) {
  const uploads = new PendingUploads();
  const input = await jobInput(ctx, req, uploads);
  await uploads.write(ctx);
  try {
    return await ctx.submitJob({
      kind: "video",
      state: "processing",
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      input: input as unknown as Record<string, unknown>,
      description,
      insufficientCredits: E.videoInsufficient,
      within: (trx, [jobId]) =>
        insertVideoRecord(trx, jobId!, ctx.partner.id, {
          model: req.model,
          prompt: req.prompt,
          character_ids: req.characters.map((c) => c.character_id),
          voice_ids: req.voices.map((v) => v.id),
          first_frame_url: req.firstFrameUrl,
          last_frame_url: req.lastFrameUrl,
          duration: req.duration,
          aspect_ratio: req.aspectRatio,
          resolution: req.resolution,
          reference_video: req.referenceVideo !== null,
          input,
        }),
    });
  } catch (err) {
    await uploads.remove(ctx);
    throw err;
  }
}

/** The clip's price for this account: a custom account without a rate gets its 400 here, before any download. */
export const priceOf = (ctx: OperationContext<any>, req: Pick<PreparedOmniVideo, "resolution" | "duration">, referenceVideo: boolean) =>
  ctx.priceFor({ ...omniVideoPrice(req.resolution, req.duration, referenceVideo), customRateMissing: E.customNoRate });

// ---------------------------------------------------------------------------------------------------------
// Operations.

const createVideo = operation({
  method: "POST",
  path: "/omni/video",
  status: 202,
  inflight: true,
  feature: OMNI_FEATURE,
  summary: "Generate a character-consistent Omni video",
  input: OmniVideoInput,
  // Up to 72 MB of reference images travel as base64; the exact caps are checked by prepareOmniVideo.
  maxBodyBytes: 110_000_000,
  bodyTooLarge: E.referenceImagesTooLarge,
  output: z.object({
    job_id: z.string(),
    partner_job_id: z.string().nullable(),
    status: z.literal("processing"),
    model: z.string(),
    duration: z.number().int(),
    aspect_ratio: z.string(),
    resolution: z.string(),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, E.unavailable);
    const fields = ctx.input;
    // The price depends only on fields the schema checked: a custom account without a rate is refused
    // before any download.
    priceOf(ctx, { resolution: fields.resolution, duration: fields.duration }, fields.video !== null);
    const req = await prepareOmniVideo(fields, {
      guard: ctx.capability("outbound"),
      engine: ctx.capability("media"),
      db: ctx.db,
      partnerId: ctx.partner.id,
      signal: ctx.request.signal,
    });
    const credits = priceOf(ctx, req, req.referenceVideo !== null);
    const job = await submitVideo(ctx, req, credits, `Omni video: ${req.model} ${req.resolution} ${req.duration}s${req.referenceVideo ? " + reference video" : ""}`);
    return {
      job_id: job.jobId,
      partner_job_id: req.partnerJobId,
      status: "processing" as const,
      model: req.model,
      duration: req.duration,
      aspect_ratio: req.aspectRatio,
      resolution: req.resolution,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

const videoStatus = operation({
  method: "GET",
  path: "/omni/video/<job_id>",
  feature: OMNI_FEATURE,
  summary: "Status of an Omni video job",
  output: videoViewShape,
  async handle(ctx) {
    const id = ctx.params.job_id ?? "";
    if (!JOB_ID.test(id)) throw notFound();
    const row = await omniVideos.find(ctx.db, ctx.partner.id, id);
    if (!row) throw notFound();
    return videoView(row, ctx.mediaUrl);
  },
});

const LIST_STATUS = { processing: null, complete: "complete", failed: "error" } as const;

const listVideos = operation({
  method: "GET",
  path: "/omni/videos",
  feature: OMNI_FEATURE,
  summary: "This account's Omni videos, newest first",
  input: z.object({
    limit: limitParam(PAGE_BOUNDS.omniVideos),
    offset: offsetParam,
    status: z
      .unknown()
      .optional()
      .meta({ type: "string", enum: Object.keys(LIST_STATUS) })
      .transform((v, c) => {
        if (v === undefined || v === "") return undefined;
        if (typeof v !== "string" || !Object.hasOwn(LIST_STATUS, v)) {
          c.addIssue({ code: "custom", message: E.listStatus });
          return z.NEVER;
        }
        return v as keyof typeof LIST_STATUS;
      }),
    since: z.unknown().optional().meta({ type: "string", description: "ISO 8601 UTC timestamp: videos created at or after it" }),
  }),
  output: pageShape("videos", videoViewShape),
  async handle(ctx) {
    const { status } = ctx.input;
    const since = parseSince(ctx.input.since);
    const page = await omniVideos.page(ctx.db, ctx.partner.id, ctx.input, (q) => {
      if (status === "processing") q = q.where("j.finished_at", "is", null);
      else if (status) q = q.where("j.state", "=", LIST_STATUS[status]);
      if (since) q = q.where("r.created_at", ">=", since);
      return q;
    });
    return pageBody("videos", page, ctx.input, (row) => videoView(row, ctx.mediaUrl));
  },
});

export const videoOperations = [createVideo, videoStatus, listVideos];
