// Limits on what one GraphQL request may ask of the server, all checked before execution and before
// authentication (docs/architecture.md invariant 9). Without them one unauthenticated POST of a million aliased
// `__typename` fields (22 MB) held the event loop for about 30 s and took 2.4 GB.
//
// Where each limit holds, in the order a request meets them:
//   - requests without a valid key: a budget per client address (HTTP requests and WebSocket upgrades);
//   - the HTTP body: `bodyBytes` (bodyLimit: checks `content-length` before reading, and counts the bytes
//     of a body sent without one while it streams), 413;
//   - variables nested deeper than a REST body may be;
//   - the document: its size, then its tokens while the lexer runs (graphql-js stops at `maxTokens`, so a
//     huge document costs no more than its first `tokens` tokens);
//   - the parsed operation: depth, aliases, directives and cost (fields as executed), with fragments
//     expanded once each (memoised, so a fragment spread twice at every level cannot multiply the work)
//     and cycles cut (graphql-js's NoFragmentCyclesRule reports those);
//   - introspection, when switched off.
// The same parse and validate serve the WebSocket transport (websocket.ts calls yoga's enveloped functions
// and checks the variables itself), so a subscription document meets the same document limits.

import {
  type ASTNode,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  Kind,
  type ParseOptions,
  parse,
  type SelectionSetNode,
  type Source,
  type ValidationRule,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import { MAX_INPUT_DEPTH } from "../../core/hostile-input.ts";
import type { RateLimitDecision, RateLimiter } from "../../core/rate-limit.ts";
import type { RateWindow } from "../../core/rate-limits.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { addressKey } from "../address-key.ts";
import { codeFor } from "./errors.ts";

export interface GraphqlLimits {
  /** HTTP body of one GraphQL request, in bytes. */
  bodyBytes: number;
  /** A document's length in characters (the `query` text; data belongs in variables). */
  documentChars: number;
  /** Lexical tokens of a document (punctuation, names, values; comments and whitespace are not tokens). */
  tokens: number;
  /** Nesting of selections: `{ a }` is 1, `{ a { b } }` is 2. */
  depth: number;
  /** Aliased fields in one operation, fragments expanded. */
  aliases: number;
  /** Directive uses in one operation, fragments expanded. */
  directives: number;
  /** Fields one operation selects, fragments expanded: what execution would resolve. */
  cost: number;
  /** One WebSocket frame, in bytes. */
  websocketFrameBytes: number;
  /** Requests and WebSocket upgrades without a valid key, per client address and minute. */
  unauthenticatedPerMinute: number;
}

// Measured against what clients need: the standard introspection query (GraphiQL's) has under 200 tokens,
// depth 15 and 230 fields; the deepest output type of the schema is 4 levels under its root field. (How deep
// introspection may nest its lists, `fields { type { fields ...`, graphql-js's MaxIntrospectionDepthRule
// limits among the standard rules.)
// A GraphQL body carries a control document and variables: inputs with base64 media larger than 1 MB go
// through REST, whose per-operation caps allow them.
export const GRAPHQL_LIMITS: Readonly<GraphqlLimits> = Object.freeze({
  bodyBytes: 1_000_000,
  documentChars: 100_000,
  tokens: 2_000,
  depth: 20,
  aliases: 20,
  directives: 20,
  cost: 1_000,
  websocketFrameBytes: 256 * 1024,
  unauthenticatedPerMinute: 60,
});

type LimitName =
  | "body"
  | "document"
  | "tokens"
  | "depth"
  | "aliases"
  | "directives"
  | "cost"
  | "introspection"
  | "variables";

/**
 * A refusal by one of the limits: a GraphQL error with the status and code of errors.ts, the limit's name and
 * its maximum. `extensions.http` makes yoga answer the HTTP request with 400, also to a client that accepts
 * only `application/json` (`spec: false`: yoga would otherwise answer a spec-defined error to such a client
 * with 200); yoga removes it from the body, and the WebSocket transport does too (withoutHttp).
 */
function limitError(message: string, limit: LimitName, max?: number, nodes?: readonly ASTNode[]): GraphQLError {
  return new GraphQLError(message, {
    nodes,
    extensions: {
      code: codeFor(400),
      status: 400,
      limit,
      ...(max === undefined ? {} : { max }),
      http: { spec: false, status: 400 },
    },
  });
}

/** An error as a WebSocket client gets it: without the HTTP hints meant for yoga. */
export function withoutHttp(error: GraphQLError): GraphQLError {
  if (!error.extensions || !("http" in error.extensions)) return error;
  const { http: _http, ...extensions } = error.extensions;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions,
  });
}

