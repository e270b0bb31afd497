// Serving one stored file with byte Range support (players seek, downloads resume): the one rule for every
// place that sends a file, the public media links (transports/rest/media.ts) and plugins that serve files to
// their owner (the social downloader).

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

export function fileResponse(request: Request, data: Uint8Array, headers: Record<string, string>): Response {
  const base = { ...headers, "accept-ranges": "bytes", "x-content-type-options": "nosniff" };
  const header = request.headers.get("range");
  const range = header ? parseRange(header, data.byteLength) : null;
  const head = request.method === "HEAD";
  if (range === "unsatisfiable") return new Response(null, { status: 416, headers: { ...base, "content-range": `bytes */${data.byteLength}` } });
  if (range) {
    const body = data.subarray(range.start, range.end + 1);
    return new Response(head ? null : (body as Uint8Array<ArrayBuffer>), {
      status: 206,
      headers: { ...base, "content-length": String(body.byteLength), "content-range": `bytes ${range.start}-${range.end}/${data.byteLength}` },
    });
  }
  return new Response(head ? null : (data as Uint8Array<ArrayBuffer>), { status: 200, headers: { ...base, "content-length": String(data.byteLength) } });
}
