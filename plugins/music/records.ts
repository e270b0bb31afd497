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
import { formatTimestamp, type MusicErrorCode } from "mediagate/plugin";
import { FAILURE_TEXTS } from "./errors.ts";

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

const COLUMNS = [
  "m.id",
  "m.job_id",
  "m.operation",
  "m.model",
  "m.title",
  "m.instrumental",
  "m.tracks",
  "m.error_code",
  "m.idempotency_key",
  "m.request_hash",
  "m.created_at",
  "j.state",
  "j.error",
  "j.credits_used",
  "j.partner_job_id",
  "j.finished_at",
] as const;

function toRow(r: any): MusicRow {
  return {
    id: Number(r.id),
    job_id: r.job_id,
    partner_job_id: r.partner_job_id,
    state: r.state,
    operation: r.operation,
    model: r.model,
    title: r.title,
    instrumental: r.instrumental === true || r.instrumental === "t",
    tracks: JSON.parse(r.tracks) as StoredTrack[],
    error: r.error,
    error_code: r.error_code,
    credits_used: Number(r.credits_used),
    created_at: formatTimestamp(r.created_at)!,
    completed_at: r.finished_at ? formatTimestamp(r.finished_at) : null,
    idempotency_key: r.idempotency_key,
    request_hash: r.request_hash,
  };
}

export const musicQuery = (db: Kysely<any>) => db.selectFrom(`${MUSIC_TABLE} as m`).innerJoin("jobs as j", "j.id", "m.job_id").select([...COLUMNS]);

export async function findJob(db: Kysely<any>, partnerId: string, jobId: string): Promise<MusicRow | undefined> {
  const r = await musicQuery(db).where("m.job_id", "=", jobId).where("m.partner_id", "=", partnerId).executeTakeFirst();
  return r && toRow(r);
}

export async function findByIdempotencyKey(db: Kysely<any>, partnerId: string, key: string): Promise<MusicRow | undefined> {
  const r = await musicQuery(db).where("m.partner_id", "=", partnerId).where("m.idempotency_key", "=", key).executeTakeFirst();
  return r && toRow(r);
}

export async function listJobs(db: Kysely<any>, partnerId: string, limit: number, offset: number): Promise<{ rows: MusicRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    musicQuery(db).where("m.partner_id", "=", partnerId).orderBy("m.id", "desc").limit(limit).offset(offset).execute(),
    db.selectFrom(MUSIC_TABLE).select((eb: any) => eb.fn.countAll().as("n")).where("partner_id", "=", partnerId).executeTakeFirstOrThrow() as Promise<{ n: number | string }>,
  ]);
  return { rows: rows.map(toRow), total: Number(count.n) };
}

/** The public track entries; empty unless the job is complete. */
export function tracksView(row: MusicRow, mediaUrl: (key: string) => string) {
  if (row.state !== "complete") return [];
  return row.tracks.map((t) => ({ audio_url: mediaUrl(t.audio_key), image_url: mediaUrl(t.image_key), title: t.title, duration: t.duration }));
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
