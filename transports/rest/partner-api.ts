// The partner API under /api/v1/partner, derived from the registry: each compiled operation (core/operations.ts)
// gets a route; this file only reads the HTTP request and renders the outcome. Nothing here knows a plugin.
import { createHash } from "node:crypto";
import type { H3, HTTPResponse } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import type { Invoke } from "../../core/operations.ts";
import type { UploadedFile } from "../../core/plugin.ts";
import type { CompiledOperation } from "../../core/registry.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { requestIdOf, TextAnswer, takeStagedHeaders } from "../http-conventions.ts";
import {
  errorResponse,
  isJsonContentType,
  mediaTypeOf,
  parseMultipart,
  queryObject,
  readBodyCapped,
  readJsonBody,
} from "./respond.ts";

export const PARTNER_BASE = "/api/v1/partner";
const DEFAULT_MAX_BODY = 1_000_000;
const JSON_TYPE = "application/json; charset=utf-8";

/**
 * A GET's body text and its validator, from one serialization: the validator hashes the body without its
 * `request_id` (new on every call), so an unchanged status or list answers 304 to a client that sends it back
 * in If-None-Match; the text is the same JSON with `request_id` put back first.
 */
function withEtag(body: Record<string, unknown>): { text: string; etag: string } {
  const { request_id, ...rest } = body;
  const restText = JSON.stringify(rest);
  const etag = `W/"${createHash("sha256").update(restText).digest("base64url").slice(0, 27)}"`;
  if (typeof request_id !== "string") return { text: JSON.stringify(body), etag };
  return {
    text: `{"request_id":${JSON.stringify(request_id)}${restText === "{}" ? "}" : `,${restText.slice(1)}`}`,
    etag,
  };
}

function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === "*");
}

function route(kernel: Kernel, op: CompiledOperation, invoke: Invoke) {
  const decl = op.declaration;
  const hasBody = op.method === "POST" || op.method === "PATCH";
  const maxBody = decl.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const tooLarge = decl.bodyTooLarge ?? KERNEL_ERRORS.bodyTooLarge;
  const onInternal = (err: unknown) => kernel.log.error(`${op.endpoint} failed`, err);

  // A success is a TextAnswer (transports/http-conventions.ts: body text, status, a header record), which is
  // written to the socket from the text and the record as they are; a `new Response(...)` would build a web
  // stream for the body only to be read back out.
  // `url` is the one h3 already parsed for routing: a GET's query is read from it, not parsed again.
  // `finish` adds the headers the HTTP conventions staged (X-Request-Id, CORS) to a success's header record.
  return async (
    request: Request,
    params: Record<string, string>,
    url: URL,
    requestId: string,
    onAuthenticated: (partnerId: string) => void,
    finish: (headers: Record<string, string>) => Record<string, string>,
  ): Promise<Response | HTTPResponse> => {
    let files: Record<string, UploadedFile> = {};
    let body: Uint8Array | null = null;
    const readBody = async () => {
      // Bytes, not an input object (core/plugin.ts `rawBody`): the media type first, then its own cap.
      const raw = decl.rawBody;
      if (raw) {
        if (!raw.contentTypes.includes(mediaTypeOf(request.headers.get("content-type"))))
          throw new ApiError(415, raw.unsupportedType);
        const tooLargeText = typeof raw.tooLarge === "string" ? raw.tooLarge : raw.tooLarge(params);
        body = await readBodyCapped(request, raw.maxBytes, tooLargeText, raw.tooLargeStatus);
        return {};
      }
      // JSON bodies are read only as application/json (readJsonBody: 415 otherwise, before any charge). An
      // operation that takes uploads also reads multipart/form-data and words its own 415, which the spec's
      // "application/json or multipart/form-data (else 415)" gives an untyped empty body too.
      const multipart = decl.multipart;
      if (!multipart) return readJsonBody(request, maxBody, tooLarge, decl.bodyNotJson, decl.bodyNotJson ? 400 : 415);
      const contentType = request.headers.get("content-type");
      if (isJsonContentType(contentType)) return readJsonBody(request, maxBody, tooLarge);
      if (mediaTypeOf(contentType) !== "multipart/form-data") throw new ApiError(415, multipart.unsupportedType);
      const parsed = await parseMultipart(
        await readBodyCapped(request, multipart.maxBytes, multipart.tooLarge),
        contentType!,
        multipart,
        multipart.malformed,
      );
      files = parsed.files;
      return parsed.input;
    };
    const outcome = await invoke({
      requestId,
      onAuthenticated,
      authorization: request.headers.get("authorization"),
      userAgent: request.headers.get("user-agent"),
      params,
      request,
      readInput: async () => (hasBody ? readBody() : queryObject(url)),
      files: () => files,
      ...(decl.rawBody ? { body: () => body } : {}),
    });
    if (!outcome.ok) return errorResponse(outcome.error, onInternal, outcome.headers, requestId);
    if ("response" in outcome) {
      for (const [k, v] of Object.entries(outcome.headers)) outcome.response.headers.set(k, v);
      return outcome.response;
    }
    if (op.method === "GET" && outcome.status === 200) {
      const { text, etag } = withEtag(outcome.body);
      // Vary on both: a 304 must name what the 200 it stands for varied on (RFC 9110 15.4.5).
      const headers = { ...outcome.headers, etag, "cache-control": "private, no-cache", vary: "Accept-Encoding" };
      if (matches(request.headers.get("if-none-match"), etag)) return new TextAnswer(null, 304, finish(headers));
      return new TextAnswer(text, 200, finish({ "content-type": JSON_TYPE, ...headers }));
    }
    return new TextAnswer(
      JSON.stringify(outcome.body),
      outcome.status,
      finish({ "content-type": JSON_TYPE, ...outcome.headers }),
    );
  };
}

export function mountPartnerApi(app: H3, kernel: Kernel): void {
  // The kernel's operation table (core/operations.ts), the one GraphQL reads too.
  for (const { op, invoke } of kernel.operations) {
    const handler = route(kernel, op, invoke);
    app.on(op.method as "GET", PARTNER_BASE + op.routerPath, (event) =>
      handler(
        event.req as Request,
        (event.context.params ?? {}) as Record<string, string>,
        event.url,
        requestIdOf(event),
        (partnerId) => void ((event.context as { partnerId?: string }).partnerId = partnerId),
        (headers) => takeStagedHeaders(event, headers),
      ),
    );
  }
}
