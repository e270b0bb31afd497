// The image record: one `images_generations` row beside the kernel's `jobs` row, read by GET /image-status and
// GET /images. The `images.records` capability lets another area (image upscaling) make its jobs image jobs,
// served by those endpoints, without importing this plugin.
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { BlobStore } from "../../storage/blobs.ts";

export const IMAGES_TABLE = "images_generations";

/** What a finished image job keeps on its `jobs.output`; status and list build the media link from the key. */
export interface ImageOutput {
  image_key: string;
  metadata_removed: boolean;
  width: number;
  height: number;
}

export interface ImageRecordRow {
  job_id: string;
  partner_id: string;
  prompt: string;
  /** Shown as `model_used` by the list; the status shows a generation model's label, or this text as it is. */
  model: string;
  aspect_ratio: string;
  resolution: string;
  ref_image_urls?: readonly string[];
}

export interface ImageRecords {
  /** Inside the submit's transaction (JobSubmission.within): the record; resolves with its `generation_id`. */
  insert(trx: Kysely<any>, row: ImageRecordRow): Promise<number>;
  /** Stores a finished PNG where the image endpoints serve it from; return the result from run() as output. */
  storeOutput(jobId: string, bytes: Uint8Array, info: Omit<ImageOutput, "image_key">): Promise<ImageOutput>;
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
      // Unguessable: media links are capability URLs (DESIGN "Media links"); a rerun writes a new name.
      const key = `${jobId}-${randomBytes(12).toString("hex")}.png`;
      await blobs.put(key, bytes, { contentType: "image/png" });
      return { image_key: key, ...info };
    },
  };
}
