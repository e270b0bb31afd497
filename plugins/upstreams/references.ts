// References on their way to an upstream (issue 39 item 4): uploaded reference images, first and last
// frames, character images and reference videos reach fal or Replicate as short-lived signed links to our own
// media, or, where the upstream takes one and the file is small, as a data URI (a choice per call).
//
// A linked file is stored in this plugin's blob scope under `private/refs/<128 random bits>.<ext>`: the
// private folder is never served by a plain `/media` link, so the only way in is the signed link
// (`host.signedMediaUrl`: `$PUBLIC_URL/media/upstreams/private/refs/<token>.<ext>?expires=...&signature=...`),
// which names that one file and stops working after `ttlSeconds` (an hour unless the caller says). The
// extension is the one the bytes' signature announces, so `/media` serves the right content type.
//
// Clean-up, chosen here: every file is put with a retention window (its link's expiry plus a grace period),
// so the kernel's retention sweeper removes it even when the job that made it died; and `release` deletes the
// files at once when the gateway knows the upstream is done with them (the provider's `release`, or the end
// of the job). A file released early only makes its link answer 404, which no upstream needs by then.
import { type BlobStore, type CapabilityHost, mediaToken, sniffImageType, sniffMedia } from "mediagate/plugin";

/** The plugin whose blob scope holds the files (the gateway's own name). */
const SCOPE = "upstreams";

/** What the gateway builds from its CapabilityHost (`host.blobs.scoped("upstreams")`, `host.signedMediaUrl`). */
export interface ReferenceDeps {
  /** This plugin's blob scope. */
  blobs: BlobStore;
  /** A signed link to a key of that scope (the host's `signedMediaUrl("upstreams", key, ttl)`). */
  signedUrl(key: string, ttlSeconds: number): string;
  /** Milliseconds now (the kernel's clock). */
  now(): number;
}

export interface ReferenceOptions {
  /** How long the link works; default REFERENCE_TTL_SECONDS. */
  ttlSeconds?: number;
  /** Files up to this many bytes go inline as a data URI (for upstreams that take one); 0 or absent: never. */
  dataUriMaxBytes?: number;
}

/** What the upstream's input gets: a URL to put in its JSON, and the key to release (null for a data URI). */
export interface PreparedReference {
  url: string;
  key: string | null;
}

/** An hour: upstreams fetch their inputs when the work starts, which is seconds to minutes after submit. */
export const REFERENCE_TTL_SECONDS = 3600;
/** Kept this long past the link's expiry before the sweeper removes it (a link in use when it expires). */
export const REFERENCE_GRACE_SECONDS = 600;
/** The folder of reference files in this plugin's scope (private: only signed links reach it). */
export const REFERENCE_FOLDER = "private/refs/";

/**
 * One reference as a request holds it: a frame or a normalized clip with its bytes (re-hosted even when it came
 * from a URL: the bytes are what was checked and billed), an upload read from storage, or a partner's URL,
 * passed on as given (the area already checked it; the upstream fetches it from its own network).
 */
export type ReferenceSource = { bytes: Uint8Array } | { read(): Promise<Uint8Array | null> } | { url: string };

/** An upload a request names is no longer in storage (removed since the request was accepted). */
export class ReferenceMissingError extends Error {
  constructor() {
    super("a reference file is no longer stored");
    this.name = "ReferenceMissingError";
  }
}

/** A file the upstream cannot be given: not one of the media types references are. */
export class ReferenceTypeError extends Error {
  constructor() {
    super("a reference is not an image, video or audio file");
    this.name = "ReferenceTypeError";
  }
}

/** Extensions and types of what references may be, by the bytes' signature. */
const BY_CONTAINER = {
  png: { ext: "png", type: "image/png" },
  jpeg: { ext: "jpg", type: "image/jpeg" },
  webp: { ext: "webp", type: "image/webp" },
  isobmff: { ext: "mp4", type: "video/mp4" },
  mp3: { ext: "mp3", type: "audio/mpeg" },
  wav: { ext: "wav", type: "audio/wav" },
} as const;

function kindOf(bytes: Uint8Array): (typeof BY_CONTAINER)[keyof typeof BY_CONTAINER] {
  const image = sniffImageType(bytes);
  if (image) return BY_CONTAINER[image === "image/jpeg" ? "jpeg" : image === "image/png" ? "png" : "webp"];
  const container = sniffMedia(bytes, ["isobmff", "mp3", "wav"]);
  if (container === "isobmff" || container === "mp3" || container === "wav") return BY_CONTAINER[container];
  throw new ReferenceTypeError();
}

/** The references of one job as the upstream will fetch them. */
export function referenceLinks(deps: ReferenceDeps) {
  /** Stores `bytes` (or inlines them) and answers the URL the upstream's input names. */
  async function put(bytes: Uint8Array, options: ReferenceOptions = {}): Promise<PreparedReference> {
    const kind = kindOf(bytes);
    if (options.dataUriMaxBytes && bytes.byteLength <= options.dataUriMaxBytes)
      return { url: `data:${kind.type};base64,${Buffer.from(bytes).toString("base64")}`, key: null };
    const ttl = options.ttlSeconds ?? REFERENCE_TTL_SECONDS;
    const key = `${REFERENCE_FOLDER}${mediaToken()}.${kind.ext}`;
    const expiresAt = new Date(deps.now() + (ttl + REFERENCE_GRACE_SECONDS) * 1000);
    await deps.blobs.put(key, bytes, { contentType: kind.type, expiresAt });
    return { url: deps.signedUrl(key, ttl), key };
  }
  return {
    put,
    /** `put` for a reference as a request holds it (ReferenceSource); a URL is passed on as given. */
    async prepare(source: ReferenceSource, options: ReferenceOptions = {}): Promise<PreparedReference> {
      if ("bytes" in source) return put(source.bytes, options);
      if ("read" in source) {
        const bytes = await source.read();
        if (!bytes) throw new ReferenceMissingError();
        return put(bytes, options);
      }
      return { url: source.url, key: null };
    },
    /** Deletes stored references now (best effort: the sweeper removes whatever is left). */
    async release(keys: ReadonlyArray<string | null>): Promise<void> {
      await Promise.all(
        keys.filter((k): k is string => k?.startsWith(REFERENCE_FOLDER) === true).map((k) => deps.blobs.remove(k)),
      ).catch(() => {});
    },
  };
}

export type ReferenceLinks = ReturnType<typeof referenceLinks>;

/** The deps of `referenceLinks` from the gateway's CapabilityHost: its blob scope, signed links and clock. */
export function referenceDeps(host: CapabilityHost): ReferenceDeps {
  return {
    blobs: host.blobs.scoped(SCOPE),
    signedUrl(key, ttlSeconds) {
      if (!host.signedMediaUrl) throw new Error("this host makes no signed media links");
      return host.signedMediaUrl(SCOPE, key, ttlSeconds);
    },
    now: () => host.clock.now(),
  };
}
