// The `music.generate` capability: what a music provider adapter implements. The music plugin validates,
// charges, restages the source audio and records the job; the provider only makes tracks. Its sandbox
// (plugins/music/sandbox.ts) or a real upstream adapter provides it, so one replaces the other without touching the plugin.
// Both operations submit and poll (contracts/upstream.ts): a job waits for its tracks without holding a worker slot.
import type { UpstreamProvider } from "./upstream.ts";

export type MusicModel = "V5_5" | "V5";

/** The machine-readable failure kinds of the spec's `error_code` (part 3, "Music"). */
export type MusicErrorCode = "provider_down" | "timeout" | "safety_filter" | "input_rejected";

/** A provider failure the partner may see as an `error_code` (the text shown is the plugin's, never this message). */
export class MusicProviderError extends Error {
  constructor(
    readonly code: MusicErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** What a generation asks for (simple mode: `prompt` is a description; custom mode: lyrics, style and title). */
export interface MusicGenerationRequest {
  model: MusicModel;
  /** Simple mode: the description. Custom mode: the lyrics ("" for a custom instrumental). */
  prompt: string;
  custom: boolean;
  style: string | null;
  title: string | null;
  instrumental: boolean;
}

/** The controls of an extension (part 3, the Controls table of POST /extend-music), already validated. */
export interface MusicControls {
  mode: "original" | "custom";
  prompt: string;
  style: string;
  title: string;
  negativeTags: string | null;
  vocalGender: "m" | "f" | null;
  styleWeight: number | null;
  weirdnessConstraint: number | null;
  audioWeight: number | null;
  personaId: string | null;
  personaModel: string | null;
  /** Seconds into the source where the new part begins; 0 < continueAt < source.seconds. */
  continueAt: number;
}

export interface MusicExtensionRequest extends MusicControls {
  /** Inherited from an owned source, else as asked (default V5_5). */
  model: MusicModel;
  /** Inherited from an owned source, else as asked (default false). */
  instrumental: boolean;
  source: {
    /** The source audio as stored (MP3 for our own tracks; an upload as sent, any readable audio). */
    bytes: Uint8Array;
    /** Measured duration in seconds. */
    seconds: number;
    /** The file name hint of an upload (its extension tells the demuxer), e.g. `source.mp3`. */
    name: string;
    /** The arrangement of the source when this provider made it (MusicTrack.arrangement), else null. */
    arrangement: Record<string, unknown> | null;
    /** The source's title when it is one of ours. */
    title: string | null;
  };
}

export interface MusicTrack {
  /** MP3 audio. */
  audio: Uint8Array;
  /** Cover art: PNG or JPEG bytes. */
  cover: Uint8Array;
  coverMimeType: "image/png" | "image/jpeg";
  title: string;
  /** Duration in seconds, measured from `audio`. */
  duration: number;
  /**
   * Whatever the provider needs to continue this track later (tempo, key, seed...). Stored with the job,
   * handed back on extension, never shown to the partner. Null when it has nothing to keep.
   */
  arrangement: Record<string, unknown> | null;
}

/**
 * A music service's two operations, each submitted and polled (contracts/upstream.ts). A failure (thrown by
 * `submit` or answered `failed` by `poll`) is a MusicProviderError for a known kind; any other error is
 * `provider_down`. An upstream still pending at the plugin's deadline is cancelled and ends `timeout`.
 */
export interface MusicProvider {
  /** Two variations. */
  generate: UpstreamProvider<MusicGenerationRequest, MusicTrack[]>;
  /** Two variations, each the source up to `continueAt` followed by new music. */
  extend: UpstreamProvider<MusicExtensionRequest, MusicTrack[]>;
}

export interface MusicProviders {
  /** The provider serving a model, or undefined when none is configured (503 before any charge). */
  provider(model: MusicModel): MusicProvider | undefined;
}

declare module "./index.ts" {
  interface CapabilityMap {
    "music.generate": MusicProviders;
  }
}
