// POST /generate-video and /generate-animation input: every rule that needs no download, checked in one
// ordered pass before any charge (the model decides the allowed qualities, durations and references, so one
// function decides the error text); the zod shapes around them only describe the fields for OpenAPI and
// GraphQL. Rules that need the bytes (sizes -> 413, reference downloads and lengths) run in the handler.
//
// Choices where the spec is silent, written down here:
// - `duration` omitted on a gamma model means 8 (the clip is 8 s whatever is sent; the default 10 is not one
//   of its accepted values). A sent duration is still checked against 4, 6, 8.
// - `duration` must be a JSON integer; "10" (a string) or 7.5 is `Invalid duration`.
// - `sound: false` is accepted on every model; only `true` is refused off the alpha text and image models.
// - `alpha-v3-text-to-video` with a start frame reports `model_used` `alpha-v3-image-to-video` (the spec's
//   "switches to image-to-video automatically").
import { z } from "zod";
import { type CheckUrlResult, partnerJobIdField } from "mediagate/plugin";
import { VIDEO_ERRORS as E } from "./errors.ts";
import {
  acceptsDuration,
  allowedDurations,
  ASPECT_RATIOS,
  DEFAULT_ASPECT_RATIO,
  DEFAULT_DURATION,
  DEFAULT_MODEL,
  DEFAULT_QUALITY,
  MAX_PROMPT,
  MODEL_IDS,
  MODELS,
  type AspectRatio,
  type ModelId,
  type Quality,
  type VideoModel,
} from "./models.ts";

export const IMAGE_MIME_TYPES = ["image/jpeg", "image/png", "image/webp"] as const;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A frame as sent: a URL (fetched by the job through the outbound guard) or base64 bytes. */
export type FrameInput = { url: string } | { base64: string; mimeType: string };

export interface VideoRequest {
  prompt: string;
  negativePrompt: string | null;
  model: ModelId;
  /** What the job renders with (text-to-video becomes image-to-video with a start frame). */
  modelUsed: ModelId;
  quality: Quality;
  aspectRatio: AspectRatio;
  /** As validated (what a per-clip or per-second price uses). */
  duration: number;
  /** What the clip will last (gamma: always 8). */
  outputSeconds: number;
  sound: boolean;
  stripMetadata: boolean;
  startFrame: FrameInput | null;
  endFrame: FrameInput | null;
  referenceImages: FrameInput[];
  referenceVideoUrls: string[];
  referenceAudioUrls: string[];
  callbackUrl: string | null;
}

type Check<T> = { ok: true; value: T } | { ok: false; message: string };
const fail = <T,>(message: string): Check<T> => ({ ok: false, message });

export const validBase64 = (s: string) => s.length > 0 && s.length % 4 !== 1 && BASE64.test(s);
/** Bytes a base64 text decodes to, without decoding it. */
export const decodedSize = (base64: string) => Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

/**
 * A frame from a `<name>_url` / `<name>_base64` / `<name>_mime` triple. The URL wins when both are sent
 * (choice: the spec lists them as alternatives without saying).
 */
function frameOf(raw: Record<string, unknown>, name: string, texts: { invalidUrl: (u: string) => string; base64: string; mime: string }): Check<FrameInput | null> {
  const url = raw[`${name}_url`];
  if (present(url)) {
    if (typeof url !== "string") return fail(texts.invalidUrl(String(url)));
    return { ok: true, value: { url: url.trim() } };
  }
  const base64 = raw[`${name}_base64`];
  if (present(base64)) {
    if (typeof base64 !== "string" || !validBase64(base64)) return fail(texts.base64);
    const mime = raw[`${name}_mime`] ?? "image/jpeg";
    if (typeof mime !== "string" || !(IMAGE_MIME_TYPES as readonly string[]).includes(mime)) return fail(texts.mime);
    return { ok: true, value: { base64, mimeType: mime } };
  }
  return { ok: true, value: null };
}

