// HTTP conventions every route shares, beyond the spec and non-breaking (docs/api-choices.md "HTTP manners"): 405 with Allow for a
// known path asked with a method it does not serve, OPTIONS answered with Allow, gzip/br for JSON answers above
// 1 KB, and CORS for the origins an operator lists in CORS_ORIGINS (none by default: API keys belong on
// servers, not in browsers). Kept apart from the routes so no route handler has to remember any of it.

import { Buffer } from "node:buffer";
import type { IncomingMessage, Server as NodeHttpServer, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { promisify } from "node:util";
import { brotliCompress, gzip, constants as zlib } from "node:zlib";
import { H3, type H3Config, type H3Event, type HTTPError, HTTPResponse } from "h3";
import { addRoute, createRouter, findAllRoutes } from "rou3";
import { FastResponse } from "srvx";
import { outageError } from "../core/errors.ts";
import { requestId as newRequestId } from "../core/ids.ts";
import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";

/**
 * Texts of the answers the HTTP layer gives itself, before or outside any route. The spec names none of them
 * (it says only "every error is a JSON object with `error`"); each says what was wrong with the request so a
 * partner can fix it, in the spec's shape `{error, request_id}` with X-Request-Id like every other answer.
 */
export const HTTP_ERRORS = {
  // A path whose %-escapes do not decode (`%zz`, a lone `%`, an escape of half a UTF-8 sequence).
  malformedPath: "Malformed request path: invalid percent-encoding",
  // What Node's HTTP parser refuses (a bad request line or header, a bad chunk size): no route was reached.
  malformedRequest: "Malformed HTTP request",
  headersTooLarge: "Request headers too large",
  requestTimeout: "Request timed out before it was complete",
  // CONNECT asks a proxy for a tunnel; this is an origin server.
  connectRefused: "CONNECT is not served: this server is not a proxy",
  expectationFailed: "Only Expect: 100-continue is understood",
  // Never read by the client, which has gone; it is what the access log and /metrics record (status 499).
  clientClosed: "Client closed the request",
} as const;

/**
 * nginx's "client closed request": the status a request is logged and counted with when its client went away
 * before the answer (a body cut mid-stream). Not a 500: nothing failed on our side.
 */
export const CLIENT_CLOSED = 499;

/** The error a body read throws when the client went away before the end of its body. */
export function clientClosed(): ApiError {
  return new ApiError(CLIENT_CLOSED, HTTP_ERRORS.clientClosed);
}

/**
 * Whether the request's client has gone (its connection closed before the answer). Read only on a failure:
 * srvx makes the request's AbortSignal on first use, with a listener.
 */
export function clientGone(request: Request): boolean {
  try {
    return request.signal?.aborted === true;
  } catch {
    return false;
  }
}

/** A pathname whose %-escapes do not decode (h3 would answer its own bare 400; the conventions answer the spec's). */
export function isMalformedPath(pathname: string): boolean {
  if (!pathname.includes("%")) return false;
  try {
    decodeURI(pathname);
    return false;
  } catch {
    return true;
  }
}

const ERROR_TYPE = "application/json; charset=utf-8";

/** An error answer in the spec's shape, `{error, request_id}`, its X-Request-Id the client's trace or the id. */
export function errorAnswer(
  status: number,
  error: string,
  requestId: string,
  trace: string = requestId,
  headers: Record<string, string> = {},
): Response {
  const text = JSON.stringify({ error, request_id: requestId });
  return new Response(text, {
    status,
    headers: {
      "content-type": ERROR_TYPE,
      "content-length": String(Buffer.byteLength(text)),
      "x-request-id": trace,
      ...headers,
    },
  });
}

/** A client's own X-Request-Id is echoed when it is of this form; otherwise the header is our request_id. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * The request's `request_id`, made on first use and kept on the event: the body's `request_id` (success or
 * error) and the X-Request-Id header of the answer are the same id.
 */
export function requestIdOf(event: H3Event): string {
  const context = event.context as { requestId?: string };
  return (context.requestId ??= newRequestId());
}

/** The X-Request-Id to answer with: the client's own when it is of a safe form (its trace), else ours. */
export function traceIdOf(event: H3Event): string {
  const incoming = event.req.headers.get("x-request-id");
  return incoming && SAFE_REQUEST_ID.test(incoming) ? incoming : requestIdOf(event);
}

/**
 * The headers the conventions add to this request's answer (X-Request-Id, CORS), staged on the event by their
 * middleware. A route that builds its answer from a header record (a TextAnswer, h3's HTTPResponse) takes
 * them into that record with `takeStagedHeaders`; the middleware then leaves that answer alone. Setting a header on an
 * answer afterwards builds its Headers object once more than h3 does (me.bench: 4-5 µs of every request).
 */
interface Staged {
  headers: Record<string, string>;
  taken: boolean;
}

export function stageHeaders(event: H3Event, headers: Record<string, string>): Staged {
  const staged: Staged = { headers, taken: false };
  (event.context as { stagedHeaders?: Staged }).stagedHeaders = staged;
  return staged;
}

/**
 * Adds the staged headers to `headers`, the route's own new record, in place (a Vary of both is joined), and
 * returns it; as it is when the conventions are off.
 */
export function takeStagedHeaders(event: H3Event, headers: Record<string, string>): Record<string, string> {
  const staged = (event.context as { stagedHeaders?: Staged }).stagedHeaders;
  if (!staged) return headers;
  staged.taken = true;
  const vary = headers.vary;
  Object.assign(headers, staged.headers);
  if (vary && staged.headers.vary) headers.vary = `${vary}, ${staged.headers.vary}`;
  return headers;
}

/** Below this a compressed JSON answer saves less than the headers and the CPU cost. */
export const COMPRESS_MIN_BYTES = 1024;
const COMPRESSIBLE = /^application\/(?:[\w.+-]*\+)?json\b/i;
const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);
// Quality 5 of 11: most of brotli's gain on JSON at a small part of its top setting's CPU time.
const BROTLI_OPTIONS = { params: { [zlib.BROTLI_PARAM_QUALITY]: 5, [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT } };

/**
 * An H3 app that remembers which methods each route pattern serves, so the catch-all can tell "no such path"
 * (404) from "not with this method" (405 with Allow). Mounts keep calling app.on / app.get as usual.
 */
export class RoutedH3 extends H3 {
  readonly #patterns = createRouter<Set<string>>();
  readonly #byPattern = new Map<string, Set<string>>();
  readonly #noHead = new Set<string>();
  #around?: Around;
  readonly #route = (event: H3Event): unknown => super.handler(event);

  /**
   * A malformed path reaches `handler` (allowMalformedURL), which answers it in the spec's shape through the
   * conventions (logged and counted like any answer) instead of h3's bare `{"status":400,"message":...}`; and
   * anything h3 renders itself (a thrown error) is rendered by `renderError`, in the same shape.
   */
  constructor(config: H3Config = {}) {
    super({ allowMalformedURL: true, onError: renderError, ...config });
  }

  /**
   * Puts `around` in front of every route: it gets the event and a function that runs the route, and returns
   * the answer. Used for the conventions instead of h3 middleware (`use`), which calls each middleware through a
   * closure and a promise of its own made per request (0.4 µs of a request against 0.15 µs this way, in a
   * loop through app.fetch).
   */
  around(around: Around): void {
    this.#around = around;
  }

  override handler(event: H3Event): unknown {
    // Before routing: a route would decode the path's parameters and throw on the same escapes.
    const route = isMalformedPath(event.url.pathname) ? refuseMalformedPath : this.#route;
    return this.#around ? this.#around(event, route) : route(event);
  }

  /** A GET route whose handler does not answer HEAD (yoga's /graphql): Allow then leaves HEAD out. */
  withoutHead(route: string): void {
    this.#noHead.add(route);
  }

  override on(...args: Parameters<H3["on"]>): this {
    const [method, route] = args;
    // Catch-alls ("/**") and method-less routes say nothing about one path's methods.
    if (method && !route.includes("**")) {
      let methods = this.#byPattern.get(route);
      if (!methods) {
        this.#byPattern.set(route, (methods = new Set()));
        addRoute(this.#patterns, "", route, methods);
      }
      methods.add(method.toUpperCase());
    }
    return super.on(...args);
  }

  /** The methods some route serves at this path (HEAD with GET, OPTIONS always), or [] for an unknown path. */
  allowedMethods(pathname: string): string[] {
    const methods = new Set<string>();
    let head = false;
    for (const match of findAllRoutes(this.#patterns, "", pathname)) {
      for (const m of match.data) methods.add(m);
      // h3 answers HEAD with the GET route's handler, except where that handler refuses it.
      if (match.data.has("GET") && !this.#noHead.has(pathname)) head = true;
    }
    if (methods.size === 0) return [];
    if (head) methods.add("HEAD");
    methods.add("OPTIONS");
    return [...methods].sort();
  }
}

const refuseMalformedPath = (event: H3Event): Response =>
  errorAnswer(400, HTTP_ERRORS.malformedPath, requestIdOf(event), traceIdOf(event));

/**
 * h3's `onError`: whatever h3 would render itself (an error thrown past a route, an HTTPError of h3's own),
 * in the spec's shape with X-Request-Id. An ApiError keeps its status and body; h3's own client errors keep
 * their status with the kernel's text where there is one; an outage its 503 or 507; anything else is the fixed 500 (internal errors never
 * reach a partner), or 499 when the client has gone.
 */
export function renderError(error: HTTPError, event: H3Event): Response {
  const requestId = requestIdOf(event);
  const trace = traceIdOf(event);
  // An outage thrown past a route (media from a store out of reach, a callback's database write) is its 503
  // or 507 (core/errors.ts outageError), not the 500 of a bug.
  const thrown: unknown = error;
  const cause =
    error.cause instanceof ApiError
      ? error.cause
      : thrown instanceof ApiError
        ? thrown
        : (outageError(error.cause) ?? undefined);
  if (cause) {
    const text = JSON.stringify({ ...cause.body(), request_id: requestId });
    return new Response(text, {
      status: cause.status,
      headers: {
        "content-type": ERROR_TYPE,
        "content-length": String(Buffer.byteLength(text)),
        "x-request-id": trace,
        ...cause.headers,
      },
    });
  }
  const status = error.status ?? 500;
  if (status >= 500 || error.unhandled) {
    return errorAnswer(
      clientGone(event.req as Request) ? CLIENT_CLOSED : 500,
      clientGone(event.req as Request) ? HTTP_ERRORS.clientClosed : KERNEL_ERRORS.internal,
      requestId,
      trace,
    );
  }
  const text =
    status === 404
      ? KERNEL_ERRORS.notFound
      : status === 405
        ? KERNEL_ERRORS.methodNotAllowed
        : status === 413
          ? KERNEL_ERRORS.bodyTooLarge
          : error.message || HTTP_ERRORS.malformedRequest;
  return errorAnswer(status, text.slice(0, 200), requestId, trace);
}

/** What RoutedH3.around takes: a function in front of every route. */
export type Around = (event: H3Event, route: (event: H3Event) => unknown) => unknown;

/** The encoding to answer with: br, then gzip, when the client accepts it (q > 0); otherwise none. */
export function chooseEncoding(acceptEncoding: string | null): "br" | "gzip" | undefined {
  if (!acceptEncoding) return undefined;
  const accepted = new Map<string, number>();
  for (const part of acceptEncoding.split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    accepted.set(name!.trim(), q ? Number(q.slice(2)) || 0 : 1);
  }
  const ok = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0;
  if (ok("br")) return "br";
  if (ok("gzip")) return "gzip";
  return undefined;
}

/**
 * A route's answer compressed with `encoding` when it is JSON of at least COMPRESS_MIN_BYTES (every JSON
 * answer to such a client says `Vary: Accept-Encoding`); anything else (streams: SSE, media; other types)
 * passes untouched. Takes what a handler returns: a TextAnswer (the partner API's successes), h3's
 * HTTPResponse (the direct GraphQL path) or a Response.
 */
/** Adds Accept-Encoding to Vary once (a GET's answer may already carry it from its route, for its 304). */
function varyOnEncoding(headers: Headers): void {
  if (!namesEncoding(headers.get("vary"))) headers.append("vary", "Accept-Encoding");
}
const namesEncoding = (vary: string | null | undefined): boolean => /(^|,)\s*accept-encoding\s*(,|$)/i.test(vary ?? "");

/**
 * An answer of text (or none) and a header record of lower-case names, kept as such until it is written:
 * srvx writes the record to the socket as it is, where h3's HTTPResponse turns its record into a Headers
 * object first (undici's, on every answer: about 4 % of a GET /me in me.bench), and compressJson works on the
 * text and the record without reading a stream. The record is not changed once the answer is made: under
 * Deno, FastResponse is the runtime's own Response, which copies it at once. The partner API's successes.
 */
export class TextAnswer extends FastResponse {
  constructor(
    readonly bodyText: string | null,
    status: number,
    readonly record: Record<string, string>,
  ) {
    super(bodyText, { status, headers: record });
  }
}

/** compressJson for a TextAnswer: the same outcome, from its text and its record. */
async function compressText(answer: TextAnswer, encoding: "br" | "gzip"): Promise<TextAnswer | Response> {
  const { bodyText: text, record } = answer;
  const type = record["content-type"];
  if (text === null || !type || !COMPRESSIBLE.test(type) || record["content-encoding"]) return answer;
  // Fewer than COMPRESS_MIN_BYTES / 3 characters are fewer bytes than that in UTF-8, whatever they are.
  const raw = text.length * 3 < COMPRESS_MIN_BYTES ? undefined : Buffer.from(text, "utf8");
  if (!raw || raw.byteLength < COMPRESS_MIN_BYTES)
    return namesEncoding(record.vary) ? answer : new TextAnswer(text, answer.status, varyOnEncodingIn({ ...record }));
  const packed = encoding === "br" ? await brotli(raw, BROTLI_OPTIONS) : await gzipped(raw);
  const headers = varyOnEncodingIn({
    ...record,
    "content-encoding": encoding,
    "content-length": String(packed.byteLength),
  });
  return new FastResponse(packed, { status: answer.status, headers });
}

/** varyOnEncoding for a header record of lower-case names. */
function varyOnEncodingIn(record: Record<string, string>): Record<string, string> {
  if (!namesEncoding(record.vary)) record.vary = record.vary ? `${record.vary}, Accept-Encoding` : "Accept-Encoding";
  return record;
}

export async function compressJson<T>(answer: T, encoding: "br" | "gzip"): Promise<T | HTTPResponse | Response> {
  if (answer instanceof TextAnswer) return compressText(answer, encoding);
  if (!(answer instanceof HTTPResponse) && !(answer instanceof Response)) return answer;
  const type = answer.headers.get("content-type");
  if (!type || !COMPRESSIBLE.test(type) || answer.headers.has("content-encoding") || answer.body == null) return answer;
  // A declared small length: nothing to gain, and a Response need not be read back and rebuilt.
  const declared = Number(answer.headers.get("content-length") ?? NaN);
  if (declared < COMPRESS_MIN_BYTES) {
    varyOnEncoding(answer.headers);
    return answer;
  }
  let raw: Uint8Array;
  if (answer instanceof Response) raw = new Uint8Array(await answer.arrayBuffer());
  else if (typeof answer.body === "string") raw = Buffer.from(answer.body, "utf8");
  else return answer;
  const init = (body: Uint8Array, extra: Record<string, string>) => {
    const headers = new Headers(answer.headers);
    // A shared cache must keep the compressed and the plain answer apart.
    varyOnEncoding(headers);
    for (const [k, v] of Object.entries(extra)) headers.set(k, v);
    return {
      body: body as BodyInit,
      init: { status: answer.status ?? 200, ...(answer.statusText ? { statusText: answer.statusText } : {}), headers },
    };
  };
  const small = raw.byteLength < COMPRESS_MIN_BYTES;
  const packed = small ? raw : encoding === "br" ? await brotli(raw, BROTLI_OPTIONS) : await gzipped(raw);
  const { body, init: options } = init(
    packed,
    small ? {} : { "content-encoding": encoding, "content-length": String(packed.byteLength) },
  );
  // A Response read above cannot be handed on; a small HTTPResponse can.
  if (answer instanceof HTTPResponse) {
    if (!small) return new HTTPResponse(body, options);
    varyOnEncoding(answer.headers);
    return answer;
  }
  return new Response(body, options);
}

/** What a browser script on a listed origin may send and read (the partner API's own headers included). */
const CORS_ALLOW_HEADERS = "Authorization, Content-Type, Idempotency-Key, X-Request-Id, If-None-Match";
const CORS_EXPOSE_HEADERS = "X-Request-Id, ETag, RateLimit, RateLimit-Policy, Retry-After, Idempotent-Replayed";

/** The CORS headers for an allowed origin; none (so the browser refuses) for any other, or when none are listed. */
export function corsHeaders(
  origins: readonly string[],
  request: Request,
  allow: string[],
): Record<string, string> | undefined {
  const origin = request.headers.get("origin");
  if (!origin || !origins.includes(origin)) return undefined;
  const headers: Record<string, string> = {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": CORS_EXPOSE_HEADERS,
  };
  if (request.method === "OPTIONS") {
    headers["access-control-allow-methods"] = allow.filter((m) => m !== "OPTIONS").join(", ");
    headers["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    headers["access-control-max-age"] = "600";
  }
  return headers;
}

/** A whole HTTP/1.1 answer written to a raw socket (Node's parser refused the request: no Response to send). */
function rawAnswer(
  status: number,
  reason: string,
  error: string,
  headers: Record<string, string> = {},
): { text: string; requestId: string } {
  const requestId = newRequestId();
  const body = JSON.stringify({ error, request_id: requestId });
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    `content-type: ${ERROR_TYPE}`,
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    "connection: close",
  ];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return { text: `${lines.join("\r\n")}\r\n\r\n${body}`, requestId };
}

/** What the socket conventions need of the app: the methods a path serves, and a request seen (access log, metrics). */
export interface SocketConventionsHost {
  allowedMethods(pathname: string): string[];
  observe(entry: { requestId: string; method: string; status: number; ms: number }): void;
}

/** The events of node:http's server these conventions listen to (srvx's Node server, HTTP/1.1). */
export type NodeServerEvents = Pick<NodeHttpServer, "on">;

/** The request line's method and path of what the parser refused, when it has one of the usual form. */
function requestLineOf(raw: Buffer | undefined): { method: string; path: string } | undefined {
  if (!raw || raw.length === 0) return undefined;
  const end = raw.indexOf("\r\n");
  const line = raw.subarray(0, end < 0 ? Math.min(raw.length, 8192) : Math.min(end, 8192)).toString("latin1");
  const parts = line.split(" ");
  if (parts.length !== 3 || !parts[1]!.startsWith("/") || !/^HTTP\/1\.[01]$/.test(parts[2]!)) return undefined;
  const path = parts[1]!.split("?")[0]!;
  return { method: parts[0]!, path };
}

/**
 * What Node's HTTP server answers before any route runs, in the spec's shape with X-Request-Id, where Node
 * would write a bare status line or close the socket:
 * - `clientError` (the parser refused the request): an unknown method (`BREW /me`) as the routes would
 *   answer it (405 with Allow for a known path, else 404), headers too large 431, a time-out 408, anything
 *   else 400. Nothing is written when the client has gone or an answer was already begun on the socket.
 * - `connect` (a CONNECT request, which Node hands over without an answer and closes): 400.
 * - `checkExpectation` (an Expect other than 100-continue; Node answers an empty 417): 417.
 * Each is counted and logged like a request (method OTHER unless one of the usual ones, route "(unmatched)").
 */
export function mountSocketConventions(server: NodeServerEvents, host: SocketConventionsHost): void {
  const answer = (
    socket: Duplex,
    status: number,
    reason: string,
    error: string,
    method: string,
    headers?: Record<string, string>,
  ) => {
    const { text, requestId } = rawAnswer(status, reason, error, headers);
    socket.end(text);
    host.observe({ requestId, method, status, ms: 0 });
  };
  server.on("clientError", (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // The client went away (a reset, or its end of the connection closed mid-request: the route that was
    // reading the body records that as 499): nothing to answer, nothing more to count.
    if (err.code === "ECONNRESET" || err.code === "HPE_INVALID_EOF_STATE" || !socket.writable || started?.headersSent)
      return void socket.destroy();
    switch (err.code) {
      case "HPE_HEADER_OVERFLOW":
        return answer(socket, 431, "Request Header Fields Too Large", HTTP_ERRORS.headersTooLarge, "OTHER");
      case "ERR_HTTP_REQUEST_TIMEOUT":
      case "HPE_HEADERS_TIMEOUT":
        return answer(socket, 408, "Request Timeout", HTTP_ERRORS.requestTimeout, "OTHER");
      case "HPE_INVALID_METHOD": {
        const line = requestLineOf(err.rawPacket);
        const allow = line ? host.allowedMethods(line.path) : [];
        if (allow.length > 0)
          return answer(socket, 405, "Method Not Allowed", KERNEL_ERRORS.methodNotAllowed, "OTHER", {
            allow: allow.join(", "),
          });
        if (line) return answer(socket, 404, "Not Found", KERNEL_ERRORS.notFound, "OTHER");
        return answer(socket, 400, "Bad Request", HTTP_ERRORS.malformedRequest, "OTHER");
      }
      default:
        return answer(socket, 400, "Bad Request", HTTP_ERRORS.malformedRequest, "OTHER");
    }
  });
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => {
    socket.on("error", () => {});
    answer(socket, 400, "Bad Request", HTTP_ERRORS.connectRefused, "OTHER");
  });
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    const requestId = newRequestId();
    const body = JSON.stringify({ error: HTTP_ERRORS.expectationFailed, request_id: requestId });
    res
      .writeHead(417, {
        "content-type": ERROR_TYPE,
        "content-length": Buffer.byteLength(body),
        "x-request-id": requestId,
        connection: "close",
      })
      .end(body);
    host.observe({ requestId, method: req.method ?? "OTHER", status: 417, ms: 0 });
  });
}
