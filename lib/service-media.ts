// Service media: which blob keys `$PUBLIC_URL/media/<plugin>/<key>` serves (transports/rest/media.ts), and
// our own media URLs read back from storage (spec part 1: "a service image URL is read from storage").
//
// What `/media` serves (docs/architecture.md "Media links"): capability URLs, no key needed, so a name must be unguessable.
// - A plugin's files that belong behind a key (social downloads, uploaded sources that are never shown) are
//   stored under `<plugin>/private/...` (PRIVATE_KEY_PREFIX) and are never served, nor read back here:
//   they reach a partner only through their plugin's authenticated path.
// - Every other name carries its randomness as a hex run: new names 32 hex digits (mediaToken, 128 bits).
//   A key without a run of at least 24 is not served at all, so a guessable name (a job id and an index, a
//   fixed word) fails closed. 24, not 32: names written before the 128-bit rule carried 96 random bits
//   beside their job id (`svc-<8 hex>-<24 hex>`), and their links, which the API still hands out, keep
//   working; the social downloads of that time (`downloads/<job>/<idx>.mp4`) carry none and are refused.
//
// A URL this service handed out is read straight from the blob store instead of being fetched over the
// network: no round trip through our own edge, and no outbound guard refusal of our own host. It is read only
// when `/media` itself would serve it, so no plugin reads another partner's private file through its URL.
// The capability `service-media` is what plugins use.
import { randomBytes } from "node:crypto";
import type { BlobStore } from "../contracts/blobs.ts";

/** The folder, under a plugin's own prefix, of files `/media` never serves: `ctx.blobs.put(PRIVATE_KEY_PREFIX + name, ...)`. */
export const PRIVATE_KEY_PREFIX = "private/";

/** 128 random bits as 32 hex digits: the unguessable part of a name `/media` serves. */
export function mediaToken(): string {
  return randomBytes(16).toString("hex");
}

// Segments of our own keys: letters, digits, dot, dash, underscore; never `.` or `..` alone.
const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;
const TOKEN = /[0-9a-f]{24}/;

/**
 * Whether `/media` serves the full blob key `<plugin>/<...>` (already decoded, split on `/`): well-formed
 * segments, not private, and carrying a random token (see above).
 */
export function isServedMediaKey(segments: readonly string[]): boolean {
  if (segments.length < 2 || !segments.every((s) => SEGMENT.test(s))) return false;
  if (segments[1] === PRIVATE_KEY_PREFIX.slice(0, -1)) return false;
  return segments.slice(1).some((s) => TOKEN.test(s));
}

/** The key segments of a `/media/` path (what follows `/media/`), decoded; an undecodable one is empty. */
export function mediaPathSegments(path: string): string[] {
  return path.split("/").map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return "";
    }
  });
}

export type ServiceMedia =
  /** Not one of our media URLs: fetch it through the outbound guard like any other. */
  | { kind: "external" }
  /** One of ours, but no file is served there (never was, expired and swept, or private): the spec's 404s. */
  | { kind: "missing" }
  | { kind: "found"; bytes: Uint8Array; plugin: string; key: string };

export interface ServiceMediaReader {
  read(url: string): Promise<ServiceMedia>;
}

export function serviceMediaReader(publicUrl: string, blobs: BlobStore): ServiceMediaReader {
  const base = new URL(`${publicUrl.replace(/(?<!\/)\/+$/, "")}/media/`);
  return {
    async read(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return { kind: "external" };
      }
      if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) return { kind: "external" };
      const segments = mediaPathSegments(url.pathname.slice(base.pathname.length));
      if (!isServedMediaKey(segments)) return { kind: "missing" };
      const bytes = await blobs.get(segments.join("/"));
      return bytes
        ? { kind: "found", bytes, plugin: segments[0]!, key: segments.slice(1).join("/") }
        : { kind: "missing" };
    },
  };
}
