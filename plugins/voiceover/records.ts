// The voiceover record: one `voiceover_records` row beside the kernel's `jobs` row (status, charge and error
// live there), read by GET /voiceovers.
import type { ColumnType, Generated, Insertable, Kysely } from "kysely";
import { formatTimestamp, type JobRecord, jobRecords } from "mediagate/plugin";
import type { VoiceoverTables } from "./migrations.ts";

export const VOICEOVER_TABLE = "voiceover_records";

/** A `voiceover_records` row (migrations.ts). */
export interface VoiceoverRecordsTable {
  id: Generated<number>;
  job_id: string;
  partner_id: string;
  text: string;
  voice_id: string;
  voice_name: string;
  model_id: string;
  output_format: string;
  char_count: number;
  source: ColumnType<string, string | undefined, string>;
  /** Set once the audio is stored. */
  audio_key: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

/** Voiceovers joined to their kernel job rows, newest first by `id`. */
export const voiceovers = jobRecords<VoiceoverRecordsTable>(VOICEOVER_TABLE, { jobId: "job_id", newestFirst: ["id"] });

type VoiceoverDb = Kysely<VoiceoverTables>;

/** Inserts a voiceover's record in its submit's transaction; its integer id. */
export async function insertVoiceover(
  db: VoiceoverDb,
  row: Insertable<VoiceoverTables["voiceover_records"]>,
): Promise<number> {
  const { id } = await db.insertInto(VOICEOVER_TABLE).values(row).returning("id").executeTakeFirstOrThrow();
  return Number(id);
}

/** Records where the audio is, once stored (a recovery then finds it: job.ts). */
export async function storeAudioKey(db: VoiceoverDb, jobId: string, key: string): Promise<void> {
  await db.updateTable(VOICEOVER_TABLE).set({ audio_key: key }).where("job_id", "=", jobId).execute();
}

/** The stored audio of a voiceover, or null while there is none. */
export async function audioKeyOf(db: VoiceoverDb, jobId: string): Promise<string | null> {
  const row = await db.selectFrom(VOICEOVER_TABLE).select("audio_key").where("job_id", "=", jobId).executeTakeFirst();
  return row?.audio_key ?? null;
}

/** One entry of GET /voiceovers: the audio link once it succeeded, the sanitized error once it failed. */
export function listView(row: JobRecord<VoiceoverRecordsTable>, mediaUrl: (key: string) => string) {
  return {
    id: Number(row.id),
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    text: row.text,
    voice_id: row.voice_id,
    voice_name: row.voice_name,
    model_id: row.model_id,
    char_count: Number(row.char_count),
    credits_used: Number(row.credits_used),
    audio_url: row.state === "success" && row.audio_key ? mediaUrl(row.audio_key) : null,
    status: row.state,
    error_message: row.state === "failed" ? row.error : null,
    source: row.source,
    created_at: formatTimestamp(row.created_at),
  };
}
