// Service media URLs (spec part 1: "a service image URL is read from storage"). A URL this service handed out
// (`$PUBLIC_URL/media/<plugin>/<key>`, transports/rest/media.ts) is read straight from the blob store instead
// of being fetched over the network: no round trip through our own edge, and no outbound guard refusal of
// our own host. The capability `service-media` is what plugins use.
import type { BlobStore } from "../storage/blobs.ts";

export type ServiceMedia =
  /** Not one of our media URLs: fetch it through the outbound guard like any other. */
  | { kind: "external" }
  /** One of ours, but no file is there (never was, or expired and swept): the spec's 404s. */
  | { kind: "missing" }
  | { kind: "found"; bytes: Uint8Array; plugin: string; key: string };

export interface ServiceMediaReader {
  read(url: string): Promise<ServiceMedia>;
}

const SEGMENT = /^[A-Za-z0-9._-]+$/;

export function serviceMediaReader(publicUrl: string, blobs: BlobStore): ServiceMediaReader {
  const base = new URL(publicUrl.replace(/\/+$/, "") + "/media/");
  return {
    async read(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return { kind: "external" };
      }
      if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) return { kind: "external" };
      const segments = url.pathname
        .slice(base.pathname.length)
        .split("/")
        .map((s) => {
          try {
            return decodeURIComponent(s);
          } catch {
            return "";
          }
        });
      if (segments.length < 2 || !segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..")) return { kind: "missing" };
      const bytes = await blobs.get(segments.join("/"));
      return bytes ? { kind: "found", bytes, plugin: segments[0]!, key: segments.slice(1).join("/") } : { kind: "missing" };
    },
  };
}
