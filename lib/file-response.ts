// Serving one stored file with byte Range support (players seek, downloads resume): the one rule for every
// place that sends a file, the public media links (transports/rest/media.ts) and plugins that serve files to
// their owner (the social downloader).

/** Inclusive byte offsets, as in an HTTP Range (also how BlobStore readers are asked for part of a file). */
export type ByteRange = { start: number; end: number };

/** A single `bytes=` range, "unsatisfiable" (416), or null when absent or not one range (whole file). */
export function parseRange(header: string, size: number): ByteRange | "unsatisfiable" | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
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

/** `attachment; filename="..."` with a plain-ASCII fallback and the exact name in `filename*`. */
export function contentDisposition(kind: "attachment" | "inline", name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return ascii === name ? `${kind}; filename="${name}"` : `${kind}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/** What to answer for a file of `size` bytes: status, headers, and the part to send (none for 416 or HEAD). */
function plan(
  request: Request,
  size: number,
  headers: Record<string, string>,
): { status: number; headers: Record<string, string>; part: ByteRange | "all" | null } {
  const base = { ...headers, "accept-ranges": "bytes", "x-content-type-options": "nosniff" };
  const header = request.headers.get("range");
  const range = header ? parseRange(header, size) : null;
  const head = request.method === "HEAD";
  if (range === "unsatisfiable")
    return { status: 416, headers: { ...base, "content-range": `bytes */${size}` }, part: null };
  if (range) {
    return {
      status: 206,
      headers: {
        ...base,
        "content-length": String(range.end - range.start + 1),
        "content-range": `bytes ${range.start}-${range.end}/${size}`,
      },
      part: head ? null : range,
    };
  }
  return { status: 200, headers: { ...base, "content-length": String(size) }, part: head ? null : "all" };
}

export function fileResponse(request: Request, data: Uint8Array, headers: Record<string, string>): Response {
  const p = plan(request, data.byteLength, headers);
  const body = p.part === null ? null : p.part === "all" ? data : data.subarray(p.part.start, p.part.end + 1);
  return new Response(body as Uint8Array<ArrayBuffer> | null, { status: p.status, headers: p.headers });
}

/** The same answer for a file read from its store as it is sent (a disk stream, an S3 ranged GET). */
export async function streamedFileResponse(
  request: Request,
  file: { size: number; read(range?: ByteRange): Promise<ReadableStream<Uint8Array>> },
  headers: Record<string, string>,
): Promise<Response> {
  const p = plan(request, file.size, headers);
  const body = p.part === null ? null : await file.read(p.part === "all" ? undefined : p.part);
  return new Response(body, { status: p.status, headers: p.headers });
}
