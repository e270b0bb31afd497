// The GraphQL server: yoga over the derived schema, at /graphql. Queries and mutations over GET and POST,
// subscriptions over SSE (`Accept: text/event-stream`) from yoga itself, and over WebSocket when the
// Node server attaches transports/graphql/websocket.ts. `yoga.fetch` is a fetch handler, so the HTTP app
// (transports/http.ts) mounts it and the test kit reaches it through `app.fetch`, without a server.
// What a request may ask before anything runs (body, document, depth, aliases, cost, a budget for callers
// without a valid key) is limits.ts; introspection and GraphiQL follow GRAPHQL_INTROSPECTION.

import { type DocumentNode, GraphQLError, type GraphQLSchema, specifiedRules } from "graphql";
import { createLRUCache, createYoga, type GraphQLParams, type YogaServerInstance } from "graphql-yoga";
import type { HTTPResponse } from "h3";
import { FastResponse } from "srvx";
import { authenticate } from "../../core/auth.ts";
import { outageError } from "../../core/errors.ts";
import type { Kernel } from "../../core/kernel.ts";
import type { RateLimitDecision } from "../../core/rate-limit.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { type Caller, callerFromRequest, type GraphqlContext } from "./context.ts";
import { directRoute, readBody } from "./direct.ts";
import { codeFor, toGraphqlError } from "./errors.ts";
import {
  addressBudget,
  bodyLimit,
  clientAddress,
  documentLimits,
  documentRules,
  GRAPHQL_LIMITS,
  type GraphqlLimits,
  tooManyRequests,
} from "./limits.ts";
import { loadPersistedOperations, type PersistedOperations } from "./persisted.ts";
import { buildGraphqlSchema } from "./schema.ts";
import { type SubscriptionLimits, subscriptionLimitsOf, subscriptionLimitsPlugin } from "./subscription-limits.ts";
import { subscribeToJob } from "./subscriptions.ts";

export const GRAPHQL_PATH = "/graphql";

/** What the WebSocket transport hands yoga in place of an HTTP request's headers. */
export interface ServerContext {
  caller?: Caller;
}

export type Yoga = YogaServerInstance<ServerContext, GraphqlContext>;

export interface GraphqlServer {
  /**
   * Answers an HTTP request to /graphql: a plain JSON POST of a query or mutation through the direct route
   * (direct.ts), anything else through yoga.
   */
  fetch(request: Request): Promise<Response | HTTPResponse>;
  yoga: Yoga;
  /** The persisted-operations manifest when one is configured (the WebSocket transport resolves with it too). */
  persisted: PersistedOperations | undefined;
  schema: GraphQLSchema;
  /** The limits in force (the WebSocket transport caps its frames with them). */
  limits: Readonly<GraphqlLimits>;
  /** Whether an Authorization value carries a valid key of an active account. */
  hasValidKey(authorization: string | null): Promise<boolean>;
  /** The partner whose valid key an Authorization value carries, or null. */
  partnerOf(authorization: string | null): Promise<string | null>;
  /** Open subscriptions against their caps, per partner (the WebSocket transport adds its per-socket cap). */
  subscriptions: SubscriptionLimits;
  /**
   * Counts one HTTP request or WebSocket upgrade without a valid key against its client address's budget
   * (limits.ts); null when it may go on (also when the address is unknown or the counters cannot be reached).
   */
  refuseUnauthenticated(address: string | undefined): Promise<RateLimitDecision | null>;
}

export interface GraphqlOptions {
  /**
   * The GraphiQL page on GET /graphql for browsers; it calls the API with the key you give it. Default: the
   * kernel's `graphqlIntrospection` (GRAPHQL_INTROSPECTION), since GraphiQL without introspection is blind.
   */
  graphiql?: boolean;
  /** Schema introspection (`__schema`, `__type`). Default: the kernel's `graphqlIntrospection`. */
  introspection?: boolean;
  /**
   * The direct route for plain JSON POSTs of queries and mutations (direct.ts). Default on; off only so tests
   * and benchmarks can hold it against yoga answering the same requests.
   */
  direct?: boolean;
  /** Replaces some of GRAPHQL_LIMITS (tests). */
  limits?: Partial<GraphqlLimits>;
}

/** A GraphQLError we (or graphql-js, for a bad document) raised on purpose, not one wrapping a thrown bug. */
function isOriginalGraphqlError(error: unknown): boolean {
  if (!(error instanceof GraphQLError)) return false;
  return error.originalError == null || isOriginalGraphqlError(error.originalError);
}

