// Video generation, animation and merging (spec part 2, "Video job", "Video models", "Video prices",
// "Animation prices", the video state table, the video endpoints and events).
//
// POST /generate-video validates every rule before the charge (input.ts), downloads and measures reference
// media before the charge too (references.ts: billing uses measured seconds; the job normalizes it), prices through the
// kernel's tier math (models.ts) and queues one job that renders through `video.generate` (the sandbox by
// default). POST /generate-animation is the same job with two required frames, 8 s of 1080p with sound.
// POST /merge-videos is synchronous: charge, concatenate for real (merge.ts), refund on failure.
//
// Choices where the spec is silent, written down here:
// - Frames sent as base64 are kept with the job and shown as `start_frame_url` / `end_frame_url` media links;
//   frames sent by URL are downloaded by the job through the outbound guard (a failure ends the job `error`,
//   refunded) and reported as sent.
// - A merge is recorded as a job (`merge_id` is its id) so its charge and refund are ledger rows like any
//   other; merges are not video jobs and are not listed by GET /videos.
// - Merged files carry `expires_at` 7 days out ("kept about 7 days"); the kernel's retention sweeper removes them then.
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { isTransient, ApiError, checkPicture, definePlugin, finishGeneratedClip, JobFailure, progressBetween, type JobKindDeclaration, type JobRunContext, limitParam, type MediaEngine, megabytes, mp4MetadataCategories, notFound, offsetParam, operation, type OperationContext, outboundToApiError, type OutboundGuard, PAGE_BOUNDS, pageBody, pageShape, parseSince, partnerJobIdField, PRIVATE_KEY_PREFIX, QUEUED_PROCESSING_COMPLETE, type ReferenceMedia, shown, UnsafeContentError, type VideoFrame, videoFrameSize, type VideoProviders } from "mediagate/plugin";
import { VIDEO_ERRORS as E } from "./errors.ts";
import { checkRequestUrls, decodedSize, GenerateAnimationInput, GenerateVideoInput, type FrameInput } from "./input.ts";
import { concatClips } from "./merge.ts";
import { videoMigrations } from "./migrations.ts";
import { ANIMATION, MERGE_PRICE, MODELS, SHORT_EDGE, VIDEO_COSTS, videoPrice, type VideoModel } from "./models.ts";
import { eventData, listView, MERGE_TABLE, type MergePart, mergedSpoken, statusView, VIDEO_TABLE, videoJobs, type VideoOutput, videoRecords, type VideoRecords } from "./records.ts";
import { measureReferenceAudio, measureReferenceVideos, type MeasuredReference, normalizeReference, ReferenceEncodeError, type ReferenceKind } from "./references.ts";

const MAX_FRAME_BYTES = megabytes(20);
const MAX_REF_IMAGES_TOTAL = megabytes(72);
const FRAME_FETCH = { maxBytes: MAX_FRAME_BYTES, timeoutMs: 30_000 };
const MERGE_RETENTION_MS = 7 * 24 * 3600 * 1000;
const MIME_EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

/** A frame as the job finds it: a stored upload, or a URL it fetches. */
type StoredFrame = { key: string; mime_type: string } | { url: string };

