// Every text the Omni area answers with. Quoted words are the spec's (part 3 "Errors", word for word: mind
// `name is required` for characters and `Name is required.` for voices). Where the spec says "not shown" or
// names a rule without its text, the wording is ours, marked "Ours".
import { ASPECT_RATIOS, DURATIONS, LIMITS, OMNI_MODELS, RESOLUTIONS } from "./prices.ts";

export const OMNI_ERRORS = {
  // Shared.
  notFound: "Not found",
  unavailable: "Omni is currently unavailable",

  // POST /omni/characters.
  characterNameRequired: "name is required",
  provideImage: "Provide image_base64 or image_url",
  invalidImageBase64: "Invalid image_base64",
  invalidImageUrl: (detail: string) => `Invalid image_url: ${detail}`,
  voicesNotFound: "Selected voices not found in your library.",
  imageTooLarge: "image_base64 too large (max 20 MB)",
  characterInsufficient: (n: number) => `Insufficient credits. A character costs ${n} credits.`,
  // Spec: "hosting the image or creating the character failed (credits refunded)", text not shown. Ours.
  characterFailed: "Character could not be created. Credits refunded.",
  // Ours: limits of part 3 without texts.
  characterNameTooLong: `name must be at most ${LIMITS.nameChars} characters`,
  descriptionTooLong: `description must be at most ${LIMITS.descriptionChars} characters`,
  descriptionType: "description must be a string",
  bothImages: "Provide only one of image_base64 or image_url",

  // POST /omni/voices.
  unknownBaseVoice: "Unknown base voice. Pick one of the preset voices.",
  voiceNameRequired: "Name is required.",
  voiceFailed: "Voice could not be created. Please try again.",
  voicesUnavailable: "Omni is currently unavailable.",
  // Ours.
  voiceNameTooLong: `Name must be at most ${LIMITS.nameChars} characters.`,
  voiceDescriptionTooLong: `Description must be at most ${LIMITS.descriptionChars} characters.`,
  exampleDialogueTooLong: `Example dialogue must be at most ${LIMITS.exampleDialogueChars} characters.`,
  voiceDescriptionType: "Description must be a string.",
  exampleDialogueType: "Example dialogue must be a string.",

  // POST /omni/video (all ours: the spec states the rules, "Error messages ... not shown").
  promptRequired: "prompt is required",
  promptTooLong: `prompt must be at most ${LIMITS.promptChars} characters`,
  invalidModel: `Invalid model. Allowed: ${OMNI_MODELS.join(", ")}`,
  invalidDuration: `Invalid duration. Allowed: ${DURATIONS.join(", ")}`,
  invalidAspectRatio: `Invalid aspect_ratio. Allowed: ${ASPECT_RATIOS.join(", ")}`,
  invalidResolution: `Invalid resolution. Allowed: ${RESOLUTIONS.join(", ")}`,
  invalidSeed: "seed must be an integer",
  stripMetadata: "strip_metadata must be true or false",
  framesNeedOmni11: "first_frame_url and last_frame_url are only supported by omni-1.1",
  lastFrameNeedsFirst: "last_frame_url requires first_frame_url",
  framesExclusive:
    "first_frame_url cannot be combined with character_ids, voice_ids, image_urls, image_base64 or video_url",
  invalidFrameUrl: (field: string, detail: string) => `Invalid ${field}: ${detail}`,
  arrayOfStrings: (field: string) => `${field} must be an array of strings`,
  tooManyCharacters: `At most ${LIMITS.characters} characters per video`,
  tooManyVoices: `At most ${LIMITS.voices} voices per video`,
  charactersNotFound: "Selected characters not found in your library.",
  invalidReferenceImageUrl: (detail: string) => `Invalid image_urls entry: ${detail}`,
  invalidReferenceImageBase64: "image_base64 must hold PNG, JPEG or WEBP images as base64",
  referenceImageTooLarge: "image_base64 entry too large (max 20 MB)",
  referenceImagesTooLarge: "image_base64 too large in total (max 72 MB)",
  referenceBudget: `Too many references: images + 2 per reference video + characters must not exceed ${LIMITS.referenceBudget}`,
  invalidVideoUrl: (detail: string) => `Invalid video_url: ${detail}`,
  trimRequired: "video_start and video_end are required with video_url",
  trimWithoutVideo: "video_start and video_end require video_url",
  invalidTrim: "video_start and video_end must be numbers with 0 <= video_start < video_end",
  trimTooLong: `video_end - video_start must be at most ${LIMITS.trimWindowMaxSeconds} seconds`,
  referenceVideoTooLarge: `Reference video is larger than ${LIMITS.referenceVideoMaxBytes / 1_000_000} MB`,
  referenceVideoTooLong: `Reference video is longer than ${LIMITS.referenceVideoMaxSeconds} seconds`,
  referenceVideoUnreadable: "Reference video could not be read as a video",
  trimOutsideSource: (seconds: number) => `video_end is beyond the end of the reference video (${seconds} s)`,
  referenceUnavailable: (status: number) => `Reference video could not be downloaded (HTTP ${status})`,
  referenceVideoUnusable: "Could not prepare that video as a reference.",
  callbackUrl: "callback_url must be a public https URL",
  videoInsufficient: (n: number) => `Insufficient credits. This video costs ${n} credits.`,
  customNoRate: "This option is not available on your plan - contact us for a negotiated rate.",

  // Job outcomes (sanitized, stored on the job).
  videoFailed: "Video generation failed. Credits refunded.",
  videoUnsafe:
    "The prompt was blocked by the content safety filter. Credits refunded. Edit the prompt or use POST /omni/improve-prompt.",
  referenceLost: "A reference could not be read. Credits refunded.",

  // GET /omni/videos.
  listStatus: "status must be one of processing, complete, failed",

  // POST /omni/script-runner (ours).
  characterIdRequired: "character_id is required",
  sectionsRequired: `sections must be an array of ${LIMITS.sectionsMin} to ${LIMITS.sectionsMax} entries`,
  sectionContentRequired: (i: number) => `sections[${i}].content is required`,
  sectionContentTooLong: (i: number) =>
    `sections[${i}].content must be at most ${LIMITS.sectionContentChars} characters`,
  sectionDuration: (i: number) => `sections[${i}].duration must be one of ${DURATIONS.join(", ")}`,
  sectionField: (i: number, field: string) => `sections[${i}].${field} must be a string`,
  sectionImage: (i: number) => `sections[${i}].image_base64 must be a PNG, JPEG or WEBP image as base64`,
  sectionImageTooLarge: (i: number) => `sections[${i}].image_base64 too large (max 20 MB)`,
  sectionImagesTooLarge: "sections[].image_base64 too large in total (max 72 MB)",
  batchInsufficient: (n: number) => `Insufficient credits. This batch costs ${n} credits.`,

  // POST /omni/improve-prompt.
  jobIdRequired: "job_id is required",
  notFailed: "This job did not fail, so there is nothing to fix.",
  notFixable: "This error can't be fixed by editing the prompt.",
  repairInsufficient: (n: number) => `Insufficient credits. This costs ${n} credits.`,
  // Spec: "prompt improver temporarily unavailable (credits refunded)", text not shown. Ours.
  repairFailed: "Prompt improver temporarily unavailable. Credits refunded.",
} as const;
