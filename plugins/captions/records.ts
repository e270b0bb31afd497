// The caption job as stored (captions_jobs joined to its first run's `jobs` row and its latest re-burn's) and
// the views the endpoints answer with (spec part 2 "Caption job").
//
// Choices where the spec is silent, written down here:
// - `status` is the first run's state, except while a re-burn runs: then the re-burn's (`pending` or
//   `processing`). A finished re-burn, good or bad, shows `complete` again (a failed one kept the output).
// - `media_pruned` is true once the captioned output's 14 days have passed (the sweeper removes it then);
//   `captioned_url` is null from then on.
// - `source_available`: an upload's source until its 2 days have passed; a generated video's while that video
//   job is complete (generated videos have no cleanup window).
// - `error` of a `no_speech` job is a fixed sentence too (CAPTION_FAILURES.noSpeech): a partner reading only
//   `error` learns why nothing was burned.
import { formatTimestamp, type PluginDb } from "mediagate/plugin";
import { LIMITS, RETENTION } from "./limits.ts";
import type { CaptionStyle, Card } from "./types.ts";

export const CAPTIONS_TABLE = "captions_jobs";

export interface CaptionRow {
  job_id: string;
  partner_id: string;
  source_kind: "video" | "upload";
  source_video_job_id: string | null;
  source_keys: string | null;
  source_bytes: number | string | null;
  source_expires_at: Date | null;
  style: string;
  media: string | null;
  transcript: string | null;
  chunks: string | null;
  chunk_count: number;
  output_key: string | null;
  output_expires_at: Date | null;
  edit_count: number;
  reburn_job_id: string | null;
  applied_reburn_job_id: string | null;
  completed_at: Date | null;
  created_at: Date;
  // From the first run's job.
  state: string;
  partner_job_id: string | null;
  credits_used: number;
  credits_refunded: number;
  error: string | null;
  finished_at: Date | null;
  progress: number | null;
  message: string | null;
  // From the latest re-burn's job, when there is one.
  reburn_state: string | null;
  reburn_finished_at: Date | null;
}

/** What a job learned about its source: kept so views and re-burns need no probe. */
export interface SourceMedia {
  width: number;
  height: number;
  fps: number;
  duration: number;
  /** The first audio stream's codec (AAC is copied into the output as it is), null when silent. */
  audio?: string | null;
}

function base(db: PluginDb) {
  return db
    .selectFrom(`${CAPTIONS_TABLE} as r`)
    .innerJoin("jobs as j", "j.id", "r.job_id")
    .leftJoin("jobs as b", "b.id", "r.reburn_job_id")
    .selectAll("r")
    .select([
      "j.state",
      "j.partner_job_id",
      "j.credits_used",
      "j.credits_refunded",
      "j.error",
      "j.finished_at",
      "j.progress",
      "j.message",
      "b.state as reburn_state",
      "b.finished_at as reburn_finished_at",
    ]);
}

export async function findCaption(db: PluginDb, partnerId: string, jobId: string): Promise<CaptionRow | undefined> {
  return (await base(db).where("r.partner_id", "=", partnerId).where("r.job_id", "=", jobId).executeTakeFirst()) as
    | CaptionRow
    | undefined;
}

export async function captionById(db: PluginDb, jobId: string): Promise<CaptionRow> {
  return (await base(db).where("r.job_id", "=", jobId).executeTakeFirstOrThrow()) as CaptionRow;
}

export async function listCaptions(
  db: PluginDb,
  partnerId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: CaptionRow[]; total: number }> {
  const rows = (await base(db)
    .where("r.partner_id", "=", partnerId)
    .orderBy("r.created_at", "desc")
    .orderBy("r.job_id", "desc")
    .limit(page.limit)
    .offset(page.offset)
    .execute()) as CaptionRow[];
  const { n } = await db
    .selectFrom(CAPTIONS_TABLE)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("partner_id", "=", partnerId)
    .executeTakeFirstOrThrow();
  return { rows, total: Number(n) };
}

/** Caption jobs of this account still at work (first runs and re-burns): what `limits.caption_jobs` caps. */
export async function activeCaptionJobs(db: PluginDb, partnerId: string): Promise<number> {
  const { n } = await db
    .selectFrom("jobs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("partner_id", "=", partnerId)
    .where("plugin", "=", "captions")
    .where("finished_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** Whether a generated video already has a caption job at work (first run or re-burn). */
export async function sourceBusy(db: PluginDb, partnerId: string, videoJobId: string): Promise<boolean> {
  const row = await db
    .selectFrom(`${CAPTIONS_TABLE} as r`)
    .innerJoin("jobs as j", "j.id", "r.job_id")
    .leftJoin("jobs as b", "b.id", "r.reburn_job_id")
    .select("r.job_id")
    .where("r.partner_id", "=", partnerId)
    .where("r.source_video_job_id", "=", videoJobId)
    .where((eb) =>
      eb.or([eb("j.finished_at", "is", null), eb.and([eb("b.id", "is not", null), eb("b.finished_at", "is", null)])]),
    )
    .executeTakeFirst();
  return Boolean(row);
}

export const reburnRunning = (row: CaptionRow) => row.reburn_job_id !== null && row.reburn_finished_at === null;

export function statusOf(row: CaptionRow): string {
  return reburnRunning(row) ? row.reburn_state! : row.state;
}

export const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));
export const styleOf = (row: CaptionRow) => JSON.parse(row.style) as CaptionStyle;
export const chunksOf = (row: CaptionRow) => parseJson<Card[]>(row.chunks) ?? [];
export const mediaOf = (row: CaptionRow) => parseJson<SourceMedia>(row.media);
export const sourceKeysOf = (row: CaptionRow) => parseJson<string[]>(row.source_keys) ?? [];

export interface ViewContext {
  now: number;
  mediaUrl(key: string): string;
  /** Whether a generated-video source is still there (the video job complete); uploads answer from their own expiry. */
  videoAvailable: boolean | null;
}

export function sourceAvailable(row: CaptionRow, v: Pick<ViewContext, "now" | "videoAvailable">): boolean {
  if (row.source_kind === "upload")
    return row.source_expires_at !== null && new Date(row.source_expires_at).getTime() > v.now;
  return v.videoAvailable === true;
}

export function outputPruned(row: CaptionRow, now: number): boolean {
  return row.output_key !== null && row.output_expires_at !== null && new Date(row.output_expires_at).getTime() <= now;
}

/** The caption job fields (spec part 2 "Caption job"). */
export function captionView(row: CaptionRow, v: ViewContext): Record<string, unknown> {
  const status = statusOf(row);
  const available = sourceAvailable(row, v);
  const pruned = outputPruned(row, v.now);
  const complete = row.state === "complete";
  return {
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    status,
    captioned_url: complete && row.output_key && !pruned ? v.mediaUrl(row.output_key) : null,
    media_pruned: pruned,
    credits_used: row.credits_used,
    credits_refunded: row.credits_refunded > 0,
    edit_count: row.edit_count,
    editable: status === "complete" && available && row.chunk_count <= LIMITS.maxInlineEditChunks,
    source_available: available,
    retention: retentionOf(row.source_kind),
    error: row.error,
    created_at: formatTimestamp(row.created_at),
    completed_at: row.completed_at
      ? formatTimestamp(row.completed_at)
      : row.finished_at
        ? formatTimestamp(row.finished_at)
        : null,
  };
}

export function retentionOf(kind: "video" | "upload") {
  return {
    captioned_output_days: RETENTION.captionedOutputDays,
    uploaded_source_days: kind === "upload" ? RETENTION.uploadedSourceDays : null,
    guaranteed: false,
  };
}
