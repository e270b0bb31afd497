// The blob store as its users see it: the kernel, plugins (`ctx.blobs`) and lib/ read and write files by
// key through it; storage/blobs.ts implements it on unstorage (filesystem, memory or S3-compatible).
import type { ByteRange } from "../lib/file-response.ts";

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
  /**
   * A file's size and a reader of its bytes, or null when there is none: for serving a file without holding it
   * in memory (on disk a read stream, on S3 a ranged GET).
   */
  open(key: string): Promise<BlobReader | null>;
}

export interface BlobReader {
  size: number;
  /** The bytes from `range.start` to `range.end` (inclusive), or all of them. */
  read(range?: ByteRange): Promise<ReadableStream<Uint8Array>>;
}
