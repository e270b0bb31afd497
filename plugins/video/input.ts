// POST /generate-video and /generate-animation input: every rule that needs no download, checked in one
// ordered pass before any charge (the model decides the allowed qualities, durations and references, so one
// check decides the error text); the fields beside them describe the bodies for OpenAPI and GraphQL. Rules
// that need the bytes (sizes -> 413, reference downloads and lengths) run in the handler.
//
// Choices where the spec is silent, written down here:
// - `duration` omitted on a gamma model means 8 (the clip is 8 s whatever is sent; the default 10 is not one
//   of its accepted values). A sent duration is still checked against 4, 6, 8.
// - `duration` must be a JSON integer; "10" (a string), 7.5 or one past 2^53 is `Invalid duration`.
// - `sound: false` is accepted on every model; only `true` is refused off the alpha text and image models.
// - `alpha-v3-text-to-video` with a start frame reports `model_used` `alpha-v3-image-to-video` (the spec's
//   "switches to image-to-video automatically").
import {
  type CheckUrlResult,
  checkPicture,
  defineInput,
  type Fail,
  field,
  type InferOutput,
  megabytes,
  shown,
  sniffImageType,
} from "mediagate/plugin";
import { VIDEO_ERRORS } from "./errors.ts";
import {
  ASPECT_RATIOS,
  type AspectRatio,
  acceptsDuration,
  allowedDurations,
  DEFAULT_ASPECT_RATIO,
  DEFAULT_DURATION,
  DEFAULT_MODEL,
  DEFAULT_QUALITY,
  MAX_PROMPT,
  MODEL_IDS,
  MODELS,
  type ModelId,
  type Quality,
  type VideoModel,
} from "./prices.ts";

export const IMAGE_MIME_TYPES = ["image/jpeg", "image/png", "image/webp"] as const;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A frame as sent: a URL (fetched by the job through the outbound guard) or base64 bytes. */
export type FrameInput = { url: string } | { base64: string; mimeType: string };

/** The validated bodies, as the handlers receive them. */
export type VideoRequest = InferOutput<typeof GenerateVideoInput>;
export type AnimationRequest = InferOutput<typeof GenerateAnimationInput>;

export const validBase64 = (s: string) => s.length > 0 && s.length % 4 !== 1 && BASE64.test(s);

/**
 * What is wrong with (valid) base64 text as a frame: null for a JPEG, PNG or WebP within the pixel budget
 * (lib/media/budgets.ts, judged by its header), else the text of the 400. A frame is checked before the
 * charge, so an SVG, a manifest, any other file or a pixel bomb sent as a frame is a 400 and not a charged job
 * that the media engine then refuses (and refunds). `_mime` only names the type; the bytes decide.
 */
export function imageBase64Problem(base64: string, field: string): string | null {
  const head = base64.slice(0, 64);
  try {
    if (sniffImageType(Uint8Array.from(atob(head), (c) => c.charCodeAt(0))) === null)
      return VIDEO_ERRORS.notAnImage(field);
  } catch {
    return VIDEO_ERRORS.notAnImage(field);
  }
  // Past 20 MB the handler answers its 413 before anything reads the picture: nothing to judge here.
  if (decodedSize(base64) > megabytes(20)) return null;
  const budget = checkPicture(new Uint8Array(Buffer.from(base64, "base64")));
  return budget.ok ? null : VIDEO_ERRORS.imageOverBudget(field, budget.reason);
}
/** Bytes a base64 text decodes to, without decoding it. */
export const decodedSize = (base64: string) =>
  Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

// Text-to-video and animation read `end_image` alike.
const END_IMAGE_ERRORS = {
  invalidUrl: VIDEO_ERRORS.invalidEndImageUrl,
  base64: VIDEO_ERRORS.endImageBase64,
  mime: VIDEO_ERRORS.endImageMime,
};

/** Whether `v` is one of `values` (a string of the list). */
const oneOf = (values: readonly string[], v: unknown): v is string => typeof v === "string" && values.includes(v);

/**
 * A frame from a `<name>_url` / `<name>_base64` / `<name>_mime` triple. The URL wins when both are sent
 * (choice: the spec lists them as alternatives without saying).
 */
