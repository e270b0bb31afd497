// Tables of the social downloader. Status, error and partner_job_id live on the kernel's `jobs` row (the
// download id is the job id); what the job found (title, files, ...) is the job's `output`, written in the
// same transaction as `complete`, so a record never shows files of a half-finished attempt. This table keeps
// what is known at submit: the link, and the clock's `created_at` the rolling quota counts from.
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const socialTables = defineTables({
  social_downloads: {
    columns: {
      download_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      platform: "text not null",
      url: "text not null",
      normalized_url: "text not null",
      created_at: "timestamptz not null",
      expires_at: "timestamptz not null",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, download_id desc)" },
  },
});
export type SocialTables = TablesOf<typeof socialTables>;

export const socialMigrations: Migration[] = [tablesMigration("social/0001_downloads", socialTables)];
