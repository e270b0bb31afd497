// The social download record (spec part 1, "Social download record"), read by GET /social-download/<id> and
// GET /social-downloads alike from one query, so the two always agree.
//
// Choices where the spec is silent, written down here:
// - Record-level `duration_sec`, `has_audio` and `bytes` describe the whole post (sum, any, sum); `width`
//   and `height` are its first video's. Fields not known yet (pending) or never (failed) are null.
// - Files are numbered from 0, each video followed by its cover (`for_idx` = the video's idx).
// - `available` is false once the record's 7 days have passed (the retention sweeper then removes the
//   files); the record itself stays readable with `available: false`, the file path answers 410.
// - Additions (versioning rule 3): `normalized_url`, `created_at`, `expires_at` on the record;
//   `partner_job_id` and `created_at` on list entries; `total`, `limit`, `offset` on the list (convention 8).
import type { Insertable, Kysely } from "kysely";
import { formatTimestamp, type JobRecord, jobRecords, pageShape } from "mediagate/plugin";
import { z } from "zod";
import type { SocialTables } from "./migrations.ts";

export const RETENTION_DAYS = 7;
export const RETENTION_MS = RETENTION_DAYS * 24 * 3600 * 1000;
const API_BASE = "/api/v1/partner";

export interface StoredFile {
  idx: number;
  kind: "video" | "cover";
  for_idx?: number;
  key: string;
  content_type: string;
  download_name: string;
  bytes: number;
  width: number;
  height: number;
  duration_sec?: number;
  has_audio?: boolean;
}

/** What a completed download keeps on its job's `output`. */
export interface DownloadOutput {
  media_kind: "video";
  title: string;
  uploader: string;
  duration_sec: number;
  width: number;
  height: number;
  has_audio: boolean;
  bytes: number;
  files: StoredFile[];
}

export const SOCIAL_DOWNLOADS_TABLE = "social_downloads";

/** A `social_downloads` row (migrations.ts): what is known at submit. */
export type SocialDownloadsTable = SocialTables["social_downloads"];

/** Inserts a download's record in its submit's transaction. */
export async function insertDownload(db: Kysely<SocialTables>, row: Insertable<SocialDownloadsTable>): Promise<void> {
  await db.insertInto(SOCIAL_DOWNLOADS_TABLE).values(row).execute();
}

/** Downloads joined to their kernel job rows (the download id is the job id), for status, file and list alike. */
export const socialDownloads = jobRecords<SocialDownloadsTable, DownloadOutput>(SOCIAL_DOWNLOADS_TABLE, {
  jobId: "download_id",
  newestFirst: ["created_at", "download_id"],
});

export type DownloadRow = JobRecord<SocialDownloadsTable, DownloadOutput>;

export function outputOf(row: Pick<DownloadRow, "state" | "output">): DownloadOutput | null {
  return row.state === "complete" ? row.output : null;
}

export const isExpired = (row: Pick<DownloadRow, "expires_at">, now: number) =>
  new Date(row.expires_at).getTime() <= now;

export const filePath = (downloadId: string, idx: number) => `${API_BASE}/social-download/${downloadId}/file/${idx}`;

function fileView(downloadId: string, f: StoredFile, available: boolean) {
  const stream = filePath(downloadId, f.idx);
  return {
    idx: f.idx,
    kind: f.kind,
    ...(f.kind === "cover" ? { for_idx: f.for_idx } : {}),
    download_name: f.download_name,
    bytes: f.bytes,
    ...(f.kind === "video" ? { duration_sec: f.duration_sec } : {}),
    width: f.width,
    height: f.height,
    ...(f.kind === "video" ? { has_audio: f.has_audio } : {}),
    available,
    stream_url: stream,
    download_url: `${stream}?download=1`,
  };
}

export function filesView(row: DownloadRow, now: number) {
  const out = outputOf(row);
  if (!out) return [];
  const available = !isExpired(row, now);
  return out.files.map((f) => fileView(row.download_id, f, available));
}

export function recordView(row: DownloadRow, now: number) {
  const out = outputOf(row);
  return {
    download_id: row.download_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    platform: row.platform,
    normalized_url: row.normalized_url,
    media_kind: out?.media_kind ?? null,
    title: out?.title ?? null,
    uploader: out?.uploader ?? null,
    duration_sec: out?.duration_sec ?? null,
    width: out?.width ?? null,
    height: out?.height ?? null,
    has_audio: out?.has_audio ?? null,
    bytes: out?.bytes ?? 0,
    file_count: out?.files.length ?? 0,
    retention_days: RETENTION_DAYS,
    files: filesView(row, now),
    error: row.state === "failed" ? row.error : null,
    created_at: formatTimestamp(row.created_at),
    expires_at: formatTimestamp(row.expires_at),
  };
}

export function listEntryView(row: DownloadRow, now: number) {
  return {
    download_id: row.download_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    platform: row.platform,
    files: filesView(row, now),
    created_at: formatTimestamp(row.created_at),
  };
}

// Output shapes, for GraphQL and schema/openapi.json.
const FileEntry = z.object({
  idx: z.number().int(),
  kind: z.enum(["video", "cover"]),
  for_idx: z.number().int().optional(),
  download_name: z.string(),
  bytes: z.number().int(),
  duration_sec: z.number().optional(),
  width: z.number().int(),
  height: z.number().int(),
  has_audio: z.boolean().optional(),
  available: z.boolean(),
  stream_url: z.string(),
  download_url: z.string(),
});

const Status = z.enum(["pending", "complete", "failed"]);
/** The ids every download answer opens with. */
const downloadIds = { download_id: z.string(), partner_job_id: z.string().nullable() };

export const QuotaShape = z.object({
  limit: z.number().int(),
  used: z.number().int(),
  remaining: z.number().int(),
  window_hours: z.number().int(),
  resets_in_seconds: z.number().int(),
});

export const SubmitShape = z.object({
  ...downloadIds,
  status: z.literal("pending"),
  platform: z.string(),
  normalized_url: z.string(),
  retention_days: z.number().int(),
  quota: QuotaShape,
});

export const RecordShape = z.object({
  ...downloadIds,
  status: Status,
  platform: z.string(),
  normalized_url: z.string(),
  media_kind: z.string().nullable(),
  title: z.string().nullable(),
  uploader: z.string().nullable(),
  duration_sec: z.number().nullable(),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  has_audio: z.boolean().nullable(),
  bytes: z.number().int(),
  file_count: z.number().int(),
  retention_days: z.number().int(),
  files: z.array(FileEntry),
  error: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});

export const ListShape = pageShape(
  "downloads",
  z.object({
    ...downloadIds,
    status: Status,
    platform: z.string(),
    files: z.array(FileEntry),
    created_at: z.string(),
  }),
);
