// The Omni tables as types, and the reads that more than one module needs: the account's voices and
// characters as snapshots (characters/, videos/, batch/), Omni video records joined to their jobs
// (status, list, events, batches, prompt repair). Another account's rows never come back (invariant 4): a
// foreign id reads exactly like a missing one.
import type { ColumnType, Insertable, Kysely, Selectable } from "kysely";
import {
  formatTimestamp,
  type JobRecord,
  jobRecords,
  type OmniVoiceSnapshot,
  type SpokenRecord,
} from "mediagate/plugin";
import type { OmniTables } from "./migrations.ts";
import { presetById } from "./voices/presets.ts";

/** The database as these reads see it: the Omni tables as migrations.ts declares them. */
type OmniDb = Kysely<OmniTables>;

export const VOICES_TABLE = "omni_voices" as const;
export const CHARACTERS_TABLE = "omni_characters" as const;
export const VIDEOS_TABLE = "omni_videos";
export const BATCHES_TABLE = "omni_batches";

type Created = ColumnType<Date, Date | string | undefined, never>;

export interface VoiceRow {
  voice_id: string;
  partner_id: string;
  partner_job_id: string | null;
  name: string;
  base_voice: string;
  description: string;
  example_dialogue: string;
  sample_key: string;
  created_at: Created;
}

/** A voice as kept on a character: the snapshot the provider speaks with, plus the preset's display name. */
export interface CharacterVoice extends OmniVoiceSnapshot {
  base_voice_name: string;
}

export interface CharacterRow {
  character_id: string;
  partner_id: string;
  partner_job_id: string | null;
  name: string;
  description: string;
  image_key: string;
  image_mime: string;
  voice_id: string | null;
  voice: ColumnType<CharacterVoice | null, string | null, string | null>;
  credits_used: number;
  created_at: Created;
}

export interface BatchRow {
  batch_id: string;
  partner_id: string;
  partner_job_id: string | null;
  aspect_ratio: string;
  resolution: string;
  section_count: number;
  credits_used: number;
  created_at: Created;
}

export interface OmniVideoRow {
  job_id: string;
  partner_id: string;
  model: string;
  prompt: string;
  character_ids: ColumnType<string[], string, string>;
  voice_ids: ColumnType<string[], string, string>;
  first_frame_url: string | null;
  last_frame_url: string | null;
  duration: number;
  aspect_ratio: string;
  resolution: string;
  reference_video: boolean;
  /** The job's input (OmniJobInput), for prompt repair. */
  input: ColumnType<unknown, string, string>;
  batch_id: string | null;
  section_index: number | null;
  section_id: string | null;
  section_title: string | null;
  created_at: Created;
}

/** What a finished Omni video job keeps on `jobs.output`. */
export interface OmniVideoOutput {
  video_key: string;
  /** The media link as the job made it (event data, built where no link function is at hand, reads it). */
  video_url: string;
  /** Whole seconds, measured from the stored file. */
  duration: number;
  width: number;
  height: number;
  /** Computed from the stored bytes (no C2PA, XMP or tags left), not copied from the request. */
  metadata_removed: boolean;
  /** The words the clip speaks and their times (the sandbox records them), for captions. */
  spoken: SpokenRecord | null;
}

export type OmniVideoRecord = JobRecord<OmniVideoRow, OmniVideoOutput>;

export const omniVideos = jobRecords<OmniVideoRow, OmniVideoOutput>(VIDEOS_TABLE, {
  jobId: "job_id",
  newestFirst: ["created_at", "job_id"],
});

/** `voice_id` as a snapshot: the voice row and its preset's name. */
export function voiceSnapshot(row: Pick<VoiceRow, "voice_id" | "name" | "base_voice" | "description">): CharacterVoice {
  return {
    id: row.voice_id,
    name: row.name,
    base_voice: row.base_voice,
    base_voice_name: presetById(row.base_voice)?.name ?? row.base_voice,
    description: row.description,
  };
}

/** The tables of an account's own rows found by id, and their id columns. */
const OWN_ROWS = { [VOICES_TABLE]: "voice_id", [CHARACTERS_TABLE]: "character_id" } as const;
type OwnTable = keyof typeof OWN_ROWS;

/**
 * The partner's rows of `ids` in `table`, in the order asked (a repeated id answers the same row again), each
 * as `view` makes it, or null when one of them is missing or another account's.
 */
async function ownInAskedOrder<K extends OwnTable, T>(
  db: OmniDb,
  table: K,
  partnerId: string,
  ids: readonly string[],
  view: (row: Selectable<OmniTables[K]>) => T,
): Promise<T[] | null> {
  if (ids.length === 0) return [];
  const idColumn = OWN_ROWS[table];
  const rows = (await db
    .selectFrom(table as OwnTable)
    .selectAll()
    .where("partner_id", "=", partnerId)
    .where(db.dynamic.ref(idColumn), "in", [...new Set(ids)])
    .execute()) as Array<Selectable<OmniTables[K]>>;
  const byId = new Map(rows.map((r) => [(r as Record<string, unknown>)[idColumn] as string, view(r)]));
  const found = ids.map((id) => byId.get(id));
  return found.every((v) => v !== undefined) ? (found as T[]) : null;
}

/** The partner's voices of `ids` as snapshots (ownInAskedOrder). */
export const findVoices = (db: OmniDb, partnerId: string, ids: readonly string[]): Promise<CharacterVoice[] | null> =>
  ownInAskedOrder(db, VOICES_TABLE, partnerId, ids, voiceSnapshot);

export type CharacterRecord = Omit<CharacterRow, "voice" | "created_at"> & {
  voice: CharacterVoice | null;
  created_at: Date;
};

const parsed = <T>(v: unknown): T => (typeof v === "string" ? (JSON.parse(v) as T) : (v as T));

/** A new character's row, written with its charge (POST /omni/characters); its voice kept as a snapshot. */
export async function insertCharacter(
  db: OmniDb,
  row: Omit<Insertable<OmniTables[typeof CHARACTERS_TABLE]>, "voice"> & { voice: CharacterVoice | null },
): Promise<void> {
  await db
    .insertInto(CHARACTERS_TABLE)
    .values({ ...row, voice: row.voice ? JSON.stringify(row.voice) : null })
    .execute();
}

/** The partner's characters of `ids`, their voice snapshots parsed (ownInAskedOrder). */
export const findCharacters = (
  db: OmniDb,
  partnerId: string,
  ids: readonly string[],
): Promise<CharacterRecord[] | null> =>
  ownInAskedOrder(db, CHARACTERS_TABLE, partnerId, ids, (r) => ({
    ...r,
    voice: parsed<CharacterVoice | null>(r.voice),
  }));

/** The spec's timestamp text of a stored time. */
export const timestamp = (d: Date | string) => formatTimestamp(d)!;
