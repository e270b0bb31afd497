// Response helpers for the REST transport: JSON bodies with the spec's shape (invariant 3).
import type { UploadedFile } from "../../core/plugin.ts";
import { ApiError, EdgeRejection, KERNEL_ERRORS } from "../../core/errors.ts";
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

/** A JSON object body; an empty body is `{}`. Anything else is the spec's "Request body must be JSON". */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  return value as Record<string, unknown>;
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