/**
 * A document that cannot run (a limit, a syntax error, a validation error) as a 400 over HTTP, whatever the
 * client accepts: the error itself, with `extensions.status` as errors.ts gives every error and the HTTP hint.
 */
function asRefusal(error: GraphQLError, code?: string): GraphQLError {
  const extensions = error.extensions as Record<string, unknown>;
  if (code) extensions.code ??= code;
  const http = (extensions.http ?? {}) as { status?: number };
  extensions.http = { ...http, spec: false, status: http.status ?? 400 };
  extensions.status ??= 400;
  return error;
}

// ---------------------------------------------------------------------------------------------------------
// The HTTP body.

const CONTENT_LENGTH = /^\d+$/;

/** A body over the cap: yoga's text, in the terms of errors.ts; `extensions.http` makes yoga answer 413. */
const bodyTooLarge = (max: number) =>
  new GraphQLError("Request body too large", {
    extensions: { code: codeFor(413), status: 413, limit: "body", max, http: { status: 413 } },
  });

/** The body with its bytes counted as they stream: past `max` the read fails with bodyTooLarge. */
function countedBody(request: Request, max: number): Request {
  let read = 0;
  const counted = request.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        read += chunk.byteLength;
        if (read > max) controller.error(bodyTooLarge(max));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    signal: request.signal,
    body: counted,
    duplex: "half",
  } as RequestInit);
}

/**
 * The body cap, in place of yoga's `maxRequestBodySize` (whose checks and texts it keeps): a declared
 * Content-Length is checked before anything is read; a body without one is counted while it streams. A
 * request that came over the network with a declared length is read as it is, since the HTTP server reads
 * exactly that many bytes: yoga wraps every body in a counting web stream and a new Request, which cost a
 * GraphQL request a tenth of its CPU (me.bench). Registered after yoga's request parsers, so it wraps the
 * one chosen.
 */
