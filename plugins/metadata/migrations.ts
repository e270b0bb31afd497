// Tables of the metadata plugin: one row per removal attempt (what was asked, how it ended, what was kept
// and until when), and the operator's pause switch.
import { defineTables, json, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const metadataTables = defineTables({
  metadata_removals: {
    columns: {
      id: "bigserial primary key",
      partner_id: "text not null references partners(id)",
      request_id: "text not null",
      kind: "text not null",
      status: "integer not null",
      format: "text",
      removed: json<string[]>()("jsonb not null default '[]'"),
      bytes_in: "bigint",
      bytes_out: "bigint",
      blob_key: "text",
      expires_at: "timestamptz",
      created_at: "timestamptz not null",
    },
    indexes: { partner_newest: "(partner_id, id desc)" },
  },
});
export type MetadataTables = TablesOf<typeof metadataTables>;

export const metadataMigrations: Migration[] = [tablesMigration("metadata/0001_removals", metadataTables)];