function frameOf(
  raw: Record<string, unknown>,
  name: string,
  texts: { invalidUrl: (u: string) => string; base64: string; mime: string },
  fail: Fail,
): FrameInput | null {
  const url = raw[`${name}_url`];
  if (present(url)) {
    if (typeof url !== "string") return fail(texts.invalidUrl(shown(url)));
    return { url: url.trim() };
  }
  const base64 = raw[`${name}_base64`];
  if (present(base64)) {
    if (typeof base64 !== "string" || !validBase64(base64)) return fail(texts.base64);
    const problem = imageBase64Problem(base64, `${name}_base64`);
    if (problem) return fail(problem);
    const mime = raw[`${name}_mime`] ?? "image/jpeg";
    if (!oneOf(IMAGE_MIME_TYPES, mime)) return fail(texts.mime);
    return { base64, mimeType: mime };
  }
  return null;
}

function stringArray(raw: Record<string, unknown>, name: string, fail: Fail): string[] {
  const v = raw[name];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) return fail(VIDEO_ERRORS.referenceShape(name));
  return v as string[];
}

function callbackUrlOf(raw: Record<string, unknown>, fail: Fail): string | null {
  const v = raw.callback_url;
  if (!present(v)) return null;
  if (typeof v !== "string") return fail(CALLBACK_URL_ERROR);
  return v.trim();
}

/** Ours: part 1 says a callback_url that is not public https is a 400 without giving the text. */
export const CALLBACK_URL_ERROR = "callback_url must be a public https URL";

const str = (description: string) => field.string({ description });
const strings = (description: string) => field.array({ items: { type: "string" }, description });
const imageMime = () => field.string({ enum: IMAGE_MIME_TYPES, default: "image/jpeg" });

/** A frame's three fields, `<name>_url`, `<name>_base64` and `<name>_mime`, as frameOf reads them. */
function frameFields<N extends string>(name: N, url: string, base64: string) {
  return {
    [`${name}_url`]: str(url),
    [`${name}_base64`]: str(base64),
    [`${name}_mime`]: imageMime(),
  } as Record<`${N}_url` | `${N}_base64`, ReturnType<typeof str>> & Record<`${N}_mime`, ReturnType<typeof imageMime>>;
}

