// Media links: `$PUBLIC_URL/media/<plugin>/<key>` serves a blob. The names are unguessable capability URLs
// (docs/architecture.md "Media links"), so no key is needed; which keys qualify is decided in one place,
// lib/service-media.ts (never a plugin's private files, never a name without a random token), and any other
// key answers the same 404 as a missing file. Files never change once written, so they cache forever.
// Range requests are answered for players and resumable downloads.
// A signed link (lib/signed-media.ts: `?expires=...&signature=...`) may also name a private file, and is never
// cached; an expired, forged or misplaced signature grants nothing (a private file answers the same 404).
import type { H3 } from "h3";
import type { BlobStore } from "../../contracts/blobs.ts";
import type { Clock } from "../../core/clock.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { streamedFileResponse } from "../../lib/file-response.ts";
import { isServedMediaKey, mediaPathSegments } from "../../lib/service-media.ts";
import { isSignedMediaQuery, verifyMediaKey } from "../../lib/signed-media.ts";
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

/** What verifies signed links: the secret they were signed with (UPSTREAM_CALLBACK_SECRET) and the kernel's clock. */
export interface SignedMediaCheck {
  secret: string | undefined;
  clock: Clock;
}

export function mountMedia(app: H3, blobs: BlobStore, signed?: SignedMediaCheck): void {
  const serve = async (request: Request, requestId: string): Promise<Response> => {
    const notFound = () => json(404, { error: KERNEL_ERRORS.notFound, request_id: requestId });
    const url = new URL(request.url);
    const segments = mediaPathSegments(url.pathname.slice("/media/".length));
    // A plain link stays one whatever its query says; a signed one is what grants a private file.
    const isSigned =
      signed !== undefined &&
      isSignedMediaQuery(url.searchParams) &&
      verifyMediaKey(signed.secret, segments.join("/"), url.searchParams, signed.clock.now());
    if (!isSigned && !isServedMediaKey(segments)) return notFound();
    // Read as it is sent: a video is never held whole in memory to answer a request for it.
    const file = await blobs.open(segments.join("/"));
    if (!file) return notFound();
    const ext = segments.at(-1)!.split(".").pop()!.toLowerCase();
    return streamedFileResponse(request, file, {
      "content-type": MEDIA_TYPES[ext] ?? "application/octet-stream",
      "cache-control": isSigned ? "private, no-store" : "public, max-age=31536000, immutable",
    });
  };
  app.get("/media/**", (event) => serve(event.req as Request, requestIdOf(event)));
  app.on("HEAD", "/media/**", (event) => serve(event.req as Request, requestIdOf(event)));
}
