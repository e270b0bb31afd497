// Blobs (media files) on unstorage: the filesystem under DATA_DIR by default, memory in tests, any other
// unstorage driver (S3-compatible) in production. Keys are "<plugin>/<name>"; a plugin's context only
// ever writes under its own prefix.
import { join } from "node:path";
import { createStorage, prefixStorage, type Storage } from "unstorage";
import fsDriver from "unstorage/drivers/fs-lite";
import memoryDriver from "unstorage/drivers/memory";

export interface BlobStore {
  /**
   * `expiresAt`: the file is retained until then, after which the kernel's retention sweeper removes it
   * (core/retention.ts). Without it a file is kept.
   */
  put(key: string, data: Uint8Array, meta?: { contentType?: string; expiresAt?: Date }): Promise<void>;
  get(key: string): Promise<Uint8Array | null>;
  has(key: string): Promise<boolean>;
  remove(key: string): Promise<void>;
  /** A store whose keys are all under `prefix/`. */
  scoped(prefix: string): BlobStore;
}

function wrap(storage: Storage): BlobStore {
  return {
    async put(key, data, meta) {
      await storage.setItemRaw(key, data);
      if (meta?.contentType) await storage.setMeta(key, { contentType: meta.contentType });
    },
    async get(key) {
      const raw = await storage.getItemRaw(key);
      if (raw === null || raw === undefined) return null;
      return raw instanceof Uint8Array ? raw : new Uint8Array(raw as ArrayBuffer);
    },
    has: (key) => storage.hasItem(key),
    remove: (key) => storage.removeItem(key),
    scoped: (prefix) => wrap(prefixStorage(storage, prefix)),
  };
}

export function fileBlobStore(dataDir: string): BlobStore {
  return wrap(createStorage({ driver: fsDriver({ base: join(dataDir, "blobs") }) }));
}

export function memoryBlobStore(): BlobStore {
  return wrap(createStorage({ driver: memoryDriver() }));
}
