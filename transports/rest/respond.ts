// Response helpers for the REST transport: JSON bodies with the spec's shape (invariant 3).
import type { UploadedFile } from "../../core/plugin.ts";
import { ApiError, EdgeRejection, KERNEL_ERRORS } from "../../core/errors.ts";
import { MAX_INPUT_DEPTH } from "../../core/validation.ts";
import { concatBytes } from "../../lib/formats/bytes.ts";

const JSON_TYPE = "application/json; charset=utf-8";

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

/** Renders anything thrown; only ApiError's text reaches the partner, everything else is a fixed 500. */
export function errorResponse(err: unknown, onInternal: (err: unknown) => void, headers: Record<string, string> = {}): Response {
  if (err instanceof EdgeRejection) {
    return new Response(err.html, { status: 403, headers: { "content-type": "text/html; charset=utf-8" } });
  }
  if (err instanceof ApiError) return json(err.status, err.body(), { ...headers, ...err.headers });
  onInternal(err);
  return json(500, { error: KERNEL_ERRORS.internal }, headers);
}

/** Reads a request body up to `max` bytes; more is a 413 before anything is parsed. */
export async function readBodyCapped(request: Request, max: number, tooLarge: string): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw new ApiError(413, tooLarge);
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new ApiError(413, tooLarge);
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}

// Fatal: bytes that are not UTF-8 are not JSON (RFC 8259), rather than text with U+FFFD in their place.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Whether arrays and objects in a JSON text nest deeper than `max`, counted without parsing (strings are
 * skipped whole), so a 20,000-deep body is refused before anything builds or walks it.
 */
export function jsonNestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Jump to the closing quote: the next one not escaped by an odd run of backslashes.
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return false; // unterminated: not JSON, JSON.parse says so
        let backslashes = 0;
        while (text.charCodeAt(j - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        j++;
      }
      i = j;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * A JSON object body; an empty body is `{}`. Anything else is the spec's "Request body must be JSON"; nesting
 * deeper than MAX_INPUT_DEPTH is refused before parsing (core/validation.ts screens the parsed value too).
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  }
  if (text.trim() === "") return {};
  if (jsonNestsDeeper(text, MAX_INPUT_DEPTH)) throw new ApiError(400, KERNEL_ERRORS.tooDeep(MAX_INPUT_DEPTH));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  return value as Record<string, unknown>;
}

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
export async function readJsonBody(request: Request, max: number, tooLarge: string, unsupported: string = KERNEL_ERRORS.unsupportedContentType): Promise<Record<string, unknown>> {
  const contentType = request.headers.get("content-type");
  if (contentType === null) {
    const bytes = await readBodyCapped(request, max, tooLarge);
    if (bytes.byteLength > 0) throw new ApiError(415, unsupported);
    return {};
  }
  if (!isJsonContentType(contentType)) throw new ApiError(415, unsupported);
  return parseJsonObject(await readBodyCapped(request, max, tooLarge));
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

/**
 * A multipart/form-data body: the text field `parametersField` parsed as a JSON object (absent: `{}`), and the
 * named file parts. Other parts are ignored. A body that cannot be parsed as multipart is a 400 `malformed`;
 * a `parameters` field that is not a JSON object is the JSON-body 400.
 */
export async function parseMultipart(bytes: Uint8Array, contentType: string, parametersField: string, fileFields: readonly string[], malformed: string): Promise<{ input: Record<string, unknown>; files: Record<string, UploadedFile> }> {
  let form: FormData;
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw new ApiError(400, malformed);
  }
  const params = form.get(parametersField);
  let input: Record<string, unknown> = {};
  if (params !== null) {
    const text = typeof params === "string" ? params : await params.text();
    input = parseJsonObject(new TextEncoder().encode(text));
  }
  const files: Record<string, UploadedFile> = {};
  for (const name of fileFields) {
    const part = form.get(name);
    if (part !== null && typeof part !== "string") {
      files[name] = { filename: part.name ?? "", contentType: part.type ?? "", bytes: new Uint8Array(await part.arrayBuffer()) };
    }
  }
  return { input, files };
}
