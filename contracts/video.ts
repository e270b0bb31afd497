// The `video.generate` capability: what a video provider adapter implements. The video plugin validates,
// charges, fetches the frames and prepares the reference media, then hands the provider everything as bytes;
// its sandbox (plugins/video/sandbox.ts) or a real upstream adapter provides it, so one replaces the other without touching
// the plugin.
import type { SpokenRecord } from "./speech.ts";
import type { ProviderRoutes, UpstreamProvider } from "./upstream.ts";

/** A still picture: a start or end frame, or a reference image. */
export interface VideoFrame {
  bytes: Uint8Array;
  /** image/png, image/jpeg or image/webp (as sent; the provider sniffs the bytes when in doubt). */
  mimeType: string;
  /** The URL it came from, when it came from one (the sandbox fails on a path containing `sandbox-fail`). */
  url?: string;
}

/** A reference clip or sound, already downloaded, measured and normalized by the plugin (references.ts). */
export interface ReferenceMedia {
  /** Normalized MP4 (H.264/AAC) for videos, MP3 for audio. */
  bytes: Uint8Array;
  /** Measured from the file. */
  seconds: number;
  url: string;
}

export interface VideoGenerationRequest {
  prompt: string;
  negativePrompt: string | null;
  /** A model id of plugins/video/prices.ts, or "animation" for POST /generate-animation. */
  model: string;
  /** Output frame size (docs/architecture.md "Sizes": the quality is the short edge), both even. */
  width: number;
  height: number;
  /** Output length in whole seconds (the plugin already applied the model's rule, e.g. gamma is 8). */
  seconds: number;
  /** An audio track is wanted (alpha `sound`, animation always). */
  sound: boolean;
  /** Shown as the first frame of the clip. */
  startFrame?: VideoFrame;
  /** Shown as the last frame of the clip (only with a start frame). */
  endFrame?: VideoFrame;
  referenceImages: VideoFrame[];
  referenceVideos: ReferenceMedia[];
  referenceAudio: ReferenceMedia[];
}

export interface GeneratedVideo {
  /** An MP4 (H.264 video, AAC audio when there is sound), possibly carrying provenance metadata. */
  bytes: Uint8Array;
  mimeType: "video/mp4";
  /**
   * The words the clip speaks and their times in this file, when the provider spoke them itself (the sandbox
   * does when `sound` is on; `words` empty when it had nothing to say). Kept with the job for captions.
   */
  spoken?: SpokenRecord | null;
}

export { UnsafeContentError } from "./errors.ts";

/** The video providers by route: a model's id, or "animation" (contracts/upstream.ts ProviderRoutes). */
export type VideoProviders = ProviderRoutes<VideoProvider>;

/**
 * Submits and polls (contracts/upstream.ts): a job waits for it without holding a slot. UnsafeContentError
 * is a content-safety block; any other failure is a provider failure (the job ends `error`, refunded).
 */
export type VideoProvider = UpstreamProvider<VideoGenerationRequest, GeneratedVideo>;

declare module "./index.ts" {
  interface CapabilityMap {
    "video.generate": VideoProviders;
  }
}
