// Tables of the video plugin. Status, charge, progress, result and error live on the kernel's `jobs` row; these
// tables add what the spec's video job and merge records need beyond it.
import { defineTables, json, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const videoTables = defineTables({
  // One row per video job: generated clips, animations, and video upscale jobs (recorded by the upscale
  // area through the `video.records` capability), so status and list serve all three.
  video_jobs: {
    columns: {
      job_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      kind: "text not null",
      prompt: "text not null default ''",
      model: "text not null",
      model_used: "text not null",
      quality: "text",
      duration: "integer not null",
      aspect_ratio: "text not null",
      start_frame_url: "text",
      end_frame_url: "text",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, job_id desc)" },
  },
  video_merges: {
    columns: {
      merge_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      job_ids: json<string[]>()("jsonb not null"),
      video_key: "text",
      duration_seconds: "double precision",
      expires_at: "timestamptz not null",
      created_at: "timestamptz not null default now()",
    },
  },
});
export type VideoTables = TablesOf<typeof videoTables>;

export const videoMigrations: Migration[] = [tablesMigration("video/0001_jobs_and_merges", videoTables)];
