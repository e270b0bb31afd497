// GraphQL over WebSocket (the graphql-ws protocol) on the Node server, at the same /graphql path. Every
// operation runs through yoga's envelope, so the schema, the context, error masking and the operation
// pipeline are the ones HTTP uses. Browsers cannot set headers on a WebSocket, so the key may come in
// `connectionParams` (`authorization` or `Authorization`); the User-Agent is the upgrade request's.
import type { IncomingMessage, Server as HttpServer } from "node:http";
import type { Http2Server } from "node:http2";
import { GraphQLError, type ExecutionArgs } from "graphql";
import { useServer } from "graphql-ws/use/ws";
import { WebSocketServer } from "ws";
import type { Caller } from "./context.ts";
import { GRAPHQL_PATH, type GraphqlServer } from "./yoga.ts";

function header(request: IncomingMessage, name: string): string | null {
  const v = request.headers[name];
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
}

function callerFromSocket(request: IncomingMessage, connectionParams: Readonly<Record<string, unknown>> | undefined): Caller {
  const fromParams = connectionParams?.authorization ?? connectionParams?.Authorization;
  const authorization = typeof fromParams === "string" ? fromParams : header(request, "authorization");
  const headers = new Headers();
  for (const [k, v] of Object.entries(request.headers)) if (typeof v === "string") headers.set(k, v);
  if (authorization) headers.set("authorization", authorization);
  return {
    authorization,
    userAgent: header(request, "user-agent"),
    // Handlers may read the request; this one carries the upgrade request's URL and headers.
    request: new Request(new URL(request.url ?? GRAPHQL_PATH, `http://${header(request, "host") ?? "localhost"}`), { headers }),
    rateLimit: { headers: {}, refused: false },
  };
}

export interface GraphqlWebSocket {
  close(): Promise<void>;
}

type Enveloped = ReturnType<GraphqlServer["yoga"]["getEnveloped"]>;
type RootValue = { execute: Enveloped["execute"]; subscribe: Enveloped["subscribe"] };

export function attachGraphqlWebSocket(server: HttpServer | Http2Server, graphql: GraphqlServer): GraphqlWebSocket {
  const wss = new WebSocketServer({ server: server as HttpServer, path: GRAPHQL_PATH });
  const disposable = useServer<Record<string, unknown>>(
    {
      execute: (args) => (args.rootValue as RootValue).execute(args),
      subscribe: (args) => (args.rootValue as RootValue).subscribe(args),
      onSubscribe: async (ctx, _id, payload) => {
        const caller = callerFromSocket(ctx.extra.request, ctx.connectionParams);
        const { schema, execute, subscribe, contextFactory, parse, validate } = graphql.yoga.getEnveloped({
          ...ctx,
          request: caller.request,
          params: payload,
          caller,
        } as never);
        let document;
        try {
          document = parse(payload.query);
        } catch (error) {
          if (error instanceof GraphQLError) return [error];
          throw error;
        }
        const errors = validate(schema, document);
        if (errors.length) return errors;
        const args: ExecutionArgs = {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe } satisfies RootValue,
        };
        return args;
      },
    },
    wss,
  );
  return {
    async close() {
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
