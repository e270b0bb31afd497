// The direct route of the common GraphQL request: a POST of a JSON body `{query, variables?, operationName?}`
// from a client that accepts plain JSON, asking a query or a mutation whose document parses, validates and
// whose variables coerce. Such a request is executed here with graphql-js, without yoga's per-request
// machinery: its envelop hooks, its fetch and promise wrappers and its result processing were most of a
// small query's CPU (a profile of me.bench: yoga, envelop and @whatwg-node 40 %, the query itself under 10 %).
//
// Everything else goes to yoga, which answers it as it always has: GET (GraphiQL, queries in the URL), SSE,
// subscriptions, other content types and Accept values, persisted operations, a body without a declared length
// or over the cap, batched or malformed bodies, and a document or variables that fail. The route declines only
// before anything has run (graphql-js executes nothing when it answers without `data`), so no request is ever
// half-handled by both, and every refusal keeps yoga's text and status.
//
// What yoga does around a successful execution is done here the same way, from the same tables: the document
// limits and validation rules (limits.ts, through `rules`), the parsed-document cache, the error masking
// (`mask`), the HTTP status yoga derives from the errors, the removal of internal extensions, and the
// rate-limit headers of the caller. test/graphql/direct.test.ts holds the two routes to the same answers.
import {
  type DocumentNode,
  execute,
  type GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  getOperationAST,
  type ValidationRule,
  validate,
} from "graphql";
import { HTTPResponse } from "h3";
import type { GraphqlContext } from "./context.ts";
import { type DocumentCache, type GraphqlLimits, parseWithinLimits, variablesRefusal } from "./limits.ts";

const JSON_TYPE = "application/json; charset=utf-8";
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
/** Accept values under which yoga answers `application/json` with its legacy status rules. */
const PLAIN_ACCEPT = new Set(["*/*", "application/*", "application/json"]);
const PARAMS = new Set(["query", "variables", "operationName"]);
const DIGITS = /^\d+$/;

export interface DirectRouteOptions {
  schema: GraphQLSchema;
  limits: Readonly<GraphqlLimits>;
  /** Parsed documents by text: yoga's cache, shared so either route parses a text once. */
  documents: DocumentCache;
  /** Every validation rule yoga runs (graphql-js's specified rules and limits.ts's). */
  rules: readonly ValidationRule[];
  /** The error masking yoga applies (yoga.ts): public errors pass, anything else becomes the fixed sentence. */
  mask(error: GraphQLError): GraphQLError;
  /** The context yoga would build for this request. */
  context(request: Request): GraphqlContext;
  /** Headers yoga's onResponse would add (the caller's rate-limit headers). */
  responseHeaders(request: Request): Record<string, string> | undefined;
}

export interface DirectRoute {
  /** Whether the request is of the kind this route may take, judged from its method and headers alone. */
  eligible(request: Request): boolean;
  /** The answer, or undefined when yoga must answer (nothing has run then). */
  answer(request: Request, body: string): Promise<HTTPResponse | undefined>;
}

/** A body read whole (within the cap) as text, or, past the cap, the same body again as a stream for yoga to refuse. */
export type ReadBody = { text: string } | { stream: ReadableStream<Uint8Array> };

const UTF8 = new TextDecoder();

/**
 * Reads a body up to `max` bytes, decoded as UTF-8 (a broken sequence becomes U+FFFD, as yoga's reading does).
 * A declared length within the cap (an eligible request) is read as text: srvx then reads the socket into one
 * buffer, where any other read of a Node request would build a web Request and stream into it first. Without a
 * declared length, the reading stops past the cap, and what was read and what remains are handed back as one
 * stream, so yoga's body limit meets the request as the client sent it.
 */
export async function readBody(request: Request, max: number): Promise<ReadBody> {
  // Before `request.body` is touched: on srvx, reading it makes the web stream that text() then reads back.
  if (request.headers.get("content-length") !== null) return { text: await request.text() };
  if (request.body === null) return { text: "" };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > max) {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
        },
        async pull(controller) {
          const next = await reader.read();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return { stream };
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { text: UTF8.decode(bytes) };
}

function plainAccept(accept: string | null): boolean {
  if (accept === null) return true;
  for (const range of accept.split(",")) {
    const type = range.split(";", 1)[0]!.trim().toLowerCase();
    if (!PLAIN_ACCEPT.has(type)) return false;
  }
  return true;
}