export function bodyLimit(max: number): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser }) {
      const declared = request.headers.get("content-length");
      if (declared !== null) {
        if (!CONTENT_LENGTH.test(declared)) {
          throw new GraphQLError("Content-Length header is invalid.", {
            extensions: { http: { status: 400 }, code: "BAD_REQUEST" },
          });
        }
        if (Number(declared) > max) throw bodyTooLarge(max);
        if (clientAddress(request) !== undefined) return;
      }
      if (!requestParser || request.body === null) return;
      setRequestParser((req) => requestParser(countedBody(req, max)));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// The document: size and tokens in parse, the rest in one validation rule.

/** graphql-js's own text for the token limit ("Document contains more that N tokens. Parsing aborted."). */
const TOKEN_LIMIT_TEXT = /Document contains more tha[nt] \d+ tokens/;

const documentTooLarge = (chars: number, limits: GraphqlLimits) =>
  limitError(
    `The GraphQL document is too large: ${chars} characters (at most ${limits.documentChars}). Pass large values as variables.`,
    "document",
    limits.documentChars,
  );
const tooManyTokens = (limits: GraphqlLimits) =>
  limitError(`The GraphQL document has more than ${limits.tokens} tokens.`, "tokens", limits.tokens);

/** graphql-js's parse with the size checked first and the lexer stopped after `tokens` tokens. */
export function parseWithinLimits(
  source: string | Source,
  limits: GraphqlLimits,
  options?: ParseOptions,
): DocumentNode {
  const text = typeof source === "string" ? source : source.body;
  if (text.length > limits.documentChars) throw documentTooLarge(text.length, limits);
  try {
    return parse(source, { ...options, maxTokens: limits.tokens });
  } catch (error) {
    if (error instanceof GraphQLError && TOKEN_LIMIT_TEXT.test(error.message)) throw tooManyTokens(limits);
    throw error;
  }
}

interface Measure {
  depth: number;
  aliases: number;
  directives: number;
  cost: number;
}

const NOTHING: Measure = Object.freeze({ depth: 0, aliases: 0, directives: 0, cost: 0 });

/**
 * Depth, aliases, directives and cost of each operation of a document, each fragment measured once. A spread
 * of a fragment that is being measured (a cycle) adds nothing; a spread of an unknown fragment neither (the
 * standard rules report both).
 */
export function measureOperations(
  document: DocumentNode,
): Array<{ name: string | undefined; node: ASTNode } & Measure> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const measured = new Map<string, Measure>();
  const measuring = new Set<string>();

  function fragment(name: string): Measure {
    const known = measured.get(name);
    if (known) return known;
    const def = fragments.get(name);
    if (!def || measuring.has(name)) return NOTHING;
    measuring.add(name);
    const m = selections(def.selectionSet);
    m.directives += def.directives?.length ?? 0;
    measuring.delete(name);
    measured.set(name, m);
    return m;
  }

  function selections(set: SelectionSetNode): Measure {
    const m: Measure = { depth: 0, aliases: 0, directives: 0, cost: 0 };
    for (const s of set.selections) {
      m.directives += s.directives?.length ?? 0;
      let inner: Measure;
      let levels = 0;
      if (s.kind === Kind.FIELD) {
        if (s.alias) m.aliases++;
        m.cost++;
        levels = 1;
        inner = s.selectionSet ? selections(s.selectionSet) : NOTHING;
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        inner = selections(s.selectionSet);
      } else {
        inner = fragment(s.name.value);
      }
      m.depth = Math.max(m.depth, levels + inner.depth);
      m.aliases += inner.aliases;
      m.directives += inner.directives;
      m.cost += inner.cost;
    }
    return m;
  }

  const out: Array<{ name: string | undefined; node: ASTNode } & Measure> = [];
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const m = selections(d.selectionSet);
    m.directives +=
      (d.directives?.length ?? 0) + (d.variableDefinitions ?? []).reduce((n, v) => n + (v.directives?.length ?? 0), 0);
    out.push({ name: d.name?.value, node: d, ...m });
  }
  return out;
}

/**
 * What an operation over each measured limit is told, in the order the rule checks them, from how the
 * operation is named (`which`), what was found and the limit.
 */
const OVER_LIMIT: ReadonlyArray<[keyof Measure, (which: string, found: number, max: number) => string]> = [
  ["depth", (which, found, max) => `${which} is nested too deeply: ${found} levels (at most ${max}).`],
  ["aliases", (which, found, max) => `${which} has too many aliases: ${found} (at most ${max}).`],
  ["directives", (which, found, max) => `${which} has too many directives: ${found} (at most ${max}).`],
  // The count may be astronomically large for a fragment bomb; say so without printing 1e+300.
  [
    "cost",
    (which, found, max) =>
      `${which} selects too many fields: ${Number.isSafeInteger(found) ? String(found) : "more than that"} (at most ${max}).`,
  ],
];

/** The depth, alias, directive and cost limits as one validation rule; it measures on entering the document. */
function operationLimitsRule(limits: GraphqlLimits): ValidationRule {
  return (context): ASTVisitor => ({
    Document(document) {
      for (const op of measureOperations(document)) {
        const which = op.name ? `Operation "${op.name}"` : "The operation";
        for (const [limit, message] of OVER_LIMIT) {
          if (op[limit] > limits[limit])
            context.reportError(limitError(message(which, op[limit], limits[limit]), limit, limits[limit], [op.node]));
        }
      }
      // Everything is measured from the document node; the rule need not visit the rest.
      return false;
    },
  });
}

/** Refuses `__schema` and `__type` (the introspection fields); `__typename` stays, clients rely on it. */
const noIntrospectionRule: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === "__schema" || node.name.value === "__type") {
      context.reportError(
        limitError("GraphQL introspection is disabled on this server.", "introspection", undefined, [node]),
      );
    }
  },
});

/**
 * Variables nested deeper than a REST body may be (MAX_INPUT_DEPTH, with REST's text): a 20,000-deep array in
 * a JSON-typed variable would otherwise reach recursive code (coercion, the copy of an operation's input)
 * and end as a 500. Walked without recursion; null when the variables are fine.
 */
