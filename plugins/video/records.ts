// The video job record: one `video_jobs` row beside the kernel's `jobs` row, read by GET /video-status,
// GET /videos and the `video.completed` / `video.failed` events alike, so the three always agree.
//
// Choices where the spec is silent, written down here:
// - A queued job answers like a processing one (`status` "queued", `progress` 0, `message`).
// - `video_url` is null until the job is complete; `duration` is the clip's length in whole seconds (gamma: 8).
// - The list also carries `progress`, `message` and `error` (non-breaking additions, versioning rule 3).
import { randomBytes } from "node:crypto";
import type { ColumnType, Kysely } from "kysely";
import type { CaptionableVideo, SpokenRecord, VideoJobRow, VideoOutput, VideoRecords } from "mediagate/plugin";
import { type BlobStore, formatTimestamp, type JobRecord, jobRecords, type PluginDb } from "mediagate/plugin";
import type { VideoTables } from "./migrations.ts";

export type { CaptionableVideo, VideoJobRow, VideoOutput, VideoRecords };

export const VIDEO_TABLE = "video_jobs";
export const MERGE_TABLE = "video_merges";

/** The plugin's tables as its migration declares them (migrations.ts): every write here is typed by them. */
type VideoDb = Kysely<VideoTables>;

export function videoRecords(blobs: BlobStore, mediaUrl: (key: string) => string): VideoRecords {
  return {
    async insert(trx, row) {
      const db: VideoDb = trx;
      await db
        .insertInto(VIDEO_TABLE)
        .values({ start_frame_url: null, end_frame_url: null, ...row })
        .execute();
    },
    async storeOutput(jobId, bytes, info) {
      // Unguessable: media links are capability URLs (docs/architecture.md "Media links"); a rerun writes a new name.
      const key = `clips/${jobId}-${randomBytes(16).toString("hex")}.mp4`; // 128 random bits: a capability URL
      await blobs.put(key, bytes, { contentType: "video/mp4" });
      return { video_key: key, video_url: mediaUrl(key), ...info };
    },
    find: (db, partnerId, jobId) => findVideo(db, blobs, partnerId, jobId),
  };
}

const reader = (blobs: BlobStore, key: string | null | undefined) => async () =>
  key ? ((await blobs.get(key)) ?? null) : null;

/** A video job (clip, animation, upscale) or else a merge of the partner's, as `video.records` find() shows it. */
async function findVideo(
  db: PluginDb,
  blobs: BlobStore,
  partnerId: string,
  jobId: string,
): Promise<CaptionableVideo | null> {
  const row = await videoJobs.find(db, partnerId, jobId);
  if (row) {
    const out = row.state === "complete" ? row.output : null;
    return {
      job_id: row.job_id,
      kind: row.kind,
      state: row.state,
      complete: out !== null,
      duration: out?.duration ?? Number(row.duration),
      width: out?.width ?? 0,
      height: out?.height ?? 0,
      read: reader(blobs, out?.video_key),
      spoken: out?.spoken ?? null,
    };
  }
  const merge = await mergeJobs.find(db, partnerId, jobId);
  if (!merge) return null;
  const out = merge.state === "complete" ? merge.output : null;
  // A merge has the first clip's picture size (merge.ts copies or scales to it); its own row does not keep it.
  const firstId = (typeof merge.job_ids === "string" ? JSON.parse(merge.job_ids) : merge.job_ids)[0] as
    | string
    | undefined;
  const first = firstId ? await videoJobs.find(db, partnerId, firstId) : undefined;
  return {
    job_id: merge.merge_id,
    kind: "merge",
    state: merge.state,
    complete: out !== null,
    duration: Number(merge.duration_seconds ?? out?.duration ?? 0),
    width: first?.output?.width ?? 0,
    height: first?.output?.height ?? 0,
    read: reader(blobs, out?.video_key),
    spoken: out?.spoken ?? null,
  };
}

/** One clip of a merge: its record, whether the file has sound, and its length in the merged file. */
export interface MergePart {
  spoken: SpokenRecord | null | undefined;
  hasAudio: boolean;
  seconds: number;
}

/**
 * What a merge speaks: the clips' records laid end to end, each shifted by the clips before it. Only when every
 * clip with sound has a record (a clip without one may hold speech nobody wrote down); otherwise null.
 */
export function mergedSpoken(parts: readonly MergePart[]): SpokenRecord | null {
  if (!parts.some((p) => p.spoken) || parts.some((p) => p.hasAudio && !p.spoken)) return null;
  let at = 0;
  const words: SpokenRecord["words"] = [];
  for (const p of parts) {
    for (const w of p.spoken?.words ?? [])
      words.push({
        ...w,
        start: Math.round((w.start + at) * 1000) / 1000,
        end: Math.round((w.end + at) * 1000) / 1000,
      });
    at += p.seconds;
  }
  return { language: parts.find((p) => p.spoken)!.spoken!.language, words };
}

