// The GraphQL server: yoga over the derived schema, at /graphql. Queries and mutations over GET and POST,
// subscriptions over SSE (`Accept: text/event-stream`) from yoga itself, and over WebSocket when the
// Node server attaches transports/graphql/websocket.ts. `yoga.fetch` is a fetch handler, so the HTTP app
// (transports/http.ts) mounts it and the test kit reaches it through `app.fetch`, without a server.
import { createYoga, type YogaServerInstance } from "graphql-yoga";
import { GraphQLError, type GraphQLSchema } from "graphql";
import { KERNEL_ERRORS } from "../../core/errors.ts";
import type { Kernel } from "../../core/kernel.ts";
import { callerFromRequest, type Caller, type GraphqlContext } from "./context.ts";
import { codeFor } from "./errors.ts";
import { buildGraphqlSchema, DEFAULT_MAX_BODY } from "./schema.ts";
import { subscribeToJob } from "./subscriptions.ts";

export const GRAPHQL_PATH = "/graphql";

/** What the WebSocket transport hands yoga in place of an HTTP request's headers. */
export interface ServerContext {
  caller?: Caller;
}

export type Yoga = YogaServerInstance<ServerContext, GraphqlContext>;

export interface GraphqlServer {
  yoga: Yoga;
  schema: GraphQLSchema;
}

export interface GraphqlOptions {
  /** The GraphiQL page on GET /graphql for browsers (default on); it calls the API with the key you give it. */
  graphiql?: boolean;
}

// Room for the document and variables around the largest body an operation accepts.
const DOCUMENT_ALLOWANCE = 1_000_000;

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
  const maxBody = Math.max(DEFAULT_MAX_BODY, ...kernel.registry.operations.map((op) => op.declaration.maxBodyBytes ?? DEFAULT_MAX_BODY)) + DOCUMENT_ALLOWANCE;

  // The caller of each HTTP request, so its rate-limit headers can be put on the response.
  const callers = new WeakMap<Request, Caller>();

  const yoga = createYoga<ServerContext, GraphqlContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    // The runtime's own classes, not yoga's ponyfills: h3 (and Deno) recognise only a native Response.
    fetchAPI: { Request, Response, Headers, ReadableStream, TextEncoder, TextDecoder, URL, URLSearchParams, fetch, FormData, Blob, File },
    graphiql: options.graphiql ?? true,
    landingPage: false,
    // Like the REST API, which sends no CORS headers: keys belong on servers, not in browsers.
    cors: false,
    logging: {
      debug: (...args: unknown[]) => kernel.log.debug(String(args[0]), ...args.slice(1)),
      info: (...args: unknown[]) => kernel.log.info(String(args[0]), ...args.slice(1)),
      warn: (...args: unknown[]) => kernel.log.warn(String(args[0]), ...args.slice(1)),
      error: (...args: unknown[]) => kernel.log.error(String(args[0]), ...args.slice(1)),
    },
    // Errors our resolvers raise are GraphQLErrors carrying the REST text and pass unmasked. Anything else
    // (a bug, a declaration whose output lies about a required field) is masked with the REST sentence,
    // and never with details, whatever NODE_ENV says (invariant 7).
    maskedErrors: {
      maskError(error, message) {
        if (isOriginalGraphqlError(error)) return error as GraphQLError;
        kernel.log.error(`GraphQL: ${message}`, (error as { originalError?: unknown }).originalError ?? error);
        const located = error instanceof GraphQLError ? error : undefined;
        return new GraphQLError(KERNEL_ERRORS.internal, { nodes: located?.nodes, path: located?.path, extensions: { code: codeFor(500), status: 500 } });
      },
    },
    context: ({ request, caller }) => {
      if (caller) return { caller };
      let c = callers.get(request);
      if (!c) callers.set(request, (c = callerFromRequest(request)));
      return { caller: c };
    },
    plugins: [
      {
        onRequest({ request, endResponse }) {
          const length = Number(request.headers.get("content-length") ?? 0);
          if (length > maxBody) {
            const body = { errors: [{ message: KERNEL_ERRORS.bodyTooLarge, extensions: { code: codeFor(413), status: 413 } }] };
            endResponse(new Response(JSON.stringify(body), { status: 413, headers: { "content-type": "application/json; charset=utf-8" } }));
          }
        },
        onResponse({ request, response }) {
          const caller = callers.get(request);
          if (!caller) return;
          for (const [k, v] of Object.entries(caller.rateLimit.headers)) response.headers.set(k, v);
        },
      },
    ],
  });
  return { yoga, schema };
}