function stringArray(raw: Record<string, unknown>, field: string): Check<string[]> {
  const v = raw[field];
  if (v === undefined || v === null) return { ok: true, value: [] };
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) return fail(E.referenceShape(field));
  return { ok: true, value: v as string[] };
}

function callbackUrlOf(raw: Record<string, unknown>): Check<string | null> {
  const v = raw.callback_url;
  if (!present(v)) return { ok: true, value: null };
  if (typeof v !== "string") return fail(CALLBACK_URL_ERROR);
  return { ok: true, value: v.trim() };
}

/** Ours: part 1 says a callback_url that is not public https is a 400 without giving the text. */
export const CALLBACK_URL_ERROR = "callback_url must be a public https URL";

export function checkVideoRequest(raw: Record<string, unknown>): Check<VideoRequest> {
  if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(E.promptMissing);

  const modelId = raw.model ?? DEFAULT_MODEL;
  if (typeof modelId !== "string" || !(MODEL_IDS as string[]).includes(modelId)) return fail(E.invalidModel);
  const model = MODELS[modelId as ModelId] as VideoModel;
  if (model.unusable) return fail(E.motionControl);

  const maxPrompt = MAX_PROMPT[model.family];
  if (raw.prompt.length > maxPrompt) return fail(E.promptTooLong(maxPrompt));

  const quality = raw.quality ?? DEFAULT_QUALITY;
  if (typeof quality !== "string" || !(model.qualities as readonly string[]).includes(quality)) return fail(E.invalidQuality(modelId, model.qualities));

  const ratio = raw.aspect_ratio ?? DEFAULT_ASPECT_RATIO;
  if (typeof ratio !== "string" || !(ASPECT_RATIOS as readonly string[]).includes(ratio)) return fail(E.invalidAspectRatio);

  const duration = raw.duration ?? (model.fixedOutputSeconds ?? DEFAULT_DURATION);
  if (typeof duration !== "number" || !Number.isInteger(duration) || duration < 1) return fail(E.invalidDuration);
  if (!acceptsDuration(model, duration)) return fail(E.durationNotSupported(duration, modelId, allowedDurations(model)));

  const sound = raw.sound ?? false;
  if (typeof sound !== "boolean") return fail(E.soundType);
  if (sound && !model.sound) return fail(E.soundNotSupported(modelId));

  // null is not "absent" here: the spec rejects any value but true or false.
  const strip = raw.strip_metadata === undefined ? false : raw.strip_metadata;
  if (typeof strip !== "boolean") return fail(E.stripMetadata);

  const negative = raw.negative_prompt ?? null;
  if (negative !== null && typeof negative !== "string") return fail(E.negativePromptType);

  const start = frameOf(raw, "image", { invalidUrl: E.invalidImageUrl, base64: E.imageBase64, mime: E.imageMime });
  if (!start.ok) return start;
  const end = frameOf(raw, "end_image", { invalidUrl: E.invalidEndImageUrl, base64: E.endImageBase64, mime: E.endImageMime });
  if (!end.ok) return end;
  const framed = start.value !== null || end.value !== null;
  if (framed && !model.frames) return fail(E.framesNotSupported(modelId));
  if (end.value && !start.value) return fail(E.endFrameNeedsStart);

  const refUrls = stringArray(raw, "reference_image_urls");
  if (!refUrls.ok) return refUrls;
  const refB64 = stringArray(raw, "reference_images_base64");
  if (!refB64.ok) return refB64;
  const videoUrls = stringArray(raw, "reference_video_urls");
  if (!videoUrls.ok) return videoUrls;
  const audioUrls = stringArray(raw, "reference_audio_urls");
  if (!audioUrls.ok) return audioUrls;

  const images = refUrls.value.length + refB64.value.length;
  const videos = videoUrls.value.length;
  const audio = audioUrls.value.length;
  const referenced = images + videos + audio > 0;
  if (referenced) {
    if (framed) return fail(E.referencesWithFrames);
    const refs = model.references;
    if (!refs) return fail(E.referencesBetaOnly(images ? "images" : videos ? "videos" : "audio"));
    if (images > refs.images) return fail(E.tooManyReferenceImages(images, refs.images, modelId));
    if (videos > refs.videos.count) return fail(E.tooManyReferenceVideos(videos, refs.videos.count, modelId));
    if (audio > refs.audio.count) return fail(E.tooManyReferenceAudio(audio, refs.audio.count, modelId));
    if (audio > 0 && refs.audio.needsImageOrVideo && images + videos === 0) return fail(E.referenceAudioNeedsVisual(modelId));
    for (const b of refB64.value) if (!validBase64(b)) return fail(E.referenceImageBase64);
  }

  const callback = callbackUrlOf(raw);
  if (!callback.ok) return callback;

  const modelUsed: ModelId = modelId === "alpha-v3-text-to-video" && start.value ? "alpha-v3-image-to-video" : (modelId as ModelId);
  return {
    ok: true,
    value: {
      prompt: raw.prompt.trim(),
      negativePrompt: negative,
      model: modelId as ModelId,
      modelUsed,
      quality: quality as Quality,
      aspectRatio: ratio as AspectRatio,
      duration,
      outputSeconds: model.fixedOutputSeconds ?? duration,
      sound,
      stripMetadata: strip,
      startFrame: start.value,
      endFrame: end.value,
      referenceImages: [
        ...refUrls.value.map((url) => ({ url: url.trim() })),
        ...refB64.value.map((base64) => ({ base64, mimeType: "image/jpeg" })),
      ],
      referenceVideoUrls: videoUrls.value.map((u) => u.trim()),
      referenceAudioUrls: audioUrls.value.map((u) => u.trim()),
      callbackUrl: callback.value,
    },
  };
}

