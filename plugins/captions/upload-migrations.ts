// The chunked upload sessions' tables (uploads/operations.ts, uploads/records.ts). A session is one row; each stored
// part is one row naming its blob. At most 2 open sessions per account is a unique index, not a count: an
// open (or finalizing) session holds one of the account's two `open_slot`s, a finalized one holds none
// (NULLs are distinct), so two inits racing for the last slot cannot both win, on any backend.
import { defineTables, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const uploadTables = defineTables({
  captions_upload_sessions: {
    columns: {
      id: "text primary key",
      partner_id: "text not null references partners(id)",
      filename: "text not null",
      size_bytes: "bigint not null",
      part_count: "integer not null",
      partner_job_id: "text",
      style: "text not null",
      state: "text not null",
      open_slot: "smallint",
      finalize_token: "text",
      finalizing_since: "timestamptz",
      job_id: "text references jobs(id)",
      expires_at: "timestamptz not null",
      parts_expire_at: "timestamptz not null",
      created_at: "timestamptz not null default now()",
    },
    constraints: ["unique (partner_id, open_slot)"],
    indexes: { expiry: "(expires_at)" },
  },
  captions_upload_parts: {
    columns: {
      session_id: "text not null references captions_upload_sessions(id) on delete cascade",
      idx: "integer not null",
      key: "text not null",
      bytes: "integer not null",
    },
    constraints: ["primary key (session_id, idx)"],
  },
});
export type UploadTables = TablesOf<typeof uploadTables>;

export const uploadMigrations: Migration[] = [tablesMigration("captions/0101_upload_sessions", uploadTables)];
