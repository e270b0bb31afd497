// Every check of POST /omni/video before the charge, in the order the partner would want to hear of them:
// the body's shape and ranges (the schema: 400 with the first issue's text), then what needs more than the
// body (prepareOmniVideo): sizes of the base64 images (413), their kind by magic bytes, URL syntax through the
// outbound guard's rules, the callback's DNS, the account's characters and voices (another account's read
// as missing), and last the reference video, downloaded and measured (references.ts; the job cuts it).
//
// Choices where the spec is silent, written down here (texts in errors.ts):
// - `duration`, `seed` and `video_start`/`video_end` must be JSON numbers (a "8" string is refused);
//   `duration` and `seed` integers, `seed` a safe integer.
// - A repeated character or voice id counts once per mention (the budget counts what is sent).
// - `last_frame_url` needs `first_frame_url`; both are omni-1.1 only and exclude every reference.

import {
  ApiError,
  base64Payload,
  checkPicture,
  decodedSize,
  decodeImageBase64,
  type MediaEngine,
  type OutboundGuard,
  outboundToApiError,
  type PluginDb,
  partnerJobIdField,
  type VideoFrame,
} from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import {
  ASPECT_RATIOS,
  DEFAULT_DURATION,
  DURATIONS,
  FRAME_MODELS,
  LIMITS,
  OMNI_MODELS,
  type OmniAspectRatio,
  type OmniDuration,
  type OmniModel,
  type OmniResolution,
  RESOLUTIONS,
} from "../prices.ts";
import { findCharacters, findVoices } from "../records.ts";
import { measureReferenceVideo } from "./references.ts";
import type { PreparedOmniVideo } from "./types.ts";

const oneOf = <T extends string>(values: readonly T[], v: unknown): v is T =>
  typeof v === "string" && (values as readonly string[]).includes(v);

const stringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

/** A field as it comes on the wire: anything, documented by `meta`; the transform below checks it. */
const wire = (meta: Parameters<ReturnType<typeof z.unknown>["meta"]>[0]) => z.unknown().optional().meta(meta);

