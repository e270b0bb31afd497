// Response helpers for the REST transport: JSON bodies with the spec's shape (invariant 3).
import { ApiError, EdgeRejection, KERNEL_ERRORS } from "../../core/errors.ts";

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
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
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