interface StoredInput {
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

// ---------------------------------------------------------------------------------------------------------
// The job: one clip, rendered by the provider of its model, optionally stripped, stored.

async function loadFrame(ctx: JobRunContext, frame: StoredFrame): Promise<VideoFrame> {
  if ("key" in frame) {
    const bytes = await ctx.blobs.get(frame.key);
    if (!bytes) throw new JobFailure(E.frameUnavailable);
    return { bytes, mimeType: frame.mime_type };
  }
  try {
    const res = await ctx.capability("outbound").fetch(frame.url, { ...FRAME_FETCH, signal: ctx.signal });
    // A URL frame is fetched here, after the charge: one over the pixel budget (lib/media/budgets.ts) fails
    // the job, refunded, before anything decodes it.
    const budget = checkPicture(res.body);
    if (!budget.ok) throw new Error(budget.reason);
    return { bytes: res.body, mimeType: res.headers["content-type"]?.split(";")[0]?.trim() || "image/jpeg", url: frame.url };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn(`video ${ctx.jobId}: frame ${frame.url} unavailable: ${(err as Error).message}`);
    throw new JobFailure(E.frameUnavailable);
  }
}

/** The stored references, normalized here (job work: a busy media pool makes the job wait, never the partner). */
async function loadReferences(ctx: JobRunContext, refs: StoredInput["reference_videos"], kind: ReferenceKind): Promise<ReferenceMedia[]> {
  const out: ReferenceMedia[] = [];
  for (const r of refs) {
    let bytes = await ctx.blobs.get(r.key);
    if (!bytes) throw new JobFailure(E.failed);
    if (r.raw) {
      try {
        bytes = await normalizeReference(kind, bytes, ctx.capability("media"), { signal: ctx.signal });
      } catch (err) {
        if (!(err instanceof ReferenceEncodeError)) throw err;
        ctx.log.warn(`video ${ctx.jobId}: reference ${kind} ${r.url} unusable: ${err.message}`);
        throw new JobFailure(E.failed);
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

const videoJob: JobKindDeclaration<StoredInput> = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: E.failed,
  retries: 1,
  timeoutSeconds: 1800,
  concurrency: 2,
  events: { success: "video.completed", failure: "video.failed", data: (trx, job) => eventData(trx, job.jobId) },
  async run(ctx) {
    if (ctx.state === "queued") await ctx.moveTo("processing", "Preparing");
    const input = ctx.input;
    const provider = ctx.capability("video.generate").forModel(input.route);
    if (!provider) throw new JobFailure(E.failed);

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
          const row = await ctx.db.selectFrom(VIDEO_TABLE).select(["prompt"]).where("job_id", "=", ctx.jobId).executeTakeFirstOrThrow();
          return {
            prompt: row.prompt,
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
      if (ctx.signal.aborted || isTransient(err)) throw err;
      if (err instanceof JobFailure) throw err; // a frame or reference that is gone
      if (err instanceof UnsafeContentError) throw new JobFailure(E.unsafe);
      // The provider's own words stay in our log; the partner gets the sanitized text.
      ctx.log.warn(`video ${ctx.jobId}: provider failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new JobFailure(E.failed);
    }

    if (input.strip_metadata) await ctx.progress(92, "Removing metadata");
    const clip = await finishGeneratedClip(ctx.capability("media"), bytes, { strip: input.strip_metadata, signal: ctx.signal, timeoutMs: 120_000 });
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
    return { state: "complete", output: output as unknown as Record<string, unknown> };
  },
};

// ---------------------------------------------------------------------------------------------------------
// Submitting: what generate-video and generate-animation share.

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

const frameUrl = (ctx: OperationContext<any>, f: StoredFrame | null) => (f === null ? null : "url" in f ? f.url : ctx.mediaUrl(f.key));

function checkUrls(ctx: OperationContext<any>, req: Parameters<typeof checkRequestUrls>[0], start: "image" | "start_image") {
  const guard = ctx.capability("outbound");
  const failure = checkRequestUrls(req, (u) => guard.checkUrl(u), { start });
  if (failure) throw new ApiError(400, failure);
}

/** The callback URL's host must resolve to public addresses now, before the charge (part 1, "Webhooks"). */
async function checkCallback(ctx: OperationContext<any>, url: string | null) {
  if (!url) return;
  try {
    await ctx.capability("outbound").resolvePublic(url);
  } catch (err) {
    // Only a refused URL is the partner's; a DNS failure here is ours and passes through.
    throw outboundToApiError(err, { invalidUrl: "callback_url must be a public https URL" });
  }
}

/** Charges and queues; uploads are written first (the job may start at once) and removed if the charge fails. */
async function submit(
  ctx: OperationContext<any>,
  args: { credits: number; partnerJobId: string | null; callbackUrl: string | null; input: StoredInput; uploads: Upload[]; record: Omit<Parameters<VideoRecords["insert"]>[1], "job_id" | "partner_id">; insufficient: (n: number) => string; description: string },
) {
  for (const u of args.uploads) await ctx.blobs.put(u.key, u.bytes, { contentType: u.contentType });
  const records = ctx.capability("video.records");
  try {
    return await ctx.submitJob({
      kind: "video",
      state: "queued",
      credits: args.credits,
      partnerJobId: args.partnerJobId,
      callbackUrl: args.callbackUrl,
      input: args.input as unknown as Record<string, unknown>,
      description: args.description,
      insufficientCredits: args.insufficient,
      within: (trx, [jobId]) => records.insert(trx, { ...args.record, job_id: jobId!, partner_id: ctx.partner.id }),
    });
  } catch (err) {
    // Bad input (402, 429) changes nothing: no row, no file.
    for (const u of args.uploads) await ctx.blobs.remove(u.key).catch(() => {});
    throw err;
  }
}

const submitted = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.literal("queued"),
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
});

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
  bodyTooLarge: E.referenceImagesTooLarge,
  output: submitted,
  async handle(ctx) {
    const req = ctx.input;
    const model = MODELS[req.model] as VideoModel;
    for (const [frame, text] of [[req.startFrame, E.imageTooLarge], [req.endFrame, E.endImageTooLarge]] as const) {
      if (frame && "base64" in frame && decodedSize(frame.base64) > MAX_FRAME_BYTES) throw new ApiError(413, text);
    }
    let refBytes = 0;
    for (const r of req.referenceImages) {
      if (!("base64" in r)) continue;
      const size = decodedSize(r.base64);
      if (size > MAX_FRAME_BYTES) throw new ApiError(413, E.referenceImageTooLarge);
      refBytes += size;
    }
    if (refBytes > MAX_REF_IMAGES_TOTAL) throw new ApiError(413, E.referenceImagesTooLarge);
    checkUrls(ctx, req, "image");
    await checkCallback(ctx, req.callbackUrl);
    if (!ctx.capability("video.generate").forModel(req.modelUsed)) throw new ApiError(500, E.notAvailable);

    // A custom account without a rate is refused before any download (the price only needs to know whether
    // reference videos are present; the measured seconds come next).
    const texts = { noReferenceRate: E.customNoReferenceRate, noRate: E.customNoRate(req.quality, req.duration) };
    const hasVideos = req.referenceVideoUrls.length > 0;
    ctx.priceFor(videoPrice(req.model, req.quality, req.outputSeconds, req.sound, hasVideos ? 0 : null, texts));

    let videos: MeasuredReference[] = [];
    let audio: MeasuredReference[] = [];
    if (hasVideos || req.referenceAudioUrls.length > 0) {
      const deps = { guard: ctx.capability("outbound"), engine: ctx.capability("media"), signal: ctx.request.signal };
      if (hasVideos) videos = await measureReferenceVideos(req.referenceVideoUrls, model.references!.videos, req.model, deps);
      if (req.referenceAudioUrls.length > 0) audio = await measureReferenceAudio(req.referenceAudioUrls, model.references!.audio, req.model, deps);
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
    const job = await submit(ctx, {
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      input,
      uploads,
      insufficient: E.insufficient,
      description: `Video generation: ${req.model} ${req.quality} ${req.outputSeconds}s`,
      record: {
        kind: "video",
        prompt: req.prompt,
        model: req.model,
        model_used: req.modelUsed,
        quality: req.quality,
        duration: req.outputSeconds,
        aspect_ratio: req.aspectRatio,
        start_frame_url: frameUrl(ctx, start),
        end_frame_url: frameUrl(ctx, end),
      },
    });
    return { job_id: job.jobId, partner_job_id: req.partnerJobId, status: "queued", credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
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
  bodyTooLarge: E.startImageTooLarge,
  output: submitted,
  async handle(ctx) {
    const req = ctx.input;
    for (const [frame, text] of [[req.startFrame, E.startImageTooLarge], [req.endFrame, E.endImageTooLarge]] as const) {
      if ("base64" in frame && decodedSize(frame.base64) > MAX_FRAME_BYTES) throw new ApiError(413, text);
    }
    checkUrls(ctx, req, "start_image");
    await checkCallback(ctx, req.callbackUrl);
    if (!ctx.capability("video.generate").forModel("animation")) throw new ApiError(500, E.notAvailable);
    const credits = ctx.priceFor({ lines: [{ key: ["animation"], rate: ANIMATION.price }] });

    const prefix = `inputs/${randomBytes(16).toString("hex")}`; // shown as media links: 128 random bits
    const uploads: Upload[] = [];
    const start = storeFrame(req.startFrame, prefix, "start", uploads);
    const end = storeFrame(req.endFrame, prefix, "end", uploads);
    const { width, height } = videoFrameSize(req.aspectRatio, SHORT_EDGE[ANIMATION.quality]);
    const job = await submit(ctx, {
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      uploads,
      insufficient: E.animationInsufficient,
      description: "Animation: 8s 1080p",
      input: { width, height, seconds: ANIMATION.seconds, sound: true, strip_metadata: false, negative_prompt: null, route: "animation", start_frame: start, end_frame: end, reference_images: [], reference_videos: [], reference_audio: [] },
      record: { kind: "animation", prompt: req.prompt, model: "animation", model_used: "animation", quality: ANIMATION.quality, duration: ANIMATION.seconds, aspect_ratio: req.aspectRatio, start_frame_url: frameUrl(ctx, start), end_frame_url: frameUrl(ctx, end) },
    });
    return { job_id: job.jobId, partner_job_id: req.partnerJobId, status: "queued", credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
  },
});

const JOB_ID = /^svc-[0-9a-f]{8}$/;

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
    const id = ctx.params.job_id ?? "";
    if (!JOB_ID.test(id)) throw notFound();
    const row = await videoJobs.find(ctx.db, ctx.partner.id, id);
    if (!row) throw notFound();
    return statusView(row, ctx.mediaUrl);
  },
});

const LIST_STATUS = { processing: null, complete: "complete", failed: "error" } as const;

const listVideos = operation({
  method: "GET",
  path: "/videos",
  summary: "This account's video jobs, newest first",
  input: z.object({
    limit: limitParam(PAGE_BOUNDS.videos),
    offset: offsetParam,
    status: z
      .unknown()
      .optional()
      .meta({ type: "string", enum: Object.keys(LIST_STATUS) })
      .transform((v, c) => {
        if (v === undefined || v === "") return undefined;
        // Own keys only: `in` would take "toString" or "constructor" from Object.prototype (a 500 later).
        if (typeof v !== "string" || !Object.hasOwn(LIST_STATUS, v)) {
          c.addIssue({ code: "custom", message: E.listStatus });
          return z.NEVER;
        }
        return v as keyof typeof LIST_STATUS;
      }),
    since: z.unknown().optional().meta({ type: "string", description: "ISO 8601 UTC timestamp: jobs created at or after it" }),
  }),
  output: pageShape(
    "videos",
    z.object({
      job_id: z.string(),
      partner_job_id: z.string().nullable(),
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
    const { status } = ctx.input;
    const since = parseSince(ctx.input.since);
    const page = await videoJobs.page(ctx.db, ctx.partner.id, ctx.input, (q) => {
      if (status === "processing") q = q.where("j.finished_at", "is", null);
      else if (status) q = q.where("j.state", "=", LIST_STATUS[status]);
      if (since) q = q.where("r.created_at", ">=", since);
      return q;
    });
    return pageBody("videos", page, ctx.input, (row) => listView(row, ctx.mediaUrl));
  },
});

/**
 * The spoken record of a merge (records.ts mergedSpoken): the clips' records shifted by the clips' lengths, each
 * clip probed for its length and its sound only when some clip has a record. Never fails the merge.
 */
async function mergeSpoken(ctx: OperationContext<any>, records: Array<VideoOutput["spoken"]>, clips: Uint8Array[]): Promise<VideoOutput["spoken"]> {
  if (!records.some((r) => r)) return null;
  try {
    const parts: MergePart[] = [];
    for (const [i, clip] of clips.entries()) {
      const probe = await ctx.capability("media").probe(clip, "clip.mp4", { signal: ctx.request.signal });
      parts.push({ spoken: records[i], hasAudio: probe.streams.some((st) => st.type === "audio"), seconds: probe.durationSeconds });
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
      job_ids: z.unknown().optional().meta({ type: "array", items: { type: "string" }, minItems: 2 }),
      partner_job_id: partnerJobIdField().meta({ type: "string" }),
    })
    .meta({ required: ["job_ids"] })
    .transform((raw, c) => {
      const ids = raw.job_ids;
      if (!Array.isArray(ids) || ids.length < 2) {
        c.addIssue({ code: "custom", message: E.mergeNeedTwo });
        return z.NEVER;
      }
      for (const id of ids) {
        if (typeof id !== "string" || !JOB_ID.test(id)) {
          c.addIssue({ code: "custom", message: E.mergeInvalidJobId(shown(id, 100)) });
          return z.NEVER;
        }
      }
      return { jobIds: ids as string[], partnerJobId: raw.partner_job_id };
    }),
  output: z.object({ merge_id: z.string(), partner_job_id: z.string().nullable(), merged_url: z.string(), credits_used: z.number().int(), credits_remaining: z.number().int() }),
  async handle(ctx) {
    const { jobIds, partnerJobId } = ctx.input;
    const unique = [...new Set(jobIds)];
    const rows = await videoJobs.owned(ctx.db, ctx.partner.id).where("r.job_id", "in", unique).where("j.state", "=", "complete").execute();
    if (rows.length !== unique.length) throw new ApiError(404, E.mergeNotFound);
    const byId = new Map(rows.map((r) => [r.job_id, r]));
    const clips: Uint8Array[] = [];
    for (const id of jobIds) {
      const bytes = await ctx.blobs.get(byId.get(id)!.output!.video_key);
      if (!bytes) throw new ApiError(404, E.mergeFileMissing(id));
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
      insufficientCredits: E.mergeInsufficient,
      input: { job_ids: jobIds },
      within: async (trx, [mergeId]) => {
        await trx.insertInto(MERGE_TABLE).values({ merge_id: mergeId!, partner_id: ctx.partner.id, job_ids: JSON.stringify(jobIds), expires_at: expiresAt }).execute();
      },
    });

    let key: string;
    try {
      const merged = await concatClips(ctx.capability("media"), clips, { signal: ctx.request.signal, timeoutMs: 600_000 });
      key = `merges/${job.jobId}-${randomBytes(16).toString("hex")}.mp4`; // 128 random bits: a capability URL
      await ctx.blobs.put(key, merged.bytes, { contentType: "video/mp4", expiresAt });
      await ctx.db.updateTable(MERGE_TABLE).set({ video_key: key, duration_seconds: merged.durationSeconds }).where("merge_id", "=", job.jobId).execute();
      const spoken = await mergeSpoken(ctx, jobIds.map((id) => byId.get(id)!.output!.spoken), clips);
      await ctx.finishJob(job.jobId, { state: "complete", refund: false, output: { video_key: key, duration: merged.durationSeconds, spoken } });
    } catch (err) {
      await ctx.finishJob(job.jobId, { state: "failed", refund: true, error: E.mergeFailed });
      ctx.log.warn(`merge ${job.jobId} failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new ApiError(502, E.mergeFailed);
    }
    return { merge_id: job.jobId, partner_job_id: partnerJobId, merged_url: ctx.mediaUrl(key), credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
  },
});

/**
 * Merges run inside their request (no queue); declared so that a merge whose process died mid-request is
 * failed and refunded by the kernel (core/jobs.ts recoverOrphans) with the text a failed merge stores.
 */
const mergeJob: JobKindDeclaration = {
  states: ["processing", "complete", "failed"],
  initial: "processing",
  transitions: { processing: ["complete", "failed"] },
  terminal: { complete: "success", failed: "failure" },
  failState: "failed",
  failError: E.mergeFailed,
};

export default definePlugin({
  name: "video",
  requires: ["video.generate", "media", "outbound", "counters"],
  provides: {
    // Files live in this plugin's blob store whichever area made them, so one media URL scheme serves all.
    "video.records": (host) => videoRecords(host.blobs.scoped("video"), (key) => host.mediaUrl("video", key)),
  },
  // Its videos, animations, upscales and merges, for captions (the records' own find answers them).
  contributes: { "captionable.videos": (host) => host.capability("video.records") },
  costs: VIDEO_COSTS,
  jobs: { video: videoJob, merge: mergeJob },
  operations: [generateVideo, videoStatus, listVideos, generateAnimation, mergeVideos],
  migrations: videoMigrations,
});
