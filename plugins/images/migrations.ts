// Tables of the images plugin. Status, charge, result and error live on the kernel's `jobs` row (one per
// image); this table adds what the spec's image record needs beyond it, and the integer generation_id.
import { defineTables, json, type Migration, type TablesOf, tablesMigration } from "mediagate/plugin";

export const imagesTables = defineTables({
  images_generations: {
    columns: {
      generation_id: "bigserial primary key",
      job_id: "text not null unique references jobs(id)",
      partner_id: "text not null references partners(id)",
      request_index: "integer not null",
      prompt: "text not null",
      model: "text not null",
      aspect_ratio: "text not null",
      resolution: "text not null",
      ref_image_urls: json<string[]>()("jsonb not null default '[]'"),
      created_at: "timestamptz not null default now()",
    },
    indexes: { partner_newest: "(partner_id, generation_id desc)" },
  },
});
export type ImagesTables = TablesOf<typeof imagesTables>;

export const imagesMigrations: Migration[] = [tablesMigration("images/0001_generations", imagesTables)];