/**
 * Every URL of a request through the outbound guard's syntax rules (`check` is the guard's checkUrl, so
 * ALLOW_PRIVATE_URLS applies), normalized in place; the first failure's text, or null. Run by the handler
 * before any charge: the guard's rules depend on the deployment, which a schema cannot see.
 */
export function checkRequestUrls(
  req: { startFrame: FrameInput | null; endFrame: FrameInput | null; referenceImages?: FrameInput[]; referenceVideoUrls?: string[]; referenceAudioUrls?: string[]; callbackUrl: string | null },
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
  const startText = names.start === "image" ? { https: E.imageUrlHttps, invalid: E.invalidImageUrl } : { https: E.startImageUrlHttps, invalid: E.invalidStartImageUrl };
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
    frame(req.endFrame, E.endImageUrlHttps, E.invalidEndImageUrl) ??
    list(req.referenceImages, E.invalidReferenceImageUrl) ??
    list(req.referenceVideoUrls, E.invalidReferenceVideoUrl) ??
    list(req.referenceAudioUrls, E.invalidReferenceAudioUrl);
  if (failure) return failure;
  if (req.callbackUrl !== null) {
    const c = check(req.callbackUrl);
    if (!c.ok) return CALLBACK_URL_ERROR;
    req.callbackUrl = c.url.href;
  }
  return null;
}

export interface AnimationRequest {
  prompt: string;
  aspectRatio: AspectRatio;
  startFrame: FrameInput;
  endFrame: FrameInput;
  callbackUrl: string | null;
}

export function checkAnimationRequest(raw: Record<string, unknown>): Check<AnimationRequest> {
  if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(E.promptMissing);
  if (raw.prompt.length > MAX_PROMPT.animation) return fail(E.animationPromptTooLong);
  const ratio = raw.aspect_ratio ?? DEFAULT_ASPECT_RATIO;
  if (typeof ratio !== "string" || !(ASPECT_RATIOS as readonly string[]).includes(ratio)) return fail(E.invalidAspectRatio);
  const start = frameOf(raw, "start_image", { invalidUrl: E.invalidStartImageUrl, base64: E.startImageBase64, mime: E.startImageMime });
  if (!start.ok) return start;
  const end = frameOf(raw, "end_image", { invalidUrl: E.invalidEndImageUrl, base64: E.endImageBase64, mime: E.endImageMime });
  if (!end.ok) return end;
  if (!start.value || !end.value) return fail(E.animationFramesRequired);
  const callback = callbackUrlOf(raw);
  if (!callback.ok) return callback;
  return { ok: true, value: { prompt: raw.prompt.trim(), aspectRatio: ratio as AspectRatio, startFrame: start.value, endFrame: end.value, callbackUrl: callback.value } };
}

