// The music job record: one `music_jobs` row beside the kernel's `jobs` row, read by GET /music-status and
// GET /music alike, so the two always agree.
//
// Choices where the spec is silent, written down here:
// - `title` is the custom-mode title when one was given, else the provider's title once the job completes
//   (null before); an extension without a title takes its source's.
// - A failed job whose provider gave no failure kind (a crash, a lost worker) reports `error_code`
//   `provider_down`.
// - `credits_used` is what was charged, also on a refunded failure (the refund is its own ledger row).
import type { Kysely } from "kysely";
import {
  formatTimestamp,
  type JobRecord,
  jobRecords,
  type MusicErrorCode,
  type Page,
  type PageRequest,
  type PluginDb,
} from "mediagate/plugin";
import { FAILURE_TEXTS } from "./errors.ts";
import type { MusicTables } from "./migrations.ts";

export const MUSIC_TABLE = "music_jobs";

/** A track as stored: keys, not URLs (URLs are built per response from the keys). */
export interface StoredTrack {
  audio_key: string;
  image_key: string;
  title: string;
  duration: number;
  /** The provider's own continuation data; never shown. */
  arrangement: Record<string, unknown> | null;
}

export interface MusicRow {
  id: number;
  job_id: string;
  partner_job_id: string | null;
  state: string;
  operation: string;
  model: string;
  title: string | null;
  instrumental: boolean;
  tracks: StoredTrack[];
  error: string | null;
  error_code: string | null;
  credits_used: number;
  created_at: string;
  completed_at: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
}

/** A `music_jobs` row, as migrations.ts declares it. */
export type MusicJobsTable = MusicTables["music_jobs"];

/** Music jobs joined to their kernel job rows; 404s are the caller's. */
export const musicJobs = jobRecords<MusicJobsTable>(MUSIC_TABLE, { jobId: "job_id", newestFirst: ["id"] });

function toRow(r: JobRecord<MusicJobsTable>): MusicRow {
  return {
    id: r.id,
    job_id: r.job_id,
    partner_job_id: r.partner_job_id,
    state: r.state,
    operation: r.operation,
    model: r.model,
    title: r.title,
    instrumental: r.instrumental,
    tracks: JSON.parse(r.tracks) as StoredTrack[],
    error: r.error,
    error_code: r.error_code,
    credits_used: r.credits_used,
    created_at: formatTimestamp(r.created_at)!,
    completed_at: r.finished_at ? formatTimestamp(r.finished_at) : null,
    idempotency_key: r.idempotency_key,
    request_hash: r.request_hash,
  };
}

export async function findJob(db: PluginDb, partnerId: string, jobId: string): Promise<MusicRow | undefined> {
  const r = await musicJobs.find(db, partnerId, jobId);
  return r && toRow(r);
}

export async function findByIdempotencyKey(
  db: PluginDb,
  partnerId: string,
  key: string,
): Promise<MusicRow | undefined> {
  const r = await musicJobs.findBy(db, partnerId, (q) => q.where("r.idempotency_key", "=", key));
  return r && toRow(r);
}

export async function listJobs(db: PluginDb, partnerId: string, page: PageRequest): Promise<Page<MusicRow>> {
  const { rows, total } = await musicJobs.page(db, partnerId, page);
  return { rows: rows.map(toRow), total };
}

/** The public track entries; empty unless the job is complete. */
export function tracksView(row: MusicRow, mediaUrl: (key: string) => string) {
  if (row.state !== "complete") return [];
  return row.tracks.map((t) => ({
    audio_url: mediaUrl(t.audio_key),
    image_url: mediaUrl(t.image_key),
    title: t.title,
    duration: t.duration,
  }));
}

/** What every music answer says of a job: status, the extension replay, and list entries. */
export function jobFields(row: MusicRow) {
  return {
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    operation: row.operation,
    model: row.model,
    credits_used: row.credits_used,
  };
}

/** GET /music-status: tracks when complete; sanitized error and error_code on error. */
export function statusView(row: MusicRow, mediaUrl: (key: string) => string) {
  const view: Record<string, unknown> = jobFields(row);
  if (row.state === "complete") view.tracks = tracksView(row, mediaUrl);
  if (row.state === "error") {
    const code = (row.error_code ?? "provider_down") as MusicErrorCode;
    view.error = row.error ?? FAILURE_TEXTS[code];
    view.error_code = code;
  }
  return view;
}

/** GET /music entries. Provider ids, staging URLs, local paths and idempotency keys are never in them. */
export function listView(row: MusicRow, mediaUrl: (key: string) => string) {
  return {
    ...jobFields(row),
    title: row.title,
    tracks: tracksView(row, mediaUrl),
    created_at: row.created_at,
    completed_at: row.completed_at,
  };
}

/** The finished job's tracks; the first track's title fills a title the request left out. */
export async function saveTracks(
  db: Kysely<MusicTables>,
  jobId: string,
  stored: readonly StoredTrack[],
): Promise<void> {
  const title = stored[0]?.title ?? null;
  await db
    .updateTable(MUSIC_TABLE)
    .set((eb) => ({ tracks: JSON.stringify(stored), title: eb.fn.coalesce("title", eb.val(title)) }))
    .where("job_id", "=", jobId)
    .execute();
}
