// Tables of the music plugin. Status, charge, refund, error text and timestamps live on the kernel's `jobs`
// row; this table adds the music job's own fields, the integer `id`, and what extension and idempotency need.
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const musicTables = defineTables({
  music_jobs: {
    columns: {
      id: "bigserial primary key",
      job_id: "text not null unique references jobs(id)",
      partner_id: "text not null references partners(id)",
      operation: "text not null",
      model: "text not null",
      title: "text",
      instrumental: "boolean not null",
      tracks: "text not null default '[]'",
      error_code: "text",
      idempotency_key: "text",
      request_hash: "text",
      created_at: "timestamptz not null default now()",
    },
    indexes: {
      partner_newest: "(partner_id, id desc)",
      // One job per key and account, whoever wins a race (the loser's charge rolls back with its insert).
      idempotency: "unique (partner_id, idempotency_key) where idempotency_key is not null",
    },
  },
});
export type MusicTables = TablesOf<typeof musicTables>;

export const musicMigrations: Migration[] = [tablesMigration("music/0001_jobs", musicTables)];
