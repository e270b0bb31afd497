// Response helpers for the REST transport: JSON bodies with the spec's shape (invariant 3).

import { Buffer } from "node:buffer";
import { EdgeRejection, outageError } from "../../core/errors.ts";
import type { UploadedFile } from "../../core/plugin.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { concatBytes } from "../../lib/formats/bytes.ts";
import { clientClosed } from "../http-conventions.ts";
import { readJsonObject } from "./json-object.ts";

const JSON_TYPE = "application/json; charset=utf-8";

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(body);
  // The length lets the compression step pass a small answer by without reading it back (http-conventions.ts).
  return new Response(text, {
    status,
    headers: { "content-type": JSON_TYPE, "content-length": String(Buffer.byteLength(text)), ...headers },
  });
}

/**
 * Renders anything thrown; only ApiError's text reaches the partner, an outage is its 503 or 507
 * (core/errors.ts outageError), everything else is a fixed 500. The body
 * gains `request_id` (after the spec's fields: an added field, non-breaking) so a partner can quote it.
 */
export function errorResponse(
  err: unknown,
  onInternal: (err: unknown) => void,
  headers: Record<string, string> = {},
  requestId?: string,
): Response {
  const traced = requestId ? { request_id: requestId } : {};
  if (err instanceof EdgeRejection) {
    return new Response(err.html, { status: 403, headers: { "content-type": "text/html; charset=utf-8" } });
  }
  // RFC 9110: a 401 names the scheme that would work.
  if (err instanceof ApiError)
    return json(
      err.status,
      { ...err.body(), ...traced },
      {
        ...(err.status === 401 ? { "www-authenticate": 'Bearer realm="partner API"' } : {}),
        ...headers,
        ...err.headers,
      },
    );
  onInternal(err);
  // A database or Redis out of reach, or a full disk: 503 with Retry-After or 507, not the 500 of a bug.
  const outage = outageError(err);
  if (outage) return json(outage.status, { ...outage.body(), ...traced }, { ...headers, ...outage.headers });
  return json(500, { error: KERNEL_ERRORS.internal, ...traced }, headers);
}

/**
 * Reads a request body up to `max` bytes; more is a 413 (or `status`) before anything is parsed: a declared
 * Content-Length above the cap before a byte is read, a chunked body as soon as its count passes the cap.
 */
export async function readBodyCapped(
  request: Request,
  max: number,
  tooLarge: string,
  status: 400 | 413 = 413,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw new ApiError(status, tooLarge);
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  // With a declared length the bytes go straight into one buffer of that size: a large body (an upload's
  // 8 MB part) is then held once, not as its chunks and again as their concatenation.
  const length = declared !== null && /^\d+$/.test(declared.trim()) ? Number(declared) : null;
  const into = length !== null && length > 0 ? new Uint8Array(length) : null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let step: ReadableStreamReadResult<Uint8Array>;
    try {
      step = await reader.read();
    } catch (err) {
      // The stream ends in an error only when the client went away mid-body: a 499, never a 500 (http-conventions.ts).
      if (err instanceof ApiError) throw err;
      throw clientClosed();
    }
    const { done, value } = step;
    if (done) break;
    if (size + value.byteLength > max || (into && size + value.byteLength > into.byteLength)) {
      await reader.cancel().catch(() => {});
      throw new ApiError(status, tooLarge);
    }
    if (into) into.set(value, size);
    else chunks.push(value);
    size += value.byteLength;
  }
  if (into) return size === into.byteLength ? into : into.subarray(0, size);
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}

// JSON object bodies: parsed in a worker thread when large (json-object.ts); re-exported for the tests and
// callers that knew them here.
export { jsonNestsDeeper, parseJsonObject } from "./json-object.ts";

