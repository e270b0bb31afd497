// The table of ad analysis (records.ts says what each column holds).
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const analysisTables = defineTables({
  analyses: {
    columns: {
      job_id: "text primary key references jobs(id)",
      partner_id: "text not null references partners(id)",
      url: "text not null",
      normalized_url: "text not null",
      platform: "text not null",
      media_key: "text",
      spoken: "text",
      measurements: "text",
      transcript: "text",
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, created_at desc, job_id desc)" },
  },
});
export type AnalysisTables = TablesOf<typeof analysisTables>;

export const analysisMigrations: Migration[] = [tablesMigration("analysis/0001_analyses", analysisTables)];
