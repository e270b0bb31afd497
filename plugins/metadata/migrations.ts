// Tables of the metadata plugin: one row per removal attempt (what was asked, how it ended, what was kept
// and until when), and the operator's pause switch.
import { type Migration } from "mediagate/plugin";

export const metadataMigrations: Migration[] = [
  {
    name: "metadata/0001_removals",
    statements: [
      `create table metadata_removals (
        id bigserial primary key,
        partner_id text not null references partners(id),
        request_id text not null,
        kind text not null,
        status integer not null,
        format text,
        removed jsonb not null default '[]',
        bytes_in bigint,
        bytes_out bigint,
        blob_key text,
        expires_at timestamptz,
        created_at timestamptz not null
      )`,
      `create index metadata_removals_partner_newest on metadata_removals (partner_id, id desc)`,
    ],
  },
];