/** A JSON media type we read: `application/json`, with no charset or UTF-8 (RFC 8259: JSON is UTF-8). */
export function isJsonContentType(contentType: string | null): boolean {
  if (mediaTypeOf(contentType) !== "application/json") return false;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/**
 * The JSON object body of an operation. Only `application/json` is read; any other Content-Type is a 415
 * `unsupported` before the body is read. Choice: a body with no Content-Type at all is accepted only when it
 * is empty (`curl -X POST` sends none for an operation whose fields are all optional), as `{}`; a non-empty
 * one is the same 415, since we cannot know it was meant as JSON.
 */
export async function readJsonBody(
  request: Request,
  max: number,
  tooLarge: string,
  unsupported: string = KERNEL_ERRORS.unsupportedContentType,
  unsupportedStatus: 400 | 415 = 415,
): Promise<Record<string, unknown>> {
  const contentType = request.headers.get("content-type");
  if (contentType === null) {
    const bytes = await readBodyCapped(request, max, tooLarge);
    if (bytes.byteLength > 0) throw new ApiError(unsupportedStatus, unsupported);
    return {};
  }
  if (!isJsonContentType(contentType)) throw new ApiError(unsupportedStatus, unsupported);
  return readJsonObject(await readBodyCapped(request, max, tooLarge));
}

/** Query parameters as an object; a repeated name keeps its first value. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) if (!(k in out)) out[k] = v;
  return out;
}

/** The media type of a Content-Type header, lowercased, without parameters ("" when absent). */
export function mediaTypeOf(contentType: string | null): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

/** Which parts of a multipart form an operation reads (core/plugin.ts `multipart`). */
export interface MultipartFields {
  /** A text field holding the input as a JSON object. */
  parameters?: string;
  /** Text fields that become input properties of the same name, as the strings sent. */
  fields?: readonly string[];
  files: readonly string[];
}

/**
 * A multipart/form-data body: the text field `parameters` parsed as a JSON object (absent: `{}`), the text
 * fields of `fields` as properties of the same name (a field sent as a file is read as its text), and the
 * named file parts. Other parts are ignored. A body that cannot be parsed as multipart is a 400 `malformed`;
 * a `parameters` field that is not a JSON object is the JSON-body 400. More than MULTIPART_MAX_PARTS parts
 * is `malformed` too.
 */
export async function parseMultipart(
  bytes: Uint8Array,
  contentType: string,
  wanted: MultipartFields,
  malformed: string,
): Promise<{ input: Record<string, unknown>; files: Record<string, UploadedFile> }> {
  const parts = readMultipart(bytes, contentType);
  if (parts === null) throw new ApiError(400, malformed);
  // The first part of a name, as FormData.get answers.
  const first = (name: string) => parts.find((p) => p.name === name);
  const text = (p: MultipartPart) => new TextDecoder().decode(p.bytes);
  const params = wanted.parameters === undefined ? undefined : first(wanted.parameters);
  let input: Record<string, unknown> = {};
  if (params) input = await readJsonObject(params.bytes);
  for (const name of wanted.fields ?? []) {
    const value = first(name);
    if (value) input[name] = text(value);
  }
  const files: Record<string, UploadedFile> = {};
  for (const name of wanted.files) {
    const part = first(name);
    if (part && part.filename !== null)
      files[name] = { filename: part.filename, contentType: part.contentType, bytes: part.bytes };
  }
  return { input, files };
}

/** One part of a multipart/form-data body; `bytes` is a view into the body (nothing is copied). */
export interface MultipartPart {
  name: string;
  /** null for a text field (no `filename` parameter), else the file name sent (may be ""). */
  filename: string | null;
  contentType: string;
  bytes: Uint8Array;
}

/**
 * The most parts a multipart body may have. The most any operation reads is 3 (captions: video, style,
 * partner_job_id); a browser form may add a few of its own. 64 leaves room for any form a partner builds,
 * and keeps the reader from making an object per part of a 95 MB body of empty ones (300,000 parts stalled
 * /healthz 2.5 s).
 */
export const MULTIPART_MAX_PARTS = 64;

const CRLF = Buffer.from("\r\n");
const HEADERS_END = Buffer.from("\r\n\r\n");
const UTF8_LOOSE = new TextDecoder();

/** A parameter of a header value (`name="x"`, `name=x`), quoted-string escapes undone; null when absent. */
function headerParam(value: string, param: string): string | null {
  const re = new RegExp(`;\\s*${param}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, "i");
  const m = re.exec(value);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!;
}

/**
 * The parts of a multipart/form-data body (RFC 7578) as views into `bytes`, or null when it is not one: no
 * boundary, no opening or closing delimiter, a part without its blank line or without a
 * `Content-Disposition: form-data; name=...`. Read in place, so a 95 MB upload is held once, as the body
 * it arrived in (FormData would copy it twice more). Names and file names are UTF-8, as browsers send them.
 * A body of more than MULTIPART_MAX_PARTS parts is null as well, read no further than the one past the cap.
 */
export function readMultipart(bytes: Uint8Array, contentType: string): MultipartPart[] | null {
  const boundary = headerParam(contentType, "boundary");
  if (!boundary || boundary.length > 200) return null;
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const delimiter = Buffer.from(`--${boundary}`);
  const next = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter opens the body, at its start or after a preamble's CRLF.
  let at = body.subarray(0, delimiter.length).equals(delimiter) ? 0 : body.indexOf(next);
  if (at < 0) return null;
  at += at === 0 && body[0] === 0x2d ? delimiter.length : next.length;
  const parts: MultipartPart[] = [];
  for (;;) {
    // After a delimiter: "--" ends the body; otherwise optional padding, then CRLF and the part's headers.
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts;
    const lineEnd = body.indexOf(CRLF, at);
    if (lineEnd < 0 || body.subarray(at, lineEnd).some((c) => c !== 0x20 && c !== 0x09)) return null;
    const headersStart = lineEnd + 2;
    const headersEnd = body.indexOf(HEADERS_END, headersStart - 2);
    if (headersEnd < 0) return null;
    let name: string | null = null;
    let filename: string | null = null;
    let type = "";
    const headerText = headersEnd >= headersStart ? UTF8_LOOSE.decode(body.subarray(headersStart, headersEnd)) : "";
    for (const line of headerText.split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === "content-disposition") {
        if (!/^form-data\s*(;|$)/i.test(value)) return null;
        // The HTML form encoding writes `"`, CR and LF in names as %22, %0D and %0A (as FormData reads them).
        const unquote = (v: string | null) =>
          v === null ? null : v.replace(/%(22|0D|0A)/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
        name = unquote(headerParam(value, "name"));
        filename = unquote(headerParam(value, "filename"));
      } else if (key === "content-type") {
        type = value;
      }
    }
    if (name === null || parts.length === MULTIPART_MAX_PARTS) return null;
    const contentStart = headersEnd + 4;
    const end = body.indexOf(next, contentStart);
    if (end < 0) return null;
    parts.push({ name, filename, contentType: type, bytes: bytes.subarray(contentStart, end) });
    at = end + next.length;
  }
}
