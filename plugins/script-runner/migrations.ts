// Tables of the Script Runner. A run is one kernel job (status, charge, refunds on `jobs`, its scenes' parts
// in `job_shares`); these tables keep the run's request and each scene's progress and files.
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const runnerTables = defineTables({
  script_runs: {
    columns: {
      job_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      name: "text not null",
      model: "text not null",
      image_model: "text not null",
      use_as_character_reference: "boolean not null",
      character_source: "text not null check (character_source in ('url', 'upload', 'description'))",
      character_key: "text",
      character_mime: "text",
      character_description: "text",
      cost_per_scene: "integer not null",
      scene_count: "integer not null",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, job_id desc)" },
  },
  script_scenes: {
    columns: {
      job_id: "text not null references script_runs(job_id)",
      idx: "integer not null",
      name: "text not null",
      setting: "text not null",
      dialogue: "text not null",
      status: "text not null default 'processing' check (status in ('processing', 'complete', 'error'))",
      start_image_key: "text",
      video_key: "text",
      error: "text",
    },
    constraints: ["primary key (job_id, idx)"],
  },
});
export type RunnerTables = TablesOf<typeof runnerTables>;

export const runnerMigrations: Migration[] = [tablesMigration("script-runner/0001_runs_and_scenes", runnerTables)];