export const GenerateVideoInput = defineInput({
  fields: {
    prompt: str("max 50000 characters (alpha-* models: 2500)"),
    model: field.string({ enum: MODEL_IDS, default: DEFAULT_MODEL }),
    duration: field.integer({ default: DEFAULT_DURATION, description: "seconds, validated per model" }),
    aspect_ratio: field.string({ enum: ASPECT_RATIOS, default: DEFAULT_ASPECT_RATIO }),
    quality: field.string({ enum: ["480p", "720p", "1080p", "4K"], default: DEFAULT_QUALITY }),
    sound: field.boolean({ default: false, description: "alpha-v3 text and image models only" }),
    negative_prompt: str("things to avoid"),
    ...frameFields("image", "HTTPS URL of the start frame", "start frame as base64 (max 20 MB binary)"),
    ...frameFields(
      "end_image",
      "HTTPS URL of the end frame; requires a start frame",
      "end frame as base64 (max 20 MB binary)",
    ),
    reference_image_urls: strings("Beta models only: public HTTPS image URLs"),
    reference_images_base64: strings("Beta models only: base64 images (JPEG assumed)"),
    reference_video_urls: strings("Beta models only: public HTTPS MP4/MOV URLs, max 95 MB each"),
    reference_audio_urls: strings("Beta models only: public HTTPS MP3, WAV or M4A URLs, max 50 MB each"),
    callback_url: str("public https URL for one signed event"),
    strip_metadata: field.boolean({ default: false }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["prompt"],
  check(raw, fail) {
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(VIDEO_ERRORS.promptMissing);

    const modelId = raw.model ?? DEFAULT_MODEL;
    if (!oneOf(MODEL_IDS, modelId)) return fail(VIDEO_ERRORS.invalidModel);
    const model = MODELS[modelId as ModelId] as VideoModel;
    if (model.unusable) return fail(VIDEO_ERRORS.motionControl);

    const maxPrompt = MAX_PROMPT[model.family];
    if (raw.prompt.length > maxPrompt) return fail(VIDEO_ERRORS.promptTooLong(maxPrompt));

    const quality = raw.quality ?? DEFAULT_QUALITY;
    if (!oneOf(model.qualities, quality)) return fail(VIDEO_ERRORS.invalidQuality(modelId, model.qualities));

    const ratio = raw.aspect_ratio ?? DEFAULT_ASPECT_RATIO;
    if (!oneOf(ASPECT_RATIOS, ratio)) return fail(VIDEO_ERRORS.invalidAspectRatio);

    const duration = raw.duration ?? model.fixedOutputSeconds ?? DEFAULT_DURATION;
    if (typeof duration !== "number" || !Number.isSafeInteger(duration) || duration < 1)
      return fail(VIDEO_ERRORS.invalidDuration);
    if (!acceptsDuration(model, duration))
      return fail(VIDEO_ERRORS.durationNotSupported(duration, modelId, allowedDurations(model)));

    const sound = raw.sound ?? false;
    if (typeof sound !== "boolean") return fail(VIDEO_ERRORS.soundType);
    if (sound && !model.sound) return fail(VIDEO_ERRORS.soundNotSupported(modelId));

    // null is not "absent" here: the spec rejects any value but true or false.
    const strip = raw.strip_metadata === undefined ? false : raw.strip_metadata;
    if (typeof strip !== "boolean") return fail(VIDEO_ERRORS.stripMetadata);

    const negative = raw.negative_prompt ?? null;
    if (negative !== null && typeof negative !== "string") return fail(VIDEO_ERRORS.negativePromptType);

    const start = frameOf(
      raw,
      "image",
      { invalidUrl: VIDEO_ERRORS.invalidImageUrl, base64: VIDEO_ERRORS.imageBase64, mime: VIDEO_ERRORS.imageMime },
      fail,
    );
    const end = frameOf(raw, "end_image", END_IMAGE_ERRORS, fail);
    const framed = start !== null || end !== null;
    if (framed && !model.frames) return fail(VIDEO_ERRORS.framesNotSupported(modelId));
    if (end && !start) return fail(VIDEO_ERRORS.endFrameNeedsStart);

    const refUrls = stringArray(raw, "reference_image_urls", fail);
    const refB64 = stringArray(raw, "reference_images_base64", fail);
    const videoUrls = stringArray(raw, "reference_video_urls", fail);
    const audioUrls = stringArray(raw, "reference_audio_urls", fail);

    const images = refUrls.length + refB64.length;
    const videos = videoUrls.length;
    const audio = audioUrls.length;
    const referenced = images + videos + audio > 0;
    if (referenced) {
      if (framed) return fail(VIDEO_ERRORS.referencesWithFrames);
      const refs = model.references;
      if (!refs) return fail(VIDEO_ERRORS.referencesBetaOnly(images ? "images" : videos ? "videos" : "audio"));
      if (images > refs.images) return fail(VIDEO_ERRORS.tooManyReferenceImages(images, refs.images, modelId));
      if (videos > refs.videos.count)
        return fail(VIDEO_ERRORS.tooManyReferenceVideos(videos, refs.videos.count, modelId));
      if (audio > refs.audio.count) return fail(VIDEO_ERRORS.tooManyReferenceAudio(audio, refs.audio.count, modelId));
      if (audio > 0 && refs.audio.needsImageOrVideo && images + videos === 0)
        return fail(VIDEO_ERRORS.referenceAudioNeedsVisual(modelId));
      for (const b of refB64) if (!validBase64(b)) return fail(VIDEO_ERRORS.referenceImageBase64);
      for (const b of refB64) {
        const problem = imageBase64Problem(b, "reference_images_base64");
        if (problem) return fail(problem);
      }
    }

    const callbackUrl = callbackUrlOf(raw, fail);

    const modelUsed = (modelId === "alpha-v3-text-to-video" && start ? "alpha-v3-image-to-video" : modelId) as ModelId;
    return {
      prompt: raw.prompt.trim(),
      negativePrompt: negative,
      model: modelId as ModelId,
      /** What the job renders with (text-to-video becomes image-to-video with a start frame). */
      modelUsed,
      quality: quality as Quality,
      aspectRatio: ratio as AspectRatio,
      /** As validated (what a per-clip or per-second price uses). */
      duration,
      /** What the clip will last (gamma: always 8). */
      outputSeconds: model.fixedOutputSeconds ?? duration,
      sound,
      stripMetadata: strip,
      startFrame: start,
      endFrame: end,
      referenceImages: [
        ...refUrls.map((url): FrameInput => ({ url: url.trim() })),
        ...refB64.map((base64): FrameInput => ({ base64, mimeType: "image/jpeg" })),
      ],
      referenceVideoUrls: videoUrls.map((u) => u.trim()),
      referenceAudioUrls: audioUrls.map((u) => u.trim()),
      callbackUrl,
      partnerJobId: raw.partner_job_id,
    };
  },
});

/**
 * Every URL of a request through the outbound guard's syntax rules (`check` is the guard's checkUrl, so
 * ALLOW_PRIVATE_URLS applies), normalized in place; the first failure's text, or null. Run by the handler
 * before any charge: the guard's rules depend on the deployment, which a schema cannot see.
 */
export function checkRequestUrls(
  req: {
    startFrame: FrameInput | null;
    endFrame: FrameInput | null;
    referenceImages?: FrameInput[];
    referenceVideoUrls?: string[];
    referenceAudioUrls?: string[];
    callbackUrl: string | null;
  },
  check: (text: unknown) => CheckUrlResult,
  names: { start: "image" | "start_image" },
): string | null {
  const frame = (f: FrameInput | null, https: string, invalid: (u: string) => string): string | null => {
    if (!f || !("url" in f)) return null;
    const c = check(f.url);
    if (c.ok) {
      f.url = c.url.href;
      return null;
    }
    // Plain http gets the spec's own sentence; anything else names the URL.
    return /^http:/i.test(f.url) ? https : invalid(f.url.slice(0, 200));
  };
  const startText =
    names.start === "image"
      ? { https: VIDEO_ERRORS.imageUrlHttps, invalid: VIDEO_ERRORS.invalidImageUrl }
      : { https: VIDEO_ERRORS.startImageUrlHttps, invalid: VIDEO_ERRORS.invalidStartImageUrl };
  const list = (urls: string[] | FrameInput[] | undefined, invalid: (u: string) => string): string | null => {
    for (const [i, item] of (urls ?? []).entries()) {
      const text = typeof item === "string" ? item : "url" in item ? item.url : null;
      if (text === null) continue;
      const c = check(text);
      if (!c.ok) return invalid(text.slice(0, 200));
      if (typeof item === "string") (urls as string[])[i] = c.url.href;
      else (item as { url: string }).url = c.url.href;
    }
    return null;
  };
  const failure =
    frame(req.startFrame, startText.https, startText.invalid) ??
    frame(req.endFrame, VIDEO_ERRORS.endImageUrlHttps, VIDEO_ERRORS.invalidEndImageUrl) ??
    list(req.referenceImages, VIDEO_ERRORS.invalidReferenceImageUrl) ??
    list(req.referenceVideoUrls, VIDEO_ERRORS.invalidReferenceVideoUrl) ??
    list(req.referenceAudioUrls, VIDEO_ERRORS.invalidReferenceAudioUrl);
  if (failure) return failure;
  if (req.callbackUrl !== null) {
    const c = check(req.callbackUrl);
    if (!c.ok) return CALLBACK_URL_ERROR;
    req.callbackUrl = c.url.href;
  }
  return null;
}

export const GenerateAnimationInput = defineInput({
  fields: {
    prompt: str("motion between the frames, max 2500 characters"),
    ...frameFields("start_image", "public HTTPS URL of the first frame", "base64 first frame, max about 20 MB"),
    ...frameFields("end_image", "public HTTPS URL of the last frame", "base64 last frame"),
    aspect_ratio: field.string({ enum: ASPECT_RATIOS, default: DEFAULT_ASPECT_RATIO }),
    callback_url: str("public https URL for one signed event"),
    partner_job_id: field.partnerJobId(),
  },
  required: ["prompt"],
  check(raw, fail) {
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(VIDEO_ERRORS.promptMissing);
    if (raw.prompt.length > MAX_PROMPT.animation) return fail(VIDEO_ERRORS.animationPromptTooLong);
    const ratio = raw.aspect_ratio ?? DEFAULT_ASPECT_RATIO;
    if (!oneOf(ASPECT_RATIOS, ratio)) return fail(VIDEO_ERRORS.invalidAspectRatio);
    const start = frameOf(
      raw,
      "start_image",
      {
        invalidUrl: VIDEO_ERRORS.invalidStartImageUrl,
        base64: VIDEO_ERRORS.startImageBase64,
        mime: VIDEO_ERRORS.startImageMime,
      },
      fail,
    );
    const end = frameOf(raw, "end_image", END_IMAGE_ERRORS, fail);
    if (!start || !end) return fail(VIDEO_ERRORS.animationFramesRequired);
    const callbackUrl = callbackUrlOf(raw, fail);
    return {
      prompt: raw.prompt.trim(),
      aspectRatio: ratio as AspectRatio,
      startFrame: start,
      endFrame: end,
      callbackUrl,
      partnerJobId: raw.partner_job_id,
    };
  },
});
