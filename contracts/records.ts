// The records capabilities: how one area makes its jobs another area's jobs, served by that area's status and
// list endpoints, without importing it. Image upscaling makes image jobs (`images.records`, provided by the
// images plugin) and video upscaling makes video jobs (`video.records`, provided by the video plugin).
// And the `captionable.videos` collection: every area that makes videos answers for its own (captions reads
// them all, without knowing the areas).
import type { Kysely } from "kysely";
import type { SpokenRecord } from "./speech.ts";

/**
 * The database handle a plugin is given (`ctx.db`, a job's `ctx.db`, the `trx` of a submit or of a job's
 * ending), and the one a capability of these takes. Untyped, since the kernel does not know a plugin's
 * tables: a plugin passes it to its own functions typed by its tables (`Kysely<UploadTables>`), and record
 * reads through jobRecords come back typed.
 */
export type PluginDb = Kysely<any>;

/** What a finished image job keeps on its `jobs.output`; status and list build the media link from the key. */
export interface ImageOutput {
  image_key: string;
  metadata_removed: boolean;
  width: number;
  height: number;
}

export interface ImageRecordRow {
  job_id: string;
  partner_id: string;
  prompt: string;
  /** Shown as `model_used` by the list; the status shows a generation model's label, or this text as it is. */
  model: string;
  aspect_ratio: string;
  resolution: string;
  ref_image_urls?: readonly string[];
}

export interface ImageRecords {
  /** Inside the submit's transaction (JobSubmission.insertRecords): the record; resolves with its `generation_id`. */
  insert(trx: PluginDb, row: ImageRecordRow): Promise<number>;
  /** Stores a finished PNG where the image endpoints serve it from; return the result from run() as output. */
  storeOutput(jobId: string, bytes: Uint8Array, info: Omit<ImageOutput, "image_key">): Promise<ImageOutput>;
}

/** What a finished video job keeps on its `jobs.output`. */
export interface VideoOutput {
  video_key: string;
  /** Absolute, fixed when the job ended: what the event carried. Status and lists rebuild it from the key. */
  video_url: string;
  duration: number;
  metadata_removed: boolean;
  width: number;
  height: number;
  /**
   * What the provider spoke in the clip and when (GeneratedVideo.spoken): null when it did not say (an
   * upstream that does not record, an upscale), absent on jobs older than the field.
   */
  spoken?: SpokenRecord | null;
}

/**
 * One of an account's videos as another area (captions) sees it: a video, animation or upscale job, a merge,
 * an Omni video, a Script Runner run's scenes. `read()` gives the stored MP4, null once it has been pruned (or
 * before the job completed).
 */
export interface CaptionableVideo {
  job_id: string;
  /** `video`, `animation`, `upscale`, `merge`, `omni` or `script-runner`: the area's word, for logs. */
  kind: string;
  /** The job's state as its own status shows it (`queued`, `processing`, `complete`, `error`, `failed`). */
  state: string;
  complete: boolean;
  /** Seconds; whole seconds for generated clips (what their status shows), measured for merges. */
  duration: number;
  /** Pixels; 0 while a video job is not complete. */
  width: number;
  height: number;
  read(): Promise<Uint8Array | null>;
  /** The words spoken in the file and their times, when we spoke them ourselves; else null. */
  spoken: SpokenRecord | null;
}

export interface VideoJobRow {
  job_id: string;
  partner_id: string;
  kind: "video" | "animation" | "upscale";
  prompt: string;
  model: string;
  model_used: string;
  quality: string | null;
  duration: number;
  aspect_ratio: string;
  start_frame_url: string | null;
  end_frame_url: string | null;
}

/**
 * The `video.records` capability: how another area (video upscaling) makes its jobs video jobs, served by
 * this plugin's status and list endpoints, without importing this plugin.
 */
export interface VideoRecords {
  /** Inside the submit's transaction (JobSubmission.insertRecords): the job's record. */
  insert(
    trx: PluginDb,
    row: Omit<VideoJobRow, "start_frame_url" | "end_frame_url"> &
      Partial<Pick<VideoJobRow, "start_frame_url" | "end_frame_url">>,
  ): Promise<void>;
  /** Stores a finished clip where the video endpoints serve it from; return the result from run() as output. */
  storeOutput(
    jobId: string,
    bytes: Uint8Array,
    info: Omit<VideoOutput, "video_key" | "video_url">,
  ): Promise<VideoOutput>;
  /**
   * One of the partner's videos (video, animation, upscale or merge job) by job id; null when there is no
   * such job or it is another account's (the same answer for both).
   */
  find(db: PluginDb, partnerId: string, jobId: string): Promise<CaptionableVideo | null>;
}

/**
 * One contribution to the `captionable.videos` collection: an area that makes videos finds its own by job id.
 * Job ids are unique across the service, so for any id at most one contribution answers; captions asks each
 * in turn. A contribution never answers another account's video (ownership: the same null as a missing one).
 */
export interface CaptionableVideos {
  /** The partner's video of this area by job id, in any state; null when the id is not this area's or not the partner's. */
  find(db: PluginDb, partnerId: string, jobId: string): Promise<CaptionableVideo | null>;
}

declare module "./index.ts" {
  interface CapabilityMap {
    "images.records": ImageRecords;
    "video.records": VideoRecords;
  }
  interface ContributionMap {
    /** Every area's finished videos a caption job may burn captions into (POST /captions `video_job_id`). */
    "captionable.videos": CaptionableVideos;
  }
}