/** A `video_jobs` row (migrations.ts): what `video.records` inserts, and the clock's creation time. */
export interface VideoJobsTable extends VideoJobRow {
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

/** Video jobs joined to their kernel job rows, for status, list, merge and events alike; 404s are the caller's. */
export const videoJobs = jobRecords<VideoJobsTable, VideoOutput>(VIDEO_TABLE, {
  jobId: "job_id",
  newestFirst: ["created_at", "job_id"],
});

type Joined = JobRecord<VideoJobsTable, VideoOutput>;

/** A `video_merges` row, as migrations.ts declares it. */
export type VideoMergesTable = VideoTables["video_merges"];

/** What a finished merge keeps on its `jobs.output`. */
export interface MergeOutput {
  video_key: string;
  duration: number;
  spoken?: SpokenRecord | null;
}

/** A merge's own row, written with its kernel job (POST /merge-videos charges and inserts both at once). */
export async function insertMerge(
  db: VideoDb,
  row: { merge_id: string; partner_id: string; job_ids: readonly string[]; expires_at: Date },
): Promise<void> {
  await db
    .insertInto(MERGE_TABLE)
    .values({ ...row, job_ids: JSON.stringify(row.job_ids) })
    .execute();
}

/** The merged file of a merge, once it is stored. */
export async function storeMergeFile(db: VideoDb, mergeId: string, key: string, seconds: number): Promise<void> {
  await db
    .updateTable(MERGE_TABLE)
    .set({ video_key: key, duration_seconds: seconds })
    .where("merge_id", "=", mergeId)
    .execute();
}

/** The prompt a video job was submitted with (kept on its row, not in the job's input). */
export async function jobPrompt(db: VideoDb, jobId: string): Promise<string> {
  const row = await db.selectFrom(VIDEO_TABLE).select(["prompt"]).where("job_id", "=", jobId).executeTakeFirstOrThrow();
  return row.prompt;
}

/** Merges joined to their kernel job rows (what `video.records` find() reads for a merge id). */
export const mergeJobs = jobRecords<VideoMergesTable, MergeOutput>(MERGE_TABLE, {
  jobId: "merge_id",
  newestFirst: ["created_at", "merge_id"],
});

const urlOf = (row: Joined, mediaUrl: (key: string) => string) =>
  row.state === "complete" && row.output ? mediaUrl(row.output.video_key) : null;

/** GET /video-status/<job_id>: the processing, complete and failed shapes of the spec. */
export function statusView(row: Joined, mediaUrl: (key: string) => string) {
  if (row.state === "complete") {
    const out = row.output!;
    return {
      job_id: row.job_id,
      status: "complete",
      video_url: mediaUrl(out.video_key),
      duration: out.duration,
      metadata_removed: out.metadata_removed,
    };
  }
  if (row.state === "error") return { job_id: row.job_id, status: "error", error: row.error };
  return { job_id: row.job_id, status: row.state, progress: row.progress ?? 0, message: row.message ?? "Queued" };
}

/** One entry of GET /videos, and the `data` of the video events (with `credits_refunded`). */
export function recordView(row: Joined, videoUrl: string | null) {
  const out = row.output;
  return {
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    prompt: row.prompt,
    model: row.model,
    model_used: row.model_used,
    duration: row.state === "complete" && out ? out.duration : Number(row.duration),
    aspect_ratio: row.aspect_ratio,
    credits_used: Number(row.credits_used),
    credits_refunded: Number(row.credits_refunded),
    video_url: videoUrl,
    start_frame_url: row.start_frame_url,
    end_frame_url: row.end_frame_url,
    created_at: formatTimestamp(row.created_at),
    metadata_removed: out?.metadata_removed ?? false,
    progress: row.finished_at === null ? (row.progress ?? 0) : null,
    message: row.finished_at === null ? row.message : null,
    error: row.error,
  };
}

export const listView = (row: Joined, mediaUrl: (key: string) => string) => recordView(row, urlOf(row, mediaUrl));

/** The events' `data`: the fields part 1 lists for video events, read in the transaction that ends the job. */
export async function eventData(trx: PluginDb, jobId: string): Promise<Record<string, unknown>> {
  const row = await videoJobs.inTransaction(trx, jobId);
  const view = recordView(row, row.state === "complete" && row.output ? row.output.video_url : null);
  return {
    job_id: view.job_id,
    partner_job_id: view.partner_job_id,
    status: view.status,
    model: view.model,
    duration: view.duration,
    aspect_ratio: view.aspect_ratio,
    credits_used: view.credits_used,
    credits_refunded: view.credits_refunded,
    video_url: view.video_url,
    error: view.error,
    created_at: view.created_at,
  };
}
