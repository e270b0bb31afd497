// Tables of the social downloader. Status, error and partner_job_id live on the kernel's `jobs` row (the
// download id is the job id); what the job found (title, files, ...) is the job's `output`, written in the
// same transaction as `complete`, so a record never shows files of a half-finished attempt. This table keeps
// what is known at submit: the link, and the clock's `created_at` the rolling quota counts from.
import { type Migration } from "mediagate/plugin";

export const socialMigrations: Migration[] = [
  {
    name: "social/0001_downloads",
    statements: [
      `create table social_downloads (
        download_id text primary key references jobs(id),
        partner_id text not null references partners(id),
        platform text not null,
        url text not null,
        normalized_url text not null,
        created_at timestamptz not null,
        expires_at timestamptz not null
      )`,
      `create index social_downloads_partner_newest on social_downloads (partner_id, created_at desc, download_id desc)`,
    ],
  },
];
