// Media links: `$PUBLIC_URL/media/<plugin>/<key>` serves a blob. The names are unguessable capability URLs
// (docs/architecture.md "Media links"), so no key is needed; which keys qualify is decided in one place,
// lib/service-media.ts (never a plugin's private files, never a name without a random token), and any other
// key answers the same 404 as a missing file. Files never change once written, so they cache forever.
// Range requests are answered for players and resumable downloads.
import type { H3 } from "h3";
import type { BlobStore } from "../../contracts/blobs.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { streamedFileResponse } from "../../lib/file-response.ts";
import { isServedMediaKey, mediaPathSegments } from "../../lib/service-media.ts";
import { requestIdOf } from "../http-conventions.ts";
import { json } from "./respond.ts";

/** Content types by extension: the one table of the media types the service stores. */
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  mp4: "video/mp4",
  mov: "video/quicktime",
  webm: "video/webm",
  mp3: "audio/mpeg",
  wav: "audio/wav",
  m4a: "audio/mp4",
  ogg: "audio/ogg",
  srt: "application/x-subrip",
  vtt: "text/vtt",
  json: "application/json",
  zip: "application/zip",
};

export function mountMedia(app: H3, blobs: BlobStore): void {
  const serve = async (request: Request, requestId: string): Promise<Response> => {
    const notFound = () => json(404, { error: KERNEL_ERRORS.notFound, request_id: requestId });
    const segments = mediaPathSegments(new URL(request.url).pathname.slice("/media/".length));
    if (!isServedMediaKey(segments)) return notFound();
    // Read as it is sent: a video is never held whole in memory to answer a request for it.
    const file = await blobs.open(segments.join("/"));
    if (!file) return notFound();
    const ext = segments.at(-1)!.split(".").pop()!.toLowerCase();
    return streamedFileResponse(request, file, {
      "content-type": MEDIA_TYPES[ext] ?? "application/octet-stream",
      "cache-control": "public, max-age=31536000, immutable",
    });
  };
  app.get("/media/**", (event) => serve(event.req as Request, requestIdOf(event)));
  app.on("HEAD", "/media/**", (event) => serve(event.req as Request, requestIdOf(event)));
}
