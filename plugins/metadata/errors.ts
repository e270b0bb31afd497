// Every text metadata removal answers with. Quoted ones are the spec's (part 1, "Errors", POST
// /remove-metadata); where the spec elides the rest of a sentence ("...") or describes one without quoting
// it (the 422), the wording is ours and says so.
export const METADATA_ERRORS = {
  exactlyOne: "Provide exactly one of image_url, image_base64 or video_url",
  imageUrlHttps: "image_url must be a public https URL",
  invalidImageUrl: (url: string) => `Invalid image_url: ${url}`,
  invalidImageBase64: "Invalid image_base64",
  videoUrlHttps: "video_url must be a public https URL",
  invalidVideoUrl: (url: string) => `Invalid video_url: ${url}`,
  imageFetch: "The image URL could not be fetched.",
  videoFetch: "The video URL could not be fetched.",
  // Ours after "Image not found." / "Video not found (or expired).": what the partner can do about it.
  imageNotFound: "Image not found. The link points at no stored image (it may have expired); send the image again.",
  videoNotFound: "Video not found (or expired). The link points at no stored video; send the video again.",
  imageBase64TooLarge: "image_base64 too large (max 20 MB)",
  imageTooLarge: "Image too large (max 20 MB).",
  videoTooLarge: "Video too large (max 100 MB).",
  unsupportedImage: "Unsupported image format. Send a JPEG, PNG or WebP image.",
  unsupportedVideo: "Unsupported video format. Send an MP4 or MOV video.",
  // Ours: the spec describes the 422 as "the image or video could not be processed (damaged or not a valid
  // format)"; each kind says which of the two it was.
  imageDamaged: "The image could not be processed (damaged or not a valid format).",
  videoDamaged: "The video could not be processed (damaged or not a valid format).",
  imageQuota: "Daily limit reached: 200 metadata removals per 24 hours. Try again later.",
  videoQuota: "Daily limit reached: 50 video metadata removals per 24 hours. Try again later.",
  paused: "Metadata removal is paused right now. Please try again later.",
  videoBusy: "Video metadata removal is busy right now. Please retry in a minute.",
} as const;
