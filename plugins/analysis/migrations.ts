// The table of ad analysis (records.ts says what each column holds).
import type { Migration } from "mediagate/plugin";

export const analysisMigrations: Migration[] = [
  {
    name: "analysis/0001_analyses",
    statements: [
      `create table analyses (
        job_id text primary key references jobs(id),
        partner_id text not null references partners(id),
        url text not null,
        normalized_url text not null,
        platform text not null,
        media_key text,
        spoken text,
        measurements text,
        transcript text,
        created_at timestamptz not null default now()
      )`,
      `create index analyses_partner_newest on analyses (partner_id, created_at desc, job_id desc)`,
    ],
  },
];
