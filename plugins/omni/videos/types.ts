// The shapes that pass between the Omni modules: what POST /omni/video's checks hand to the submit
// (input.ts -> submit.ts), and what an Omni video job keeps as its input (job.ts, ../batch, ../improve).
import type { VideoFrame } from "mediagate/plugin";
import type { OmniAspectRatio, OmniDuration, OmniModel, OmniResolution } from "../prices.ts";
import type { CharacterRecord, CharacterVoice } from "../records.ts";
import type { MeasuredReferenceVideo } from "./references.ts";

/**
 * POST /omni/video after every check of the request (schema, sizes, magic bytes, URL syntax, the callback's
 * DNS, ownership of characters and voices, the reference budget) and after the reference video was fetched
 * and measured (the job cuts its window): nothing is charged yet, nothing stored yet.
 */
export interface PreparedOmniVideo {
  prompt: string;
  model: OmniModel;
  duration: OmniDuration;
  aspectRatio: OmniAspectRatio;
  resolution: OmniResolution;
  seed: number | null;
  partnerJobId: string | null;
  callbackUrl: string | null;
  stripMetadata: boolean;
  /** As sent (omni-1.1 only); the job fetches them through the outbound guard. */
  firstFrameUrl: string | null;
  lastFrameUrl: string | null;
  /** The account's characters, in the request's order (snapshots, voices included). */
  characters: CharacterRecord[];
  /** The account's voices of `voice_ids`, in order. */
  voices: CharacterVoice[];
  /** As sent, checked by the guard's syntax rules; the job fetches them. */
  imageUrls: string[];
  /** `image_base64` decoded, each a PNG, JPEG or WebP by its magic bytes. */
  images: VideoFrame[];
  /** `video_url` as downloaded and probed, with its window; the job cuts and normalizes it. */
  referenceVideo: MeasuredReferenceVideo | null;
}

/** A stored picture the job reads back: a key in the omni blob store. */
export interface StoredImage {
  key: string;
  mime_type: string;
}

/** What an Omni video job keeps as its input (jobs.input): everything the provider needs, by value or by key. */
export interface OmniJobInput {
  model: OmniModel;
  width: number;
  height: number;
  seconds: OmniDuration;
  seed: number | null;
  strip_metadata: boolean;
  first_frame_url: string | null;
  last_frame_url: string | null;
  /** Snapshots taken at submit; the image copied under the job's private prefix (a later delete cannot break the job). */
  characters: Array<{
    id: string;
    name: string;
    description: string;
    image: StoredImage;
    voice: CharacterVoice | null;
  }>;
  voices: CharacterVoice[];
  image_urls: string[];
  images: StoredImage[];
  /**
   * With `start`/`end`: the source as downloaded, its window cut by the job (`seconds` is the window asked for
   * until then). Without them (jobs queued before the cut moved into the job): the cut window itself.
   */
  reference_video: { key: string; seconds: number; url: string; start?: number; end?: number } | null;
  /** The request's callback_url (the kernel keeps it on the job too): a repaired prompt's clip reports there as well. */
  callback_url: string | null;
}
