// Blobs (media files) on unstorage: the filesystem under DATA_DIR by default, memory in tests, any other
// unstorage driver (S3-compatible) in production. Keys are "<plugin>/<name>"; a plugin's context only
// ever writes under its own prefix.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { AwsClient } from "aws4fetch";
import { createStorage, type Driver, defineDriver, prefixStorage, type Storage } from "unstorage";
import fsDriver from "unstorage/drivers/fs-lite";
import memoryDriver from "unstorage/drivers/memory";
import s3Driver from "unstorage/drivers/s3";
import type { BlobReader, BlobStore } from "../contracts/blobs.ts";
import { describeBlobUrl, type S3Location } from "./blob-url.ts";
import { privateDirSync, writePrivateFile } from "./private-fs.ts";

/** A reader over bytes already in memory. */
function bytesReader(data: Uint8Array): BlobReader {
  return {
    size: data.byteLength,
    read: async (range) => new Blob([range ? data.subarray(range.start, range.end + 1) : data] as BlobPart[]).stream(),
  };
}

/** Opens a file by its full key (segments joined by "/"); each store has its own. */
type Opener = (key: string) => Promise<BlobReader | null>;

// `withMeta`: unstorage keeps a driver's missing metadata as a second item (`<key>$`). On S3 that is a second
// object per file, and nothing reads it (the media route types files by their extension), so S3 skips it.
function wrap(storage: Storage, options: { withMeta: boolean; open?: Opener }, prefix = ""): BlobStore {
  const { withMeta } = options;
  const store: BlobStore = {
    async put(key, data, meta) {
      await storage.setItemRaw(key, data);
      if (withMeta && meta?.contentType) await storage.setMeta(key, { contentType: meta.contentType });
    },
    async get(key) {
      const raw = await storage.getItemRaw(key);
      if (raw === null || raw === undefined) return null;
      return raw instanceof Uint8Array ? raw : new Uint8Array(raw as ArrayBuffer);
    },
    has: (key) => storage.hasItem(key),
    // With the metadata item too: a removed file leaves nothing behind (retention sweeps, released requests).
    remove: (key) => storage.removeItem(key, { removeMeta: withMeta }),
    // unstorage spells a key's separators as `:`; our segments never contain one.
    keys: async () => (await storage.getKeys()).map((k) => k.replaceAll(":", "/")),
    scoped: (p) => wrap(prefixStorage(storage, p), options, `${prefix}${p}/`),
    open: async (key) => {
      // A key names a file by plain segments: a dot segment would climb out of the scope (a path on disk, a URL
      // on S3, both resolve it), so it names nothing.
      if (key.split("/").some((s) => s === "" || s === "." || s === "..")) return null;
      if (options.open) return await options.open(prefix + key);
      const data = await store.get(key);
      return data && bytesReader(data);
    },
  };
  return store;
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
    if (/\.\.:|\.\.$/.test(key))
      throw new Error(
        `[unstorage] [private-fs] Invalid key: ${JSON.stringify(key)}. It should not contain .. segments`,
      );
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
  return wrap(createStorage({ driver: privateFsDriver({ base }) }), {
    withMeta: true,
    open: (key) => openFile(base, key),
  });
}

async function openFile(base: string, key: string): Promise<BlobReader | null> {
  const path = join(base, key);
  let size: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) return null;
    size = st.size;
  } catch (err) {
    if ((err as { code?: string }).code === "ENOENT" || (err as { code?: string }).code === "ENOTDIR") return null;
    throw err;
  }
  return {
    size,
    read: async (range) =>
      Readable.toWeb(
        createReadStream(path, range ? { start: range.start, end: range.end } : {}),
      ) as ReadableStream<Uint8Array>,
  };
}

export function memoryBlobStore(): BlobStore {
  return wrap(createStorage({ driver: memoryDriver() }), { withMeta: true });
}

/**
 * An S3-compatible bucket (BLOB_URL, storage/blob-url.ts) through unstorage's s3 driver: what several hosts
 * share. Its listing (`keys`) reads one page of up to 1,000 objects, which is all tests and operators ask of it.
 */
export function s3BlobStore(location: S3Location): BlobStore {
  const { bucket, endpoint, region, accessKeyId, secretAccessKey } = location;
  const storage = createStorage({ driver: s3Driver({ bucket, endpoint, region, accessKeyId, secretAccessKey }) });
  const client = new AwsClient({ service: "s3", accessKeyId, secretAccessKey, region });
  // Path-style, as the driver addresses objects; our key segments are plain, encoded all the same.
  const objectUrl = (key: string) =>
    `${endpoint}/${bucket}/${(location.prefix + key).split("/").map(encodeURIComponent).join("/")}`;
  const open: Opener = async (key) => {
    const head = await client.fetch(objectUrl(key), { method: "HEAD" });
    if (head.status === 404) return null;
    if (!head.ok) throw new Error(`[s3] HEAD ${objectUrl(key)}: ${head.status}`);
    const size = Number(head.headers.get("content-length"));
    return {
      size,
      async read(range) {
        const res = await client.fetch(
          objectUrl(key),
          range ? { headers: { range: `bytes=${range.start}-${range.end}` } } : {},
        );
        if (!res.ok || !res.body) throw new Error(`[s3] GET ${objectUrl(key)}: ${res.status}`);
        if (range && res.status !== 206) {
          // A server that ignored the Range sent the whole object: the wanted part is cut from it.
          return bytesReader(new Uint8Array(await res.arrayBuffer())).read(range);
        }
        return res.body;
      },
    };
  };
  return wrap(location.prefix ? prefixStorage(storage, location.prefix.replaceAll("/", ":")) : storage, {
    withMeta: false,
    open,
  });
}

/**
 * Stops a boot whose bucket cannot be reached or written: a write and a read of one small object under the
 * prefix, so wrong credentials, a missing bucket or a read-only key show at boot, by variable, not at the first
 * job's end.
 */
/** The driver's message of an answer in 5xx (`[unstorage] [s3] [DELETE] <url>: 500 Internal Server Error ...`). */
const SERVER_ERROR_ANSWER = /: 5\d\d /;
const CHECK_RETRY_WAITS_MS = [100, 300, 900];

/**
 * S3 documents its 500 InternalError ("Please try again") and 503 SlowDown as answers to retry; a store
 * answering them to a boot check is busy, not unusable (s3rver does so when several hosts boot at once).
 */
async function againOnServerError<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      const wait = CHECK_RETRY_WAITS_MS[attempt];
      if (wait === undefined || !SERVER_ERROR_ANSWER.test(String((err as Error)?.message))) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

export async function checkS3BlobStore(location: S3Location, store: BlobStore): Promise<void> {
  // Its own name: hosts booting together each check with their own object.
  const key = `mediagate-boot-check-${crypto.randomUUID()}`;
  const bytes = new TextEncoder().encode("ok");
  try {
    await againOnServerError(() => store.put(key, bytes));
    const back = await againOnServerError(() => store.get(key));
    if (!back || back.length !== bytes.length) throw new Error("what was written did not read back");
    await againOnServerError(() => store.remove(key));
  } catch (err) {
    // The driver's messages name the request and the server's answer; neither carries the credentials.
    throw new Error(`BLOB_URL: cannot use ${describeBlobUrl(location)} (${(err as Error).message || String(err)})`);
  }
}
