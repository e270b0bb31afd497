// Every text the video plugin answers with. Quoted words are the spec's (part 2, "Errors"); where the spec
// elides the rest of a sentence ("...") or words a rule without a text, the wording is ours and says so.
import { ASPECT_RATIOS, MODEL_IDS } from "./prices.ts";

export const VIDEO_ERRORS = {
  promptMissing: "Please provide a prompt",
  promptTooLong: (max: number) => `Prompt must be ${max} characters or less`,
  invalidModel: `Invalid model. Allowed: ${MODEL_IDS.join(", ")}`,
  invalidQuality: (model: string, allowed: readonly string[]) =>
    `Invalid quality for ${model}. Allowed: ${allowed.join(", ")}`,
  invalidAspectRatio: `Invalid aspect_ratio. Allowed: ${ASPECT_RATIOS.join(", ")}`,
  invalidDuration: "Invalid duration",
  durationNotSupported: (seconds: number, model: string, allowed: string) =>
    `Duration ${seconds}s is not supported for ${model}. Allowed: ${allowed}`,
  stripMetadata: "strip_metadata must be true or false",
  // Ours: the spec names the rule ("AI sound, alpha-v3 text and image models only") without a text.
  soundNotSupported: (model: string) =>
    `sound is only available on alpha-v3-text-to-video and alpha-v3-image-to-video (not ${model})`,
  soundType: "sound must be true or false",
  negativePromptType: "negative_prompt must be a string",

  // Frames.
  imageUrlHttps: "image_url must be HTTPS",
  endImageUrlHttps: "end_image_url must be HTTPS",
  invalidImageUrl: (url: string) => `Invalid image_url: ${url}`,
  invalidEndImageUrl: (url: string) => `Invalid end_image_url: ${url}`,
  endFrameNeedsStart:
    "end_image_url/end_image_base64 requires a start frame (image_url or image_base64). Send both frames for first+last interpolation.",
  framesNotSupported: (model: string) => `${model} does not accept a start or end frame`,
  imageBase64: "image_base64 is not valid base64",
  endImageBase64: "end_image_base64 is not valid base64",
  imageMime: "image_mime must be image/jpeg, image/png or image/webp",
  endImageMime: "end_image_mime must be image/jpeg, image/png or image/webp",
  imageTooLarge: "image_base64 too large (max 20 MB)",
  endImageTooLarge: "end_image_base64 too large (max 20 MB)",

  // Reference mode.
  referencesBetaOnly: (what: string) =>
    `Reference ${what} are only supported by the Beta models (beta-2-direct, beta-2-5)`,
  referencesWithFrames:
    "Reference media (reference_*) cannot be combined with a start/end frame (image_* / end_image_*)",
  referenceShape: (field: string) => `${field} must be an array of strings`,
  tooManyReferenceImages: (n: number, max: number, model: string) =>
    `Too many reference images (${n}). Max is ${max} for ${model}.`,
  invalidReferenceImageUrl: (url: string) => `Invalid reference image URL: ${url}`,
  referenceImageBase64: "reference_images_base64 must hold valid base64 strings",
  // Not shown in the spec: a frame or reference image whose bytes are not an image (read from its first bytes).
  notAnImage: (field: string) => `${field} must be a JPEG, PNG or WebP image`,
  // Not shown in the spec: a frame or reference image over the pixel budget (lib/media/budgets.ts: 40 MP, a
  // 16,384 px edge, 400 MP over an animation's frames), said with its size so the partner knows what to resize.
  imageOverBudget: (field: string, why: string) => `${field} is an image we cannot use: ${why}`,
  referenceImageTooLarge: "a reference image is too large (max 20 MB)",
  referenceImagesTooLarge: "reference images total size too large",
  tooManyReferenceVideos: (n: number, max: number, model: string) =>
    `Too many reference videos (${n}). Max is ${max} for ${model}.`,
  referenceVideoLength: (min: number, max: number, seconds: number) =>
    `Reference videos must be between ${min} and ${max} seconds (yours is ${seconds}s).`,
  referenceVideosTotal: (seconds: number, model: string, max: number) =>
    `Reference videos total ${seconds}s - the limit for ${model} is ${max}s.`,
  invalidReferenceVideoUrl: (url: string) => `Invalid reference video URL: ${url}`,
  referenceVideoDownload: (status: number | string) => `A reference video could not be downloaded (HTTP ${status}).`,
  referenceVideoUnusable: "Could not prepare that video as a reference.",
  referenceVideoTooLarge: "A reference video is too large (max 95 MB).",
  // Reference audio: the spec states the rules without texts; these follow the reference-video sentences.
  tooManyReferenceAudio: (n: number, max: number, model: string) =>
    `Too many reference audio files (${n}). Max is ${max} for ${model}.`,
  referenceAudioLength: (min: number, max: number, seconds: number) =>
    `Reference audio must be between ${min} and ${max} seconds (yours is ${seconds}s).`,
  referenceAudioTotal: (seconds: number, model: string, max: number) =>
    `Reference audio total ${seconds}s - the limit for ${model} is ${max}s.`,
  referenceAudioNeedsVisual: (model: string) =>
    `Reference audio on ${model} needs at least one reference image or video.`,
  invalidReferenceAudioUrl: (url: string) => `Invalid reference audio URL: ${url}`,
  referenceAudioDownload: (status: number | string) =>
    `A reference audio file could not be downloaded (HTTP ${status}).`,
  referenceAudioUnusable: "Could not prepare that audio file as a reference.",
  referenceAudioTooLarge: "A reference audio file is too large (max 50 MB).",

  // Plans and models.
  customNoReferenceRate: "Reference videos are not available on your plan yet - contact us for a negotiated rate.",
  customNoRate: (quality: string, seconds: number) =>
    `This resolution/duration is not available on your plan (${quality}, ${seconds}s).`,
  motionControl:
    "alpha-v3-motion-control needs a reference image and a motion reference video, which the partner interface does not support; use alpha-v3-image-to-video for image-only conditioning",
  insufficient: (n: number) => `Insufficient credits. This video costs ${n} credits.`,
  notAvailable: "Video generation not available",

  // Animation (the spec shows no texts of its own beyond part 1's table; these are ours).
  animationPromptTooLong: "Prompt must be 2500 characters or less",
  animationFramesRequired:
    "Both a start frame (start_image_url or start_image_base64) and an end frame (end_image_url or end_image_base64) are required",
  startImageUrlHttps: "start_image_url must be HTTPS",
  invalidStartImageUrl: (url: string) => `Invalid start_image_url: ${url}`,
  startImageBase64: "start_image_base64 is not valid base64",
  startImageMime: "start_image_mime must be image/jpeg, image/png or image/webp",
  startImageTooLarge: "start_image_base64 too large (max 20 MB)",
  animationInsufficient: (n: number) => `Insufficient credits. This animation costs ${n} credits.`,

  // Merge.
  mergeNeedTwo: "Need at least 2 job_ids",
  mergeInvalidJobId: (id: string) => `Invalid job_id: ${id}`,
  mergeNotFound: "Some clips not found, not owned, or not complete",
  mergeFileMissing: (id: string) => `Video file missing for ${id}`,
  mergeInsufficient: (n: number) => `Insufficient credits. Merging costs ${n} credits.`,
  mergeFailed: "Merge failed",

  // Stored on a failed job (sanitized: no provider, no internal detail).
  failed: "Video generation failed. Your credits have been refunded.",
  unsafe: "The prompt was blocked by the content safety filter. Your credits have been refunded.",
  frameUnavailable: "A start or end frame could not be downloaded. Your credits have been refunded.",
  listStatus: "status must be one of processing, complete, failed",
} as const;