export const OmniVideoInput = z
  .object({
    prompt: wire({ type: "string", maxLength: LIMITS.promptChars }),
    model: wire({ type: "string", enum: [...OMNI_MODELS], default: OMNI_MODELS[0] }),
    first_frame_url: wire({ type: "string", description: "omni-1.1 only: the image the clip starts on" }),
    last_frame_url: wire({
      type: "string",
      description: "omni-1.1 only, with first_frame_url: the image the clip ends on",
    }),
    character_ids: wire({ type: "array", items: { type: "string" }, maxItems: LIMITS.characters }),
    voice_ids: wire({ type: "array", items: { type: "string" }, maxItems: LIMITS.voices }),
    image_urls: wire({ type: "array", items: { type: "string" } }),
    image_base64: wire({ type: "array", items: { type: "string" } }),
    video_url: wire({ type: "string", description: "one reference video; adds the surcharge" }),
    video_start: wire({ type: "number", minimum: 0 }),
    video_end: wire({ type: "number", minimum: 0 }),
    duration: wire({ type: "integer", enum: [...DURATIONS], default: DEFAULT_DURATION }),
    aspect_ratio: wire({ type: "string", enum: [...ASPECT_RATIOS], default: ASPECT_RATIOS[0] }),
    resolution: wire({ type: "string", enum: [...RESOLUTIONS], default: RESOLUTIONS[0] }),
    seed: wire({ type: "integer" }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
    callback_url: wire({ type: "string", description: "public https URL for one signed event" }),
    strip_metadata: wire({ type: "boolean", default: false }),
  })
  .meta({ required: ["prompt"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(OMNI_ERRORS.promptRequired);
    if (raw.prompt.length > LIMITS.promptChars) return fail(OMNI_ERRORS.promptTooLong);
    const model = raw.model ?? OMNI_MODELS[0];
    if (!oneOf(OMNI_MODELS, model)) return fail(OMNI_ERRORS.invalidModel);
    const duration = raw.duration ?? DEFAULT_DURATION;
    if (typeof duration !== "number" || !(DURATIONS as readonly number[]).includes(duration))
      return fail(OMNI_ERRORS.invalidDuration);
    const aspectRatio = raw.aspect_ratio ?? ASPECT_RATIOS[0];
    if (!oneOf(ASPECT_RATIOS, aspectRatio)) return fail(OMNI_ERRORS.invalidAspectRatio);
    const resolution = raw.resolution ?? RESOLUTIONS[0];
    if (!oneOf(RESOLUTIONS, resolution)) return fail(OMNI_ERRORS.invalidResolution);
    if (raw.seed !== undefined && raw.seed !== null && !Number.isSafeInteger(raw.seed))
      return fail(OMNI_ERRORS.invalidSeed);
    if (raw.strip_metadata !== undefined && typeof raw.strip_metadata !== "boolean")
      return fail(OMNI_ERRORS.stripMetadata);

    const list = (field: "character_ids" | "voice_ids" | "image_urls" | "image_base64") => {
      const v = raw[field];
      if (v === undefined || v === null) return [];
      return stringList(v) ? v : null;
    };
    const characterIds = list("character_ids");
    if (!characterIds) return fail(OMNI_ERRORS.arrayOfStrings("character_ids"));
    if (characterIds.length > LIMITS.characters) return fail(OMNI_ERRORS.tooManyCharacters);
    const voiceIds = list("voice_ids");
    if (!voiceIds) return fail(OMNI_ERRORS.arrayOfStrings("voice_ids"));
    if (voiceIds.length > LIMITS.voices) return fail(OMNI_ERRORS.tooManyVoices);
    const imageUrls = list("image_urls");
    if (!imageUrls) return fail(OMNI_ERRORS.arrayOfStrings("image_urls"));
    const imageBase64 = list("image_base64");
    if (!imageBase64) return fail(OMNI_ERRORS.arrayOfStrings("image_base64"));

    const text = (field: "first_frame_url" | "last_frame_url" | "video_url" | "callback_url") => {
      const v = raw[field];
      if (v === undefined || v === null || v === "") return null;
      return typeof v === "string" ? v : undefined;
    };
    const firstFrameUrl = text("first_frame_url");
    const lastFrameUrl = text("last_frame_url");
    const videoUrl = text("video_url");
    const callbackUrl = text("callback_url");
    if (firstFrameUrl === undefined) return fail(OMNI_ERRORS.invalidFrameUrl("first_frame_url", "must be a string"));
    if (lastFrameUrl === undefined) return fail(OMNI_ERRORS.invalidFrameUrl("last_frame_url", "must be a string"));
    if (videoUrl === undefined) return fail(OMNI_ERRORS.invalidVideoUrl("must be a string"));
    if (callbackUrl === undefined) return fail(OMNI_ERRORS.callbackUrl);

    if (firstFrameUrl !== null || lastFrameUrl !== null) {
      if (!FRAME_MODELS.includes(model)) return fail(OMNI_ERRORS.framesNeedOmni11);
      if (firstFrameUrl === null) return fail(OMNI_ERRORS.lastFrameNeedsFirst);
      if (characterIds.length || voiceIds.length || imageUrls.length || imageBase64.length || videoUrl !== null)
        return fail(OMNI_ERRORS.framesExclusive);
    }

    let video: { url: string; start: number; end: number } | null = null;
    const trimSent = raw.video_start !== undefined || raw.video_end !== undefined;
    if (videoUrl !== null) {
      if (raw.video_start === undefined || raw.video_end === undefined) return fail(OMNI_ERRORS.trimRequired);
      const [start, end] = [raw.video_start, raw.video_end];
      if (
        typeof start !== "number" ||
        typeof end !== "number" ||
        !Number.isFinite(start) ||
        !Number.isFinite(end) ||
        start < 0 ||
        end <= start
      )
        return fail(OMNI_ERRORS.invalidTrim);
      if (end - start > LIMITS.trimWindowMaxSeconds) return fail(OMNI_ERRORS.trimTooLong);
      video = { url: videoUrl, start, end };
    } else if (trimSent) return fail(OMNI_ERRORS.trimWithoutVideo);

    const budget =
      imageUrls.length + imageBase64.length + (video ? LIMITS.referenceVideoCost : 0) + characterIds.length;
    if (budget > LIMITS.referenceBudget) return fail(OMNI_ERRORS.referenceBudget);

    return {
      prompt: raw.prompt,
      model: model as OmniModel,
      duration: duration as OmniDuration,
      aspectRatio: aspectRatio as OmniAspectRatio,
      resolution: resolution as OmniResolution,
      seed: (raw.seed as number | null | undefined) ?? null,
      partnerJobId: raw.partner_job_id,
      callbackUrl,
      stripMetadata: raw.strip_metadata === true,
      firstFrameUrl,
      lastFrameUrl,
      characterIds,
      voiceIds,
      imageUrls,
      imageBase64,
      video,
    };
  });

export type OmniVideoFields = z.output<typeof OmniVideoInput>;

export interface PrepareDeps {
  guard: OutboundGuard;
  engine: MediaEngine;
  db: PluginDb;
  partnerId: string;
  signal: AbortSignal;
}

/** A URL through the guard's syntax rules (ALLOW_PRIVATE_URLS applies), normalized; the 400 otherwise. */
function checkedUrl(guard: OutboundGuard, url: string, text: (reason: string) => string): string {
  const checked = guard.checkUrl(url);
  if (!checked.ok) throw new ApiError(400, text(checked.reason));
  return checked.url.href;
}

/** Everything after the schema, in order, each refusal an ApiError (400/413) before any charge. */
export async function prepareOmniVideo(fields: OmniVideoFields, deps: PrepareDeps): Promise<PreparedOmniVideo> {
  // Sizes first: a 413 is told before anything is decoded or fetched.
  let total = 0;
  for (const b of fields.imageBase64) {
    const size = decodedSize(base64Payload(b));
    if (size > LIMITS.imageMaxBytes) throw new ApiError(413, OMNI_ERRORS.referenceImageTooLarge);
    total += size;
  }
  if (total > LIMITS.imagesMaxTotalBytes) throw new ApiError(413, OMNI_ERRORS.referenceImagesTooLarge);

  const firstFrameUrl =
    fields.firstFrameUrl &&
    checkedUrl(deps.guard, fields.firstFrameUrl, (r) => OMNI_ERRORS.invalidFrameUrl("first_frame_url", r));
  const lastFrameUrl =
    fields.lastFrameUrl &&
    checkedUrl(deps.guard, fields.lastFrameUrl, (r) => OMNI_ERRORS.invalidFrameUrl("last_frame_url", r));
  const imageUrls = fields.imageUrls.map((u) => checkedUrl(deps.guard, u, OMNI_ERRORS.invalidReferenceImageUrl));
  const videoUrl = fields.video && checkedUrl(deps.guard, fields.video.url, OMNI_ERRORS.invalidVideoUrl);
  if (fields.callbackUrl) {
    try {
      await deps.guard.resolvePublic(fields.callbackUrl);
    } catch (err) {
      // Only a refused URL is the partner's; a DNS failure here is ours and passes through.
      throw outboundToApiError(err, { invalidUrl: OMNI_ERRORS.callbackUrl });
    }
  }

  const characters = await findCharacters(deps.db, deps.partnerId, fields.characterIds);
  if (!characters) throw new ApiError(400, OMNI_ERRORS.charactersNotFound);
  const voices = await findVoices(deps.db, deps.partnerId, fields.voiceIds);
  if (!voices) throw new ApiError(400, OMNI_ERRORS.voicesNotFound);

  const images: VideoFrame[] = fields.imageBase64.map((b) => {
    const decoded = decodeImageBase64(b, LIMITS.imageMaxBytes);
    if (!decoded.ok)
      throw decoded.reason === "too_large"
        ? new ApiError(413, OMNI_ERRORS.referenceImageTooLarge)
        : new ApiError(400, OMNI_ERRORS.invalidReferenceImageBase64);
    // Over the pixel budget (lib/media/budgets.ts): an image the render could not use.
    if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, OMNI_ERRORS.invalidReferenceImageBase64);
    return decoded.image;
  });

  const referenceVideo =
    fields.video && videoUrl ? await measureReferenceVideo(videoUrl, fields.video.start, fields.video.end, deps) : null;
  return {
    prompt: fields.prompt,
    model: fields.model,
    duration: fields.duration,
    aspectRatio: fields.aspectRatio,
    resolution: fields.resolution,
    seed: fields.seed,
    partnerJobId: fields.partnerJobId,
    callbackUrl: fields.callbackUrl,
    stripMetadata: fields.stripMetadata,
    firstFrameUrl,
    lastFrameUrl,
    characters,
    voices,
    imageUrls,
    images,
    referenceVideo,
  };
}
