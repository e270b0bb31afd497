// The S3 boot check (storage/blobs.ts checkS3BlobStore) asks again when the store answers 5xx, as S3 documents
// for its InternalError and SlowDown (s3rver answered 500 to one of four hosts booting at once in a CI run);
// a store that keeps failing, or refuses for another reason, still stops the boot naming BLOB_URL.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { BlobStore } from "../../contracts/blobs.ts";
import { parseBlobUrl } from "../../storage/blob-url.ts";
import { checkS3BlobStore } from "../../storage/blobs.ts";

const t = suite("the S3 boot check");
const location = parseBlobUrl("s3://KEY:SECRET@media/hosts/?endpoint=http://127.0.0.1:9000&region=us-east-1");

/** A store in memory whose `remove` throws the driver's 5xx message `failures` times, then works. */
function storeFailingRemove(failures: number, status = "500 Internal Server Error") {
  const files = new Map<string, Uint8Array>();
  let removes = 0;
  const store = {
    put: async (key: string, bytes: Uint8Array) => void files.set(key, bytes),
    get: async (key: string) => files.get(key) ?? null,
    remove: async (key: string) => {
      removes++;
      if (removes <= failures)
        throw new Error(`[unstorage] [s3] [DELETE] http://127.0.0.1:9000/media/hosts/${key}: ${status} <Error/>`);
      files.delete(key);
    },
  } as unknown as BlobStore;
  return { store, files, removes: () => removes };
}

t("a 500 to the probe's DELETE, twice: asked again, the check passes and leaves nothing", async () => {
  const s = storeFailingRemove(2);
  await checkS3BlobStore(location, s.store);
  assert.is(s.removes(), 3);
  assert.is(s.files.size, 0);
});

t("a store that keeps answering 503, or answers 403 once, stops the boot naming BLOB_URL", async () => {
  const busy = storeFailingRemove(10, "503 Slow Down");
  const err = await checkS3BlobStore(location, busy.store).catch((e: unknown) => e as Error);
  assert.match(String(err?.message), /^BLOB_URL: cannot use .*503 Slow Down/);
  assert.is(busy.removes(), 4, "the first try and three more");
  const refused = storeFailingRemove(1, "403 Forbidden");
  const denied = await checkS3BlobStore(location, refused.store).catch((e: unknown) => e as Error);
  assert.match(String(denied?.message), /403 Forbidden/);
  assert.is(refused.removes(), 1, "a refusal is not asked again");
});

t.run();
