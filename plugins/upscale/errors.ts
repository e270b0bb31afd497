// Every text the upscale plugin answers with. Quoted words are the spec's (part 1, "Errors"); where the spec
// elides the rest of a sentence ("...") or gives no text for a rule, the wording is ours and says so.
export const UPSCALE_ERRORS = {
  exactlyOneSource: "Provide exactly one of image_url or image_base64",
  factor: "upscale_factor must be 1, 2 or 4",
  over8K: "Output would exceed 8K",
  imageFormat: "Unsupported image format. Please use JPEG, PNG or WebP.",
  base64TooLarge: "image_base64 too large (max 20 MB)",
  imageTooLarge: "Image must be under 10 MB.",
  // Ours, borrowed from POST /remove-metadata, which fetches the same kind of source: the upscale rows of the
  // spec give no text for a URL that is not public or a download that fails.
  imageUrl: "image_url must be a public https URL",
  imageBase64: "Invalid image_base64",
  imageFetch: "The image URL could not be fetched.",

  videoUrlRequired: "video_url is required",
  videoUrl: "video_url must be a public https URL",
  videoTooLong: "Video must be 120 seconds or shorter.",
  over4K: "Output would exceed 4K",
  videoFormat: "Video must be an MP4 or MOV file.",
  videoDownload: "A reference video could not be downloaded.",
  // The spec elides the rest ("Video must be under 50 MB..."); the completion is ours.
  videoTooLarge: "Video must be under 50 MB. Send a shorter or more compressed file.",

  notAvailable: "Upscaling not available",
  // Stored on a failed job (sanitized: no tool, no internal detail).
  failed: "Upscaling failed. Your credits have been refunded.",
} as const;
