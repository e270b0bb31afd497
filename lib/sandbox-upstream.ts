// The sandbox as an upstream (issue 20 item 2): every sandbox provider of generative work answers the
// submit-and-poll contract (contracts/upstream.ts) as a remote service would. `submit` records the request
// (in the sandbox's own blob folder, which /media never serves, so any process sharing the store can poll
// it) and answers at once; `poll` reports progress by the time elapsed, checks the markers once a quarter of
// SANDBOX_LATENCY_MS has passed (where the one-call sandboxes checked them, after their first step), and
// renders the media once the latency is over. So a job waiting on a sandbox holds no worker slot, and only
// the render is work.
import { createHash } from "node:crypto";
import type { BlobStore } from "../contracts/blobs.ts";
import type { UpstreamHandle, UpstreamPoll, UpstreamPollOptions, UpstreamProvider } from "../contracts/upstream.ts";
import { PRIVATE_KEY_PREFIX } from "./service-media.ts";

/** Where recorded requests are kept: a blob folder, or this process's memory (tests of a provider alone). */
export type SandboxRequestStore = Pick<BlobStore, "get" | "put" | "remove">;

export interface SandboxUpstreamOptions<Request, Result> {
  /** The provider's name (callbacks and logs): `<area>-sandbox`, a route's name appended where it has several. */
  name: string;
  latencyMs: number;
  /** The sandbox plugin's blob store (host.blobs.scoped(<plugin>)); default: memory of this process. */
  store?: SandboxRequestStore;
  /** The part of the progress bar the wait fills (the render fills the rest). Default 0.8. */
  waitShare?: number;
  /** Throws the provider's failure a marker asks for (checked a quarter of the way through the latency). */
  check?(request: Request): void;
  /** The work never finishes (a time-out marker): polls answer pending until the caller's deadline. */
  hangs?(request: Request): boolean;
  /** Makes the result once the latency is over; its errors are the upstream's failure. */
  render(request: Request, options: UpstreamPollOptions): Promise<Result>;
}

const keyOf = (id: string) => `${PRIVATE_KEY_PREFIX}upstream/${id}.bin`;

/** The submit-and-poll provider of a sandbox's work. */
export function sandboxUpstream<Request extends object, Result>(
  o: SandboxUpstreamOptions<Request, Result>,
): UpstreamProvider<Request, Result> {
  const store = o.store ?? memoryStore();
  const latency = Math.max(0, o.latencyMs);
  const quarter = latency / 4;
  const waitShare = o.waitShare ?? 0.8;
  const pending = (elapsed: number, next: number): UpstreamPoll<Result> => ({
    state: "pending",
    progress: latency === 0 ? waitShare : Math.min(1, elapsed / latency) * waitShare,
    message: "Generating",
    pollAfterMs: Math.max(1, Math.ceil(next)),
  });
  return {
    name: o.name,
    async submit(request, options) {
      // Named by the submit's idempotency key, as an upstream that takes one dedupes: a job that submits again
      // after a crash (before its handle was stored) replaces its first request instead of leaving it behind.
      const id = `sbx-${createHash("sha256").update(`${o.name}\0${options.idempotencyKey}`).digest("hex").slice(0, 32)}`;
      await store.put(keyOf(id), packRequest(await withReadBytes(request)), {
        contentType: "application/octet-stream",
      });
      return { id, pollAfterMs: Math.ceil(quarter), data: { submitted_at: Date.now() } };
    },
    async poll(handle, options) {
      const elapsed = Date.now() - Number((handle.data as { submitted_at?: number } | undefined)?.submitted_at ?? 0);
      if (elapsed < quarter) return pending(elapsed, quarter - elapsed);
      const packed = await store.get(keyOf(handle.id));
      if (!packed)
        return { state: "failed", error: new Error(`sandbox: no work ${handle.id} (cancelled or released)`) };
      const request = unpackRequest(packed) as Request;
      try {
        o.check?.(request);
      } catch (err) {
        return { state: "failed", error: err as Error };
      }
      if (o.hangs?.(request)) return pending(Math.min(elapsed, latency * 0.99), Math.max(quarter, 1000));
      if (elapsed < latency) return pending(elapsed, Math.min(latency - elapsed, quarter));
      try {
        const onProgress = (f: number, message?: string) =>
          options.onProgress(waitShare + Math.max(0, Math.min(1, f)) * (1 - waitShare), message);
        return { state: "done", result: await o.render(request, { signal: options.signal, onProgress }) };
      } catch (err) {
        if (options.signal.aborted) throw err;
        return { state: "failed", error: err as Error };
      }
    },
    async cancel(handle: UpstreamHandle) {
      await store.remove(keyOf(handle.id));
    },
    async release(handle: UpstreamHandle) {
      await store.remove(keyOf(handle.id));
    },
  };
}

