// Tables of the Omni area. Characters and voices are plain library rows of an account; Omni videos are jobs
// (status, charge, refund, result and error on the kernel's `jobs` row) with one `omni_videos` record each;
// a batch is a row here whose sections are Omni video jobs charged as one group (`jobs.group_id` = batch_id).
import { defineTables, json, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const omniTables = defineTables({
  omni_voices: {
    columns: {
      voice_id: "text primary key",
      partner_id: "text not null references partners(id)",
      partner_job_id: "text",
      name: "text not null",
      base_voice: "text not null",
      description: "text not null default ''",
      example_dialogue: "text not null default ''",
      sample_key: "text not null",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, voice_id desc)" },
  },
  omni_characters: {
    columns: {
      character_id: "text primary key",
      partner_id: "text not null references partners(id)",
      partner_job_id: "text",
      name: "text not null",
      description: "text not null default ''",
      image_key: "text not null",
      image_mime: "text not null",
      voice_id: "text",
      // The voice as it was at creation (OmniVoiceSnapshot + base_voice_name), kept when the voice is deleted.
      voice: json<Record<string, unknown>>()("jsonb"),
      credits_used: "integer not null",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, character_id desc)" },
  },
  omni_batches: {
    columns: {
      batch_id: "text primary key",
      partner_id: "text not null references partners(id)",
      partner_job_id: "text",
      aspect_ratio: "text not null",
      resolution: "text not null",
      section_count: "integer not null",
      credits_used: "integer not null",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, batch_id desc)" },
  },
  omni_videos: {
    columns: {
      job_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      model: "text not null",
      prompt: "text not null",
      character_ids: json<string[]>()("jsonb not null default '[]'"),
      voice_ids: json<string[]>()("jsonb not null default '[]'"),
      first_frame_url: "text",
      last_frame_url: "text",
      duration: "integer not null",
      aspect_ratio: "text not null",
      resolution: "text not null",
      reference_video: "boolean not null default false",
      input: json<Record<string, unknown>>()("jsonb not null"),
      batch_id: "text references omni_batches(batch_id)",
      section_index: "integer",
      section_id: "text",
      section_title: "text",
      created_at: "timestamptz not null default now()",
    },
    indexes: {
      partner_newest: "(partner_id, created_at desc, job_id desc)",
      batch: "(batch_id, section_index) where batch_id is not null",
    },
  },
});
export type OmniTables = TablesOf<typeof omniTables>;

export const omniMigrations: Migration[] = [tablesMigration("omni/0001_library_videos_batches", omniTables)];
