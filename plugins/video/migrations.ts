// Tables of the video plugin. Status, charge, progress, result and error live on the kernel's `jobs` row; these
// tables add what the spec's video job and merge records need beyond it.
import { type Migration } from "mediagate/plugin";

export const videoMigrations: Migration[] = [
  {
    name: "video/0001_jobs_and_merges",
    statements: [
      // One row per video job: generated clips, animations, and video upscale jobs (recorded by the upscale
      // area through the `video.records` capability), so status and list serve all three.
      `create table video_jobs (
        job_id text primary key references jobs(id),
        partner_id text not null references partners(id),
        kind text not null,
        prompt text not null default '',
        model text not null,
        model_used text not null,
        quality text,
        duration integer not null,
        aspect_ratio text not null,
        start_frame_url text,
        end_frame_url text,
        created_at timestamptz not null default now()
      )`,
      `create index video_jobs_partner_newest on video_jobs (partner_id, created_at desc, job_id desc)`,
      `create table video_merges (
        merge_id text primary key references jobs(id),
        partner_id text not null references partners(id),
        job_ids jsonb not null,
        video_key text,
        duration_seconds double precision,
        expires_at timestamptz not null,
        created_at timestamptz not null default now()
      )`,
    ],
  },
];
