// The `omni.generate` capability: what an Omni video provider adapter implements. The omni plugin validates,
// charges, resolves the account's characters and voices (as snapshots), fetches and trims the reference media,
// then hands the provider everything as bytes; its sandbox (plugins/omni/sandbox.ts) or a real upstream adapter
// provides it, so one replaces the other without touching the plugin. The provider submits and polls
// (contracts/upstream.ts): the job waits for the render without holding a worker slot.
import type { UpstreamProvider } from "./upstream.ts";
import type { GeneratedVideo, VideoFrame } from "./video.ts";

/** A voice as the video uses it: a partner voice, or the one fixed on a character. */
export interface OmniVoiceSnapshot {
  id: string;
  name: string;
  /** A preset id of plugins/omni/presets.ts (`kore`, `puck`, ...): the provider speaks with it. */
  base_voice: string;
  description: string;
}

export interface OmniCharacterSnapshot {
  id: string;
  name: string;
  /** Identity description (the name when the partner gave none). */
  description: string;
  /** The stored reference image. */
  image: VideoFrame;
  /** The voice fixed on the character at creation (kept after the voice is deleted), or null. */
  voice: OmniVoiceSnapshot | null;
}

export interface OmniReferenceVideo {
  /** The window the partner chose, already cut out and normalized (H.264/AAC MP4, its length measured). */
  bytes: Uint8Array;
  seconds: number;
  url: string;
}

export interface OmniGenerationRequest {
  prompt: string;
  /** `omni` or `omni-1.1`. */
  model: string;
  /** Output size: 1080x1920 / 1920x1080 (1080p) or 2160x3840 / 3840x2160 (4k). */
  width: number;
  height: number;
  /** 4, 6, 8 or 10. */
  seconds: number;
  seed: number | null;
  /** 0-3, in the request's order. */
  characters: OmniCharacterSnapshot[];
  /** 0-3 voices of the request (characters' own voices are on the characters). */
  voices: OmniVoiceSnapshot[];
  referenceImages: VideoFrame[];
  referenceVideo: OmniReferenceVideo | null;
  /** `omni-1.1` only, never with characters, voices, images or a reference video. */
  firstFrame?: VideoFrame;
  lastFrame?: VideoFrame;
}

/**
 * Thrown by a provider whose safety filter blocked the prompt: the job ends `error` with `prompt_fixable`
 * true, and POST /omni/improve-prompt may repair it. (`UnsafeContentError` of contracts/errors.ts is the same
 * class: a provider throws that one.)
 */
export { UnsafeContentError } from "./errors.ts";

/**
 * Submits and polls (contracts/upstream.ts). A failure that is UnsafeContentError is the prompt-fixable block;
 * any other is a plain provider failure: `error`, refunded, not fixable.
 */
export type OmniProvider = UpstreamProvider<OmniGenerationRequest, GeneratedVideo> & {
  /**
   * Whether a model has a provider at all (an upstream gateway routes some models only): false is refused
   * before any charge with "Omni is currently unavailable". Absent: every model is served.
   */
  serves?(model: string): boolean;
};

declare module "./index.ts" {
  interface CapabilityMap {
    "omni.generate": OmniProvider;
  }
}
