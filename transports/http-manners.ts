// HTTP manners every route shares, beyond the spec and non-breaking (README "Decisions"): 405 with Allow for a
// known path asked with a method it does not serve, OPTIONS answered with Allow, gzip/br for JSON answers above
// 1 KB, and CORS for the origins an operator lists in CORS_ORIGINS (none by default: API keys belong on
// servers, not in browsers). Kept apart from the routes so no route handler has to remember any of it.
import { promisify } from "node:util";
import { brotliCompress, constants as zlib, gzip } from "node:zlib";
import { Buffer } from "node:buffer";
import { H3, HTTPResponse, type H3Event } from "h3";
import { FastResponse } from "srvx";
import { requestId as newRequestId } from "../core/ids.ts";
import { addRoute, createRouter, findAllRoutes } from "rou3";

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
 * The headers the manners add to this request's answer (X-Request-Id, CORS), staged on the event by their
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
 * returns it; as it is when the manners are off.
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
   * Puts `around` in front of every route: it gets the event and a function that runs the route, and returns
   * the answer. Used for the manners instead of h3 middleware (`use`), which calls each middleware through a
   * closure and a promise of its own made per request (0.4 µs of a request against 0.15 µs this way, in a
   * loop through app.fetch).
   */
  around(around: Around): void {
    this.#around = around;
  }

  override handler(event: H3Event): unknown {
    return this.#around ? this.#around(event, this.#route) : super.handler(event);
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
  if (!raw || raw.byteLength < COMPRESS_MIN_BYTES) return namesEncoding(record.vary) ? answer : new TextAnswer(text, answer.status, varyOnEncodingIn({ ...record }));
  const packed = encoding === "br" ? await brotli(raw, BROTLI_OPTIONS) : await gzipped(raw);
  const headers = varyOnEncodingIn({ ...record, "content-encoding": encoding, "content-length": String(packed.byteLength) });
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
    return { body: body as BodyInit, init: { status: answer.status ?? 200, ...(answer.statusText ? { statusText: answer.statusText } : {}), headers } };
  };
  const small = raw.byteLength < COMPRESS_MIN_BYTES;
  const packed = small ? raw : encoding === "br" ? await brotli(raw, BROTLI_OPTIONS) : await gzipped(raw);
  const { body, init: options } = init(packed, small ? {} : { "content-encoding": encoding, "content-length": String(packed.byteLength) });
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
export function corsHeaders(origins: readonly string[], request: Request, allow: string[]): Record<string, string> | undefined {
  const origin = request.headers.get("origin");
  if (!origin || !origins.includes(origin)) return undefined;
  const headers: Record<string, string> = { "access-control-allow-origin": origin, "access-control-expose-headers": CORS_EXPOSE_HEADERS };
  if (request.method === "OPTIONS") {
    headers["access-control-allow-methods"] = allow.filter((m) => m !== "OPTIONS").join(", ");
    headers["access-control-allow-headers"] = CORS_ALLOW_HEADERS;
    headers["access-control-max-age"] = "600";
  }
  return headers;
}
