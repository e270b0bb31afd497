// The caption job's own table. Status, charge, refund, error and timestamps of the first run live on the
// kernel's `jobs` row (`job_id`); a re-burn is a job of its own (`reburn_job_id`, no charge), so the partner's
// one caption job is this row plus at most one running re-burn (records.ts derives the status shown).
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const captionTables = defineTables({
  captions_jobs: {
    columns: {
      job_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      source_kind: "text not null",
      source_video_job_id: "text",
      source_keys: "text",
      source_bytes: "bigint",
      source_expires_at: "timestamptz",
      style: "text not null",
      media: "text",
      transcript: "text",
      chunks: "text",
      chunk_count: "integer not null default 0",
      output_key: "text",
      output_expires_at: "timestamptz",
      edit_count: "integer not null default 0",
      reburn_job_id: "text references jobs(id)",
      applied_reburn_job_id: "text",
      completed_at: "timestamptz",
      created_at: "timestamptz not null default now()",
    },
    indexes: {
      partner_newest: "(partner_id, created_at desc, job_id desc)",
      source: "(partner_id, source_video_job_id) where source_video_job_id is not null",
    },
  },
});
export type CaptionTables = TablesOf<typeof captionTables>;

export const captionMigrations: Migration[] = [tablesMigration("captions/0001_jobs", captionTables)];