const described = <T extends Record<string, unknown>>(json: T) => z.unknown().optional().meta(json);
const str = (description: string) => described({ type: "string", description });
const strings = (description: string) => described({ type: "array", items: { type: "string" }, description });

/** Wraps a check function as a Standard Schema value: the shape for documents, the check for the rules. */
function schema<T>(shape: Record<string, z.ZodType>, required: string[], check: (raw: Record<string, unknown>) => Check<T>) {
  return z
    .object({ ...shape, partner_job_id: partnerJobIdField().meta({ type: "string" }) })
    .meta({ required })
    .transform((raw, ctx) => {
      const checked = check(raw as Record<string, unknown>);
      if (!checked.ok) {
        ctx.addIssue({ code: "custom", message: checked.message });
        return z.NEVER;
      }
      return { ...checked.value, partnerJobId: (raw as { partner_job_id: string | null }).partner_job_id };
    });
}

export const GenerateVideoInput = schema(
  {
    // Optional to zod so a missing prompt reaches the check and gets the spec's text; `required` documents it.
    prompt: str("max 50000 characters (alpha-* models: 2500)"),
    model: described({ type: "string", enum: MODEL_IDS, default: DEFAULT_MODEL }),
    duration: described({ type: "integer", default: DEFAULT_DURATION, description: "seconds, validated per model" }),
    aspect_ratio: described({ type: "string", enum: ASPECT_RATIOS, default: DEFAULT_ASPECT_RATIO }),
    quality: described({ type: "string", enum: ["480p", "720p", "1080p", "4K"], default: DEFAULT_QUALITY }),
    sound: described({ type: "boolean", default: false, description: "alpha-v3 text and image models only" }),
    negative_prompt: str("things to avoid"),
    image_url: str("HTTPS URL of the start frame"),
    image_base64: str("start frame as base64 (max 20 MB binary)"),
    image_mime: described({ type: "string", enum: IMAGE_MIME_TYPES, default: "image/jpeg" }),
    end_image_url: str("HTTPS URL of the end frame; requires a start frame"),
    end_image_base64: str("end frame as base64 (max 20 MB binary)"),
    end_image_mime: described({ type: "string", enum: IMAGE_MIME_TYPES, default: "image/jpeg" }),
    reference_image_urls: strings("Beta models only: public HTTPS image URLs"),
    reference_images_base64: strings("Beta models only: base64 images (JPEG assumed)"),
    reference_video_urls: strings("Beta models only: public HTTPS MP4/MOV URLs, max 95 MB each"),
    reference_audio_urls: strings("Beta models only: public HTTPS MP3, WAV or M4A URLs, max 50 MB each"),
    callback_url: str("public https URL for one signed event"),
    strip_metadata: described({ type: "boolean", default: false }),
  },
  ["prompt"],
  checkVideoRequest,
);

export const GenerateAnimationInput = schema(
  {
    prompt: str("motion between the frames, max 2500 characters"),
    start_image_url: str("public HTTPS URL of the first frame"),
    start_image_base64: str("base64 first frame, max about 20 MB"),
    start_image_mime: described({ type: "string", enum: IMAGE_MIME_TYPES, default: "image/jpeg" }),
    end_image_url: str("public HTTPS URL of the last frame"),
    end_image_base64: str("base64 last frame"),
    end_image_mime: described({ type: "string", enum: IMAGE_MIME_TYPES, default: "image/jpeg" }),
    aspect_ratio: described({ type: "string", enum: ASPECT_RATIOS, default: DEFAULT_ASPECT_RATIO }),
    callback_url: str("public https URL for one signed event"),
  },
  ["prompt"],
  checkAnimationRequest,
);
