// Every text the images plugin answers with. Quoted words are the spec's (part 1, "Errors"); where the
// spec elides the rest of a sentence ("..."), the completion is ours.
import { MODEL_IDS } from "./models.ts";

export const IMAGE_ERRORS = {
  promptMissing: "Please provide a prompt",
  invalidModel: `Invalid model. Allowed: ${MODEL_IDS.join(", ")}`,
  invalidAspectRatio: (allowed: readonly string[]) => `Invalid aspect_ratio. Allowed: ${allowed.join(", ")}`,
  invalidQuality: (allowed: readonly string[]) => `Invalid quality. Allowed: ${allowed.join(", ")}`,
  oneKOnly: (ratio: string) => `Aspect ratio ${ratio} supports 1K only. Use quality 1K or another aspect ratio.`,
  impossible: (model: string, quality: string, ratio: string) =>
    `${model} cannot generate ${quality} at ${ratio} aspect ratio. Choose another aspect ratio or quality.`,
  invalidBackground: "Invalid background. Allowed: auto, transparent, opaque",
  invalidQuantity: "quantity must be an integer from 1 to 4",
  stripMetadata: "strip_metadata must be true or false",
  refImagesShape: "ref_images must be an array of up to 5 objects {base64, mime_type}",
  refImageMime: "ref_images[].mime_type must be image/png, image/jpeg or image/webp",
  refImageBase64: "ref_images[].base64 is not valid base64",
  // Ours (the spec has no text): an upload that is no PNG, JPEG or WebP, or one over the pixel budget
  // (lib/media/budgets.ts), with the reason, so the partner knows what to change.
  refImageUnusable: (why: string) => `ref_images[].base64 is not an image we can use: ${why}`,
  refUrlsShape: "reference_image_urls must be an array of up to 5 URLs",
  invalidRefUrl: (url: string) => `Invalid reference image URL: ${url}`,
  refTooLarge: "ref_images[].base64 too large (max 20 MB each)",
  refsTooLarge: "ref_images combined too large (max 72 MB total)",
  notAvailable: "Image generation not available",
  // Stored on a failed image (sanitized: no provider, no internal detail).
  failed: "Image generation failed. Your credits have been refunded.",
  unsafe: "The prompt was blocked by the content safety filter. Your credits have been refunded.",
} as const;
