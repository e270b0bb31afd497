// The Script Runner's reads: a run's row (beside its kernel job, which holds state, charge and refunds) and its
// scenes in order. migrations.ts declares the columns.
import type { ColumnType, Kysely } from "kysely";
import { jobRecords } from "mediagate/plugin";
import type { RunnerTables } from "./migrations.ts";

export const RUNS = "script_runs";
export const SCENES = "script_scenes";

export interface RunRow {
  job_id: string;
  partner_id: string;
  name: string;
  model: string;
  image_model: string;
  use_as_character_reference: boolean;
  character_source: "url" | "upload" | "description";
  character_key: string | null;
  character_mime: string | null;
  character_description: string | null;
  cost_per_scene: number;
  scene_count: number;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface SceneRow {
  job_id: string;
  idx: number;
  name: string;
  setting: string;
  dialogue: string;
  status: "processing" | "complete" | "error";
  start_image_key: string | null;
  video_key: string | null;
  error: string | null;
}

export const runs = jobRecords<RunRow>(RUNS, { jobId: "job_id", newestFirst: ["created_at", "job_id"] });

export async function scenesOf(db: Kysely<RunnerTables>, jobId: string): Promise<SceneRow[]> {
  return (await db
    .selectFrom(SCENES)
    .selectAll()
    .where("job_id", "=", jobId)
    .orderBy("idx", "asc")
    .execute()) as SceneRow[];
}

/** The clips of a run's complete scenes, in scene order. */
export async function completeClipKeys(db: Kysely<RunnerTables>, jobId: string): Promise<string[]> {
  const rows = await db
    .selectFrom(SCENES)
    .select("video_key")
    .where("job_id", "=", jobId)
    .where("status", "=", "complete")
    .where("video_key", "is not", null)
    .orderBy("idx", "asc")
    .execute();
  return rows.flatMap((s) => (s.video_key ? [s.video_key] : []));
}
