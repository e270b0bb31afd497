// The image record: one `images_generations` row beside the kernel's `jobs` row, read by GET /image-status and
// GET /images. The `images.records` capability lets another area (image upscaling) make its jobs image jobs,
// served by those endpoints, without importing this plugin.
import { randomBytes } from "node:crypto";
import type { ColumnType, Generated, Insertable, Kysely } from "kysely";
import type { ImageOutput, ImageRecordRow, ImageRecords } from "mediagate/plugin";
import { type BlobStore, jobRecords } from "mediagate/plugin";
import type { ImagesTables } from "./migrations.ts";

export type { ImageOutput, ImageRecordRow, ImageRecords };

export const IMAGES_TABLE = "images_generations";

/** An `images_generations` row (migrations.ts): what `images.records` inserts, the integer id and the creation time. */
export interface ImagesTable extends Omit<ImageRecordRow, "ref_image_urls"> {
  generation_id: Generated<number>;
  request_index: number;
  /** jsonb: written as JSON text, read back as the array. */
  ref_image_urls: ColumnType<string[], string | undefined, string>;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

/** Images joined to their kernel job rows, for status and list alike; 404s are the caller's. */
export const imageJobs = jobRecords<ImagesTable, ImageOutput>(IMAGES_TABLE, {
  jobId: "job_id",
  newestFirst: ["generation_id"],
});

/** Inserts the records of one request's image jobs; their generation_ids, in the order given. */
export async function insertGenerations(
  db: Kysely<ImagesTables>,
  rows: Insertable<ImagesTables["images_generations"]>[],
): Promise<number[]> {
  const inserted = await db.insertInto(IMAGES_TABLE).values(rows).returning("generation_id").execute();
  return inserted.map((r) => Number(r.generation_id));
}

export function imageRecords(blobs: BlobStore): ImageRecords {
  return {
    async insert(trx, row) {
      const { generation_id } = await trx
        .insertInto(IMAGES_TABLE)
        .values({ ...row, request_index: 0, ref_image_urls: JSON.stringify(row.ref_image_urls ?? []) })
        .returning("generation_id")
        .executeTakeFirstOrThrow();
      return Number(generation_id);
    },
    async storeOutput(jobId, bytes, info) {
      // Unguessable (128 random bits): media links are capability URLs (docs/architecture.md "Media links"); a rerun writes a new name.
      const key = `${jobId}-${randomBytes(16).toString("hex")}.png`;
      await blobs.put(key, bytes, { contentType: "image/png" });
      return { image_key: key, ...info };
    },
  };
}