export function createGraphql(kernel: Kernel, options: GraphqlOptions = {}): GraphqlServer {
  // The kernel's operation table, the one REST reads too: no operation is compiled here.
  const invokers = new Map(kernel.operations.map((entry) => [entry.op, entry.invoke]));
  const schema = buildGraphqlSchema(kernel.registry, {
    invoke: (op) => invokers.get(op)!,
    jobUpdates: (caller, jobId) => subscribeToJob(kernel, caller, jobId),
    onInternal: (where, error) => kernel.log.error(`GraphQL ${where} failed`, error),
  });
  const limits: Readonly<GraphqlLimits> = Object.freeze({ ...GRAPHQL_LIMITS, ...options.limits });
  const introspection = options.introspection ?? kernel.config.graphqlIntrospection;
  const persisted = loadPersistedOperations(
    kernel.config.graphqlPersistedOperations,
    kernel.config.graphqlPersistedOnly,
  );
  const unauthenticated = addressBudget(kernel.limiter, limits.unauthenticatedPerMinute);
  const partnerOf = async (authorization: string | null): Promise<string | null> => {
    if (!authorization) return null;
    try {
      return (await authenticate(kernel.accounts, authorization)).id;
    } catch {
      return null;
    }
  };
  const hasValidKey = async (authorization: string | null): Promise<boolean> =>
    (await partnerOf(authorization)) !== null;
  const subscriptions = subscriptionLimitsOf(kernel);
  const refuseUnauthenticated = async (address: string | undefined): Promise<RateLimitDecision | null> => {
    try {
      const decision = await unauthenticated.spend(address);
      return decision && !decision.allowed ? decision : null;
    } catch (error) {
      // Counters unreachable: the document limits still hold, and refusing here would refuse everyone.
      kernel.log.warn("GraphQL: the budget of unauthenticated callers could not be counted", error);
      return null;
    }
  };

  // The caller of each HTTP request, so its rate-limit headers can be put on the response.
  const callers = new WeakMap<Request, Caller>();
  const callerOf = (request: Request): Caller => {
    let c = callers.get(request);
    if (!c) callers.set(request, (c = callerFromRequest(request)));
    return c;
  };

  // The budget of callers without a valid key, over the network only: a request handed to app.fetch in
  // process has no client address. A request the direct route has counted and handed to yoga is not counted again.
  const admitted = new WeakSet<Request>();
  const admit = async (request: Request): Promise<Response | null> => {
    if (admitted.has(request)) return null;
    const address = clientAddress(request);
    if (address === undefined || (await hasValidKey(request.headers.get("authorization")))) return null;
    const refused = await refuseUnauthenticated(address);
    return refused ? tooManyRequests(refused) : null;
  };

  // Parsed documents by text, yoga's cache (its defaults: 1,024 for an hour), which the document limits fill
  // when they parse a request's document ahead of yoga (limits.ts).
  const documents = createLRUCache<DocumentNode>();

  // Errors our resolvers raise are GraphQLErrors carrying the REST text and pass unmasked. Anything else
  // (a bug, a declaration whose output lies about a required field) is masked with the REST sentence,
  // and never with details, whatever NODE_ENV says (invariant 7).
  function maskError(error: unknown, message = "Unexpected error."): GraphQLError {
    if (isOriginalGraphqlError(error)) return error as GraphQLError;
    const original = (error as { originalError?: unknown }).originalError ?? error;
    kernel.log.error(`GraphQL: ${message}`, original);
    const located = error instanceof GraphQLError ? error : undefined;
    // An outage (a database or Redis out of reach, a full disk) is its 503 or 507, as in a resolver.
    const outage = outageError(original);
    if (outage)
      return new GraphQLError(outage.message, {
        nodes: located?.nodes,
        path: located?.path,
        extensions: toGraphqlError(outage, {}, () => {}).extensions,
      });
    return new GraphQLError(KERNEL_ERRORS.internal, {
      nodes: located?.nodes,
      path: located?.path,
      extensions: { code: codeFor(500), status: 500 },
    });
  }

  let graphiqlPage: Promise<string> | undefined;
  const yoga = createYoga<ServerContext, GraphqlContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    // The runtime's own classes, not yoga's ponyfills: h3 (and Deno) recognise only a native Response. The
    // Response is srvx's, the one h3 answers with: a native Response to every reader (it is one under Deno),
    // which under Node writes its text straight to the socket with a Content-Length instead of reading a
    // web stream back chunk by chunk (me.bench: a fifth of a GraphQL request's CPU).
    fetchAPI: {
      Request,
      Response: FastResponse,
      Headers,
      ReadableStream,
      TextEncoder,
      TextDecoder,
      URL,
      URLSearchParams,
      fetch,
      FormData,
      Blob,
      File,
    },
    graphiql: options.graphiql ?? introspection,
    // GraphiQL from the npm package, not yoga's default page, which loads it from a CDN (blank offline). The
    // package is 9 MB of JavaScript: imported on the first page asked for, then the page is kept.
    renderGraphiQL: (opts) =>
      (graphiqlPage ??= import("@graphql-yoga/render-graphiql").then((m) => m.renderGraphiQL(opts))),
    // The body cap is bodyLimit (limits.ts): the same checks, without re-streaming a body of declared length.
    maxRequestBodySize: false,
    parserAndValidationCache: { documentCache: documents },
    landingPage: false,
    // Like the REST API, which sends no CORS headers: keys belong on servers, not in browsers.
    cors: false,
    logging: {
      debug: (...args: unknown[]) => kernel.log.debug(String(args[0]), ...args.slice(1)),
      info: (...args: unknown[]) => kernel.log.info(String(args[0]), ...args.slice(1)),
      warn: (...args: unknown[]) => kernel.log.warn(String(args[0]), ...args.slice(1)),
      error: (...args: unknown[]) => kernel.log.error(String(args[0]), ...args.slice(1)),
    },
    maskedErrors: { maskError },
    context: ({ request, caller }) => ({ caller: caller ?? callerOf(request) }),
    plugins: [
      {
        async onRequest({ request, endResponse }) {
          const refused = await admit(request);
          if (refused) endResponse(refused);
        },
      },
      // Before the document limits: an id becomes its published document, and in allow-list mode any other
      // document is refused before it is parsed at all.
      ...(persisted
        ? [
            {
              onParams({
                params,
                setParams,
                request,
              }: {
                params: GraphQLParams;
                setParams: (p: GraphQLParams) => void;
                request: Request;
              }) {
                const { documentId: sent, ...rest } = params as GraphQLParams & { documentId?: unknown };
                // yoga's GET parser keeps only the parameters it knows: documentId is read from the URL there.
                const documentId =
                  sent ??
                  (request.method === "GET"
                    ? (new URL(request.url).searchParams.get("documentId") ?? undefined)
                    : undefined);
                const resolved = persisted.resolve({ ...rest, documentId });
                if (resolved === null) return;
                if ("error" in resolved) throw resolved.error;
                // Without documentId: yoga refuses a parameter it does not know.
                setParams({ ...rest, query: resolved.query });
              },
            },
          ]
        : []),
      documentLimits(limits, { introspection, documents }),
      bodyLimit(limits.bodyBytes),
      subscriptionLimitsPlugin(subscriptions, partnerOf),
      {
        onResponse({ request, response }) {
          const caller = callers.get(request);
          if (!caller) return;
          for (const [k, v] of Object.entries(caller.rateLimit.headers)) response.headers.set(k, v);
        },
      },
    ],
  });

  const useDirect = options.direct ?? true;
  const direct = directRoute({
    schema,
    limits,
    documents,
    rules: [...specifiedRules, ...documentRules(limits, introspection)],
    mask: (error) => maskError(error),
    context: (request) => ({ caller: callerOf(request) }),
    responseHeaders: (request) => callers.get(request)?.rateLimit.headers,
  });

  const answerHttp = async (request: Request): Promise<Response | HTTPResponse> => {
    // Persisted operations change what a body means: yoga's plugin (above) resolves them.
    // yoga is reached through `server`, so a test can watch which requests reach it (test/graphql/direct.test.ts).
    if (!useDirect || persisted || !direct.eligible(request)) return server.yoga.fetch(request);
    const refused = await admit(request);
    if (refused) return refused;
    const body = await readBody(request, limits.bodyBytes);
    if ("text" in body) {
      const answer = await direct.answer(request, body.text);
      if (answer) return answer;
    }
    // The same body to yoga, with the client address its hooks read; already counted against the budget.
    const init = {
      method: request.method,
      headers: request.headers,
      signal: request.signal,
      ...("text" in body ? { body: body.text } : { body: body.stream, duplex: "half" }),
    };
    const again = new Request(request.url, init as RequestInit);
    const address = clientAddress(request);
    if (address !== undefined) Object.defineProperty(again, "ip", { value: address });
    // The h3 event's context, where the access log finds the partner (context.ts).
    const context = (request as Request & { context?: unknown }).context;
    if (context !== undefined) Object.defineProperty(again, "context", { value: context });
    admitted.add(again);
    return server.yoga.fetch(again);
  };

  const server: GraphqlServer = {
    fetch: answerHttp,
    yoga,
    persisted,
    schema,
    limits,
    hasValidKey,
    partnerOf,
    subscriptions,
    refuseUnauthenticated,
  };
  return server;
}
