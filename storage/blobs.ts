// Blobs (media files) on unstorage: the filesystem under DATA_DIR by default, memory in tests, any other
// unstorage driver (S3-compatible) in production. Keys are "<plugin>/<name>"; a plugin's context only
// ever writes under its own prefix.
import { join } from "node:path";
import { createStorage, defineDriver, prefixStorage, type Driver, type Storage } from "unstorage";
import fsDriver from "unstorage/drivers/fs-lite";
import memoryDriver from "unstorage/drivers/memory";
import { privateDirSync, writePrivateFile } from "./private-fs.ts";

export interface BlobStore {
  /**
   * `expiresAt`: the file is retained until then, after which the kernel's retention sweeper removes it
   * (core/retention.ts). Without it a file is kept.
   */
  put(key: string, data: Uint8Array, meta?: { contentType?: string; expiresAt?: Date }): Promise<void>;
  get(key: string): Promise<Uint8Array | null>;
  has(key: string): Promise<boolean>;
  remove(key: string): Promise<void>;
  /** Every key in this store (`a/b/c.png`), in no particular order: for tests and operators, never a request path. */
  keys(): Promise<string[]>;
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
    // unstorage spells a key's separators as `:`; our segments never contain one.
    keys: async () => (await storage.getKeys()).map((k) => k.replaceAll(":", "/")),
    scoped: (prefix) => wrap(prefixStorage(storage, prefix)),
  };
}

/**
 * unstorage's fs-lite driver, except that what it writes is private: files 0600 and the directories made for
 * them 0700, whatever the umask (fs-lite writes with the process's default modes, 0644 and 0755 under the
 * usual umask, and takes no mode option). Reads, listing and removal are fs-lite's own.
 */
const privateFsDriver = defineDriver((options: { base: string }) => {
  const inner = fsDriver({ base: options.base }) as Driver;
  // fs-lite's own key-to-path mapping (":" separates segments), with its refusal of ".." segments.
  const path = (key: string) => {
    if (/\.\.:|\.\.$/.test(key)) throw new Error(`[unstorage] [private-fs] Invalid key: ${JSON.stringify(key)}. It should not contain .. segments`);
    return join(options.base, key.replace(/:/g, "/"));
  };
  return {
    ...inner,
    name: "private-fs",
    setItem: (key: string, value: string) => writePrivateFile(path(key), value),
    setItemRaw: (key: string, value: Uint8Array) => writePrivateFile(path(key), value),
  };
});

export function fileBlobStore(dataDir: string): BlobStore {
  const base = join(dataDir, "blobs");
  // Made (and an existing one narrowed to 0700) now, so blobs written by an older version, 0644, are out of
  // other users' reach too.
  privateDirSync(dataDir);
  privateDirSync(base, { tighten: true });
  return wrap(createStorage({ driver: privateFsDriver({ base }) }));
}

export function memoryBlobStore(): BlobStore {
  return wrap(createStorage({ driver: memoryDriver() }));
}
