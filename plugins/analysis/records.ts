// The analysis record: one row per analysis beside its kernel job (state, charge, refund, message and output
// live on `jobs`). The row keeps the request and what each stage produced, so a retry after a crash goes on
// from the last stage that finished instead of starting over.
import type { ColumnType, Insertable, Kysely, Selectable } from "kysely";
import {
  type AdAnalysisTexts,
  formatTimestamp,
  type JobRecord,
  jobRecords,
  type Platform,
  type SpokenRecord,
  type TimedWord,
} from "mediagate/plugin";
import { STAGE_MESSAGES } from "./errors.ts";
import type { AdMeasurements } from "./measure.ts";
import type { AnalysisTables } from "./migrations.ts";

export const ANALYSES = "analyses";

export interface AnalysisRow {
  job_id: string;
  partner_id: string;
  /** As sent (trimmed), and as the host rules normalized it (what is downloaded). */
  url: string;
  normalized_url: string;
  platform: Platform;
  /** The downloaded ad (a private blob), once the download stage finished; removed when the job ends well. */
  media_key: string | null;
  /** JSON: SpokenRecord of the ad when the extractor spoke it itself (the sandbox); null otherwise. */
  spoken: string | null;
  /** JSON: AdMeasurements, once the frames stage finished. */
  measurements: string | null;
  /** JSON: { language, words: TimedWord[] }, once the transcribing stage finished. */
  transcript: string | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

/** What a finished job keeps as its output. */
export type AnalysisOutput = { result: AdAnalysisTexts };

export const analyses = jobRecords<AnalysisRow, AnalysisOutput>(ANALYSES, {
  jobId: "job_id",
  newestFirst: ["created_at", "job_id"],
});

export type AnalysisRecord = JobRecord<AnalysisRow, AnalysisOutput>;

/** An analysis row as it is read. */
export type StoredAnalysis = Selectable<AnalysisRow>;

/** The plugin's database, typed by its migration's table declarations. */
type AnalysisDb = Kysely<AnalysisTables>;

/** A new analysis row, written in the charge's transaction. */
export async function insertAnalysis(db: AnalysisDb, row: Insertable<AnalysisTables["analyses"]>): Promise<void> {
  await db.insertInto(ANALYSES).values(row).execute();
}

/** The analysis of a job, as its runner reads it on every attempt. */
export async function analysisOf(db: AnalysisDb, jobId: string): Promise<StoredAnalysis> {
  return (await db
    .selectFrom(ANALYSES)
    .selectAll()
    .where("job_id", "=", jobId)
    .executeTakeFirstOrThrow()) as StoredAnalysis;
}

/** Keeps what a stage produced, so a retry goes on from there. */
export async function saveAnalysis(
  db: AnalysisDb,
  jobId: string,
  values: Partial<Pick<AnalysisRow, "media_key" | "spoken" | "measurements" | "transcript">>,
): Promise<void> {
  await db.updateTable(ANALYSES).set(values).where("job_id", "=", jobId).execute();
}

export const parsed = {
  spoken: (row: Pick<AnalysisRow, "spoken">): SpokenRecord | null =>
    row.spoken ? (JSON.parse(row.spoken) as SpokenRecord) : null,
  measurements: (row: Pick<AnalysisRow, "measurements">): AdMeasurements | null =>
    row.measurements ? (JSON.parse(row.measurements) as AdMeasurements) : null,
  transcript: (row: Pick<AnalysisRow, "transcript">): { language: string; words: TimedWord[] } | null =>
    row.transcript ? JSON.parse(row.transcript) : null,
};

/** GET /status/<job_id>: per state. The error shape is ours (the spec shows none): `message` and `error` alike. */
export function statusView(r: AnalysisRecord): Record<string, unknown> {
  if (r.state === "complete") return { job_id: r.job_id, status: "complete", result: r.output?.result ?? null };
  if (r.state === "error") return { job_id: r.job_id, status: "error", message: r.error, error: r.error };
  return {
    job_id: r.job_id,
    status: r.state,
    message: r.message ?? STAGE_MESSAGES[r.state as keyof typeof STAGE_MESSAGES] ?? "",
  };
}

/** An analysis record (GET /analyses): `result` is null until the analysis is complete. */
export function recordView(r: AnalysisRecord): Record<string, unknown> {
  return {
    job_id: r.job_id,
    partner_job_id: r.partner_job_id,
    status: r.state,
    credits_used: r.credits_used,
    created_at: formatTimestamp(r.created_at),
    result: r.state === "complete" ? (r.output?.result ?? null) : null,
  };
}
