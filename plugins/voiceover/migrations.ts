// Tables of the voiceover plugin. Status, charge, refund and error live on the kernel's `jobs` row; this
// table adds what the spec's voiceover record needs beyond it, and the integer `id`.
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const voiceoverTables = defineTables({
  voiceover_records: {
    columns: {
      id: "bigserial primary key",
      job_id: "text not null unique references jobs(id)",
      partner_id: "text not null references partners(id)",
      text: "text not null",
      voice_id: "text not null",
      voice_name: "text not null",
      model_id: "text not null",
      output_format: "text not null",
      char_count: "integer not null",
      source: "text not null default ''",
      audio_key: "text",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, id desc)" },
  },
});
export type VoiceoverTables = TablesOf<typeof voiceoverTables>;

export const voiceoverMigrations: Migration[] = [tablesMigration("voiceover/0001_records", voiceoverTables)];
