// Media links: `$PUBLIC_URL/media/<plugin>/<key>` serves a blob. The names are unguessable capability URLs
// (DESIGN "Media links"), so no key is needed; files never change once written, so they cache forever.
// Range requests are answered for players and resumable downloads.
import type { H3 } from "h3";
import type { BlobStore } from "../../storage/blobs.ts";
import { KERNEL_ERRORS } from "../../core/errors.ts";
import { json } from "./respond.ts";

/** Content types by extension: the one table of the media types the service stores. */
export const MEDIA_TYPES: Readonly<Record<string, string>> = {
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

// Segments of our own keys: letters, digits, dot, dash, underscore; never `.` or `..` alone.
const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

function parseRange(header: string, size: number): { start: number; end: number } | "unsatisfiable" | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null; // not a single byte range: ignore it, send the whole file
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== "" && Number(m[2]) < start) return null;
  }
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

export function mountMedia(app: H3, blobs: BlobStore): void {
  const serve = async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname.slice("/media/".length);
    const segments = path.split("/").map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return "";
      }
    });
    if (segments.length < 2 || !segments.every((s) => SEGMENT.test(s))) return json(404, { error: KERNEL_ERRORS.notFound });
    const data = await blobs.get(segments.join("/"));
    if (!data) return json(404, { error: KERNEL_ERRORS.notFound });
    const ext = segments.at(-1)!.split(".").pop()!.toLowerCase();
    const headers: Record<string, string> = {
      "content-type": MEDIA_TYPES[ext] ?? "application/octet-stream",
      "accept-ranges": "bytes",
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
    };
    const head = request.method === "HEAD";
    const rangeHeader = request.headers.get("range");
    const range = rangeHeader ? parseRange(rangeHeader, data.byteLength) : null;
    if (range === "unsatisfiable") {
      return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${data.byteLength}` } });
    }
    if (range) {
      const body = data.subarray(range.start, range.end + 1);
      return new Response(head ? null : (body as Uint8Array<ArrayBuffer>), {
        status: 206,
        headers: { ...headers, "content-length": String(body.byteLength), "content-range": `bytes ${range.start}-${range.end}/${data.byteLength}` },
      });
    }
    return new Response(head ? null : (data as Uint8Array<ArrayBuffer>), { status: 200, headers: { ...headers, "content-length": String(data.byteLength) } });
  };
  app.get("/media/**", (event) => serve(event.req as Request));
  app.on("HEAD", "/media/**", (event) => serve(event.req as Request));
}