function memoryStore(): SandboxRequestStore {
  const files = new Map<string, Uint8Array>();
  return {
    async get(key) {
      return files.get(key) ?? null;
    },
    async put(key, bytes) {
      files.set(key, bytes);
    },
    async remove(key) {
      files.delete(key);
    },
  };
}

/**
 * The request with every reader resolved: an object carrying `read()` (an uploaded image reference, read from
 * storage on demand) gets its `bytes`, as a remote service receives the file itself at submit. Functions are
 * not recorded, so without this the sandbox saw only the reference's id, never its picture.
 */
export async function withReadBytes<T>(value: T): Promise<T> {
  if (value instanceof Uint8Array || value instanceof Date || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return (await Promise.all(value.map((v) => withReadBytes(v)))) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SKIPPED.has(k) ? v : await withReadBytes(v);
  const read = (value as { read?: unknown }).read;
  if (typeof read === "function" && !(out.bytes instanceof Uint8Array)) {
    const bytes = await (read as () => Promise<Uint8Array | null>).call(value);
    if (bytes) out.bytes = bytes;
  }
  return out as T;
}

// A recorded request: a 4-byte length, JSON in which each byte array is `{"$bytes": [offset, length]}`, then
// the bytes. Functions (callbacks, readers) and abort signals are not part of what an upstream receives.
const SKIPPED = new Set(["signal", "onProgress"]);

export function packRequest(request: object): Uint8Array {
  const parts: Uint8Array[] = [];
  let offset = 0;
  // Walked before stringifying: JSON.stringify would first turn a Buffer into an array of one number per byte
  // (its toJSON), which for a reference clip is millions of elements.
  const plain = (value: unknown, key: string): unknown => {
    if (SKIPPED.has(key) || typeof value === "function") return undefined;
    if (value instanceof Uint8Array) {
      parts.push(value);
      offset += value.byteLength;
      return { $bytes: [offset - value.byteLength, value.byteLength] };
    }
    if (Array.isArray(value)) return value.map((v, i) => plain(v, String(i)) ?? null);
    if (value && typeof value === "object" && !(value instanceof Date)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const p = plain(v, k);
        if (p !== undefined) out[k] = p;
      }
      return out;
    }
    return value;
  };
  const head = new TextEncoder().encode(JSON.stringify(plain(request, "")));
  const out = new Uint8Array(4 + head.byteLength + offset);
  new DataView(out.buffer).setUint32(0, head.byteLength);
  out.set(head, 4);
  let at = 4 + head.byteLength;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export function unpackRequest(packed: Uint8Array): unknown {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const headLength = view.getUint32(0);
  const body = packed.subarray(4 + headLength);
  return JSON.parse(new TextDecoder().decode(packed.subarray(4, 4 + headLength)), (_key, value) =>
    // A copy (Uint8Array's slice: a Buffer's would be a view keeping the whole record alive).
    value && typeof value === "object" && Array.isArray(value.$bytes)
      ? Uint8Array.prototype.slice.call(body, value.$bytes[0], value.$bytes[0] + value.$bytes[1])
      : value,
  );
}