interface Params {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/** The body as the three parameters, or undefined for anything yoga should judge (its texts for bad bodies). */
function paramsOf(body: string): Params | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  const p = parsed as Record<string, unknown>;
  for (const key in p) if (!PARAMS.has(key)) return undefined;
  const { query, variables, operationName } = p;
  if (typeof query !== "string") return undefined;
  if (variables != null && (typeof variables !== "object" || Array.isArray(variables))) return undefined;
  if (operationName != null && typeof operationName !== "string") return undefined;
  return {
    query,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    operationName: operationName ?? undefined,
  };
}

/**
 * An error as yoga writes it: graphql-js's JSON form without the extensions meant for the server (`http`, the
 * HTTP hints; `unexpected`).
 */
function published(error: GraphQLError): GraphQLFormattedError {
  const json = error.toJSON();
  if (!json.extensions) return json;
  const { http: _http, unexpected: _unexpected, ...extensions } = json.extensions as Record<string, unknown>;
  const { extensions: _all, ...rest } = json;
  return Object.keys(extensions).length ? { ...rest, extensions } : rest;
}

/**
 * yoga's status for a result answered as `application/json`: 200, or the highest `extensions.http.status` of an
 * error that is not one the GraphQL-over-HTTP spec defines (those are answered 200 to a JSON client); the
 * errors' `http.headers` are added.
 */
function statusOf(errors: readonly GraphQLError[], headers: Record<string, string>): number {
  let status = 0;
  for (const error of errors) {
    const http = error.extensions?.http as
      | { status?: number; spec?: boolean; headers?: Record<string, string> }
      | undefined;
    if (!http) continue;
    if (http.headers) Object.assign(headers, http.headers);
    if (http.spec) continue;
    if (http.status && http.status > status) status = http.status;
  }
  return status || 200;
}

export function directRoute(options: DirectRouteOptions): DirectRoute {
  const { schema, limits, documents, rules, mask } = options;
  // Whether a parsed document passed every rule; documents come from the cache, so each is validated once.
  const validity = new WeakMap<DocumentNode, boolean>();
  const isValid = (document: DocumentNode): boolean => {
    let valid = validity.get(document);
    if (valid === undefined) validity.set(document, (valid = validate(schema, document, rules).length === 0));
    return valid;
  };
  const documentOf = (query: string): DocumentNode | undefined => {
    let document = documents.get(query);
    if (document) return document;
    try {
      document = parseWithinLimits(query, limits);
    } catch {
      return undefined;
    }
    documents.set(query, document);
    return document;
  };

  return {
    eligible(request) {
      if (request.method !== "POST") return false;
      const type = request.headers.get("content-type");
      if (type === null || !PLAIN_JSON.test(type)) return false;
      // A declared length over the cap, or one that is not a number, is yoga's body limit's to answer (limits.ts).
      const declared = request.headers.get("content-length");
      if (declared !== null && (!DIGITS.test(declared) || Number(declared) > limits.bodyBytes)) return false;
      return plainAccept(request.headers.get("accept"));
    },

    async answer(request, body) {
      const params = paramsOf(body);
      if (!params || variablesRefusal(params.variables)) return undefined;
      const document = documentOf(params.query);
      if (!document || !isValid(document)) return undefined;
      const operation = getOperationAST(document, params.operationName);
      if (!operation || operation.operation === "subscription") return undefined;
      const result = await execute({
        schema,
        document,
        variableValues: params.variables,
        operationName: params.operationName,
        contextValue: options.context(request),
      });
      // No `data`: the variables did not coerce, and nothing ran. yoga answers that with its own status.
      if (!("data" in result)) return undefined;
      const headers: Record<string, string> = { "content-type": JSON_TYPE };
      let text: string;
      let status = 200;
      if (result.errors?.length) {
        const errors = result.errors.map(mask);
        status = statusOf(errors, headers);
        text = JSON.stringify({ errors: errors.map(published), data: result.data });
      } else {
        text = JSON.stringify({ data: result.data });
      }
      const added = options.responseHeaders(request);
      if (added) Object.assign(headers, added);
      return new HTTPResponse(text, { status, headers });
    },
  };
}