export function variablesRefusal(variables: unknown): GraphQLError | null {
  if (variables === null || typeof variables !== "object") return null;
  // Each variable's value is what a REST body would be, so it is measured from one level below `variables`.
  const stack: Array<[unknown, number]> = Object.values(variables).map((v) => [v, 1]);
  while (stack.length) {
    const [value, level] = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (level > MAX_INPUT_DEPTH)
      return limitError(KERNEL_ERRORS.tooDeep(MAX_INPUT_DEPTH), "variables", MAX_INPUT_DEPTH);
    for (const child of Object.values(value)) stack.push([child, level + 1]);
  }
  return null;
}

/** The validation rules of the limits, added to graphql-js's own (and to the direct route's, direct.ts). */
export function documentRules(limits: GraphqlLimits, introspection: boolean): ValidationRule[] {
  return introspection ? [operationLimitsRule(limits)] : [operationLimitsRule(limits), noIntrospectionRule];
}

/** Parsed documents by their text (yoga's `parserAndValidationCache.documentCache`). */
export interface DocumentCache {
  get(text: string): DocumentNode | undefined;
  set(text: string, document: DocumentNode): void;
}

/**
 * The document limits (and, when off, introspection) as a yoga plugin. HTTP and WebSocket both parse and
 * validate through it (websocket.ts calls yoga's enveloped parse and validate).
 *
 * Over HTTP a document that cannot run answers 400. Validation errors are marked so as they come out of
 * validate. A parse error cannot be: yoga marks every parse error as one the GraphQL-over-HTTP spec defines
 * (answered 200 to an `application/json` client) after any plugin's hook. So the HTTP request's document
 * is parsed in onParams, before yoga's own parse, and a failure becomes the request's result there. The
 * document goes into `documents`, yoga's cache of parsed documents (its `parserAndValidationCache`), so yoga's
 * parse of the same text is a cache hit, and a text parsed before is not parsed again.
 */
export function documentLimits(
  limits: GraphqlLimits,
  options: { introspection: boolean; documents: DocumentCache },
): Plugin {
  const rules = documentRules(limits, options.introspection);
  const { documents } = options;
  return {
    onParams({ params, setResult }) {
      const deep = variablesRefusal(params.variables);
      if (deep) return setResult({ errors: [deep] });
      if (typeof params.query !== "string" || documents.get(params.query)) return;
      try {
        // What yoga's parse (the parse function set below, without options) would cache under this text.
        documents.set(params.query, parseWithinLimits(params.query, limits));
      } catch (error) {
        // The code yoga gives a parse error when it finds one itself.
        if (error instanceof GraphQLError) setResult({ errors: [asRefusal(error, "GRAPHQL_PARSE_FAILED")] });
      }
    },
    onParse({ setParseFn }) {
      setParseFn((source, parseOptions) => parseWithinLimits(source, limits, parseOptions));
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
      return ({ valid, result }) => {
        if (!valid) for (const error of result) asRefusal(error);
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Requests without a valid key: a budget per client address.

/** The address of the client an HTTP request came from: srvx puts it on the request (Node, Deno, Bun). */
export function clientAddress(request: Request): string | undefined {
  const ip = (request as Request & { ip?: unknown }).ip;
  return typeof ip === "string" && ip !== "" ? ip : undefined;
}

export interface AddressBudget {
  /** Counts one unauthenticated request or upgrade of `address`; null when the address is unknown (in process). */
  spend(address: string | undefined): Promise<RateLimitDecision | null>;
}

const RULE = "graphql unauthenticated";

export function addressBudget(limiter: RateLimiter, perMinute: number): AddressBudget {
  const windows: readonly RateWindow[] = [{ limit: perMinute, windowSeconds: 60 }];
  return {
    async spend(address) {
      if (address === undefined) return null;
      return limiter.check(`addr:${addressKey(address)}`, RULE, windows);
    },
  };
}

/** The 429 of an exhausted address budget, in the shape of every GraphQL error body. */
export function tooManyRequests(decision: RateLimitDecision): Response {
  const extensions = { code: codeFor(429), status: 429, retry_after_seconds: decision.retryAfterSeconds };
  return new Response(JSON.stringify({ errors: [{ message: KERNEL_ERRORS.rateLimited, extensions }] }), {
    status: 429,
    headers: { "content-type": "application/json; charset=utf-8", ...decision.headers },
  });
}
