// GraphQL over WebSocket (the graphql-ws protocol) on the Node server, at the same /graphql path. Every
// operation runs through yoga's envelope, so the schema, the context, error masking and the operation
// pipeline are the ones HTTP uses. Browsers cannot set headers on a WebSocket, so the key may come in
// `connectionParams` (`authorization` or `Authorization`); the User-Agent is the upgrade request's.
//
// What a socket may do before it proves a key is bounded (limits.ts): a frame is at most
// `websocketFrameBytes` (ws closes the socket with 1009 before buffering more); an upgrade without a valid
// key in its headers spends the client address's budget of unauthenticated calls (429 when it is spent);
// `connection_init` must carry a valid key or the socket is closed with 4403 Forbidden. Documents sent in
// `subscribe` go through yoga's enveloped parse and validate, so the document limits hold here as over HTTP.
// Subscriptions are capped per socket and per partner (subscription-limits.ts): one over either cap gets an
// `error` message for its id, and the socket goes on serving the others.
import type { Server as HttpServer, IncomingMessage } from "node:http";
import type { Http2Server } from "node:http2";
import { type ExecutionArgs, GraphQLError, getOperationAST, type OperationTypeNode } from "graphql";
import type { Context } from "graphql-ws";
import { type Extra, useServer } from "graphql-ws/use/ws";
import { type VerifyClientCallbackAsync, WebSocketServer } from "ws";
import type { Caller } from "./context.ts";
import { parseWithinLimits, variablesRefusal, withoutHttp } from "./limits.ts";
import { SocketSubscriptions, withSlot } from "./subscription-limits.ts";
import { GRAPHQL_PATH, type GraphqlServer } from "./yoga.ts";

function header(request: IncomingMessage, name: string): string | null {
  const v = request.headers[name];
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
}

function callerFromSocket(
  request: IncomingMessage,
  connectionParams: Readonly<Record<string, unknown>> | undefined,
): Caller {
  const fromParams = connectionParams?.authorization ?? connectionParams?.Authorization;
  const authorization = typeof fromParams === "string" ? fromParams : header(request, "authorization");
  const headers = new Headers();
  for (const [k, v] of Object.entries(request.headers)) if (typeof v === "string") headers.set(k, v);
  if (authorization) headers.set("authorization", authorization);
  return {
    authorization,
    userAgent: header(request, "user-agent"),
    // Handlers may read the request; this one carries the upgrade request's URL and headers.
    request: new Request(new URL(request.url ?? GRAPHQL_PATH, `http://${header(request, "host") ?? "localhost"}`), {
      headers,
    }),
    rateLimit: { headers: {}, refused: false },
  };
}

export interface GraphqlWebSocket {
  close(): Promise<void>;
}

type Enveloped = ReturnType<GraphqlServer["yoga"]["getEnveloped"]>;
type RootValue = { execute: Enveloped["execute"]; subscribe: Enveloped["subscribe"] };
type SocketContext = Context<Record<string, unknown>, Extra>;

export function attachGraphqlWebSocket(server: HttpServer | Http2Server, graphql: GraphqlServer): GraphqlWebSocket {
  // Before the handshake: a key in the upgrade's own headers, or one unit of the address's budget.
  const verifyClient: VerifyClientCallbackAsync = ({ req }, done) => {
    void (async () => {
      if (await graphql.hasValidKey(header(req, "authorization"))) return done(true);
      const refused = await graphql.refuseUnauthenticated(req.socket.remoteAddress);
      if (!refused) return done(true);
      done(false, 429, "Too Many Requests", { ...refused.headers, "Content-Type": "text/plain; charset=utf-8" });
    })().catch(() => done(false, 500));
  };
  const wss = new WebSocketServer({
    server: server as HttpServer,
    path: GRAPHQL_PATH,
    maxPayload: graphql.limits.websocketFrameBytes,
    verifyClient,
  });
  // ws reports a peer's protocol violation (a frame over maxPayload, invalid UTF-8, a bad opcode: codes
  // WS_ERR_*) as an 'error' on the socket, after closing it itself with the matching code (1009, 1007, 1002).
  // graphql-ws prints every socket error to stderr as an internal error, so any client could fill the logs
  // with oversized frames; these are the client's errors, not ours, and stop here. (Registered before
  // useServer's own 'connection' listener, so every socket is wrapped before it can receive a frame.)
  wss.on("connection", (socket) => {
    const emit = socket.emit.bind(socket);
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (event === "error" && /^WS_ERR_/.test(String((args[0] as { code?: unknown } | undefined)?.code))) return false;
      return emit(event, ...args);
    }) as typeof socket.emit;
  });
  // Each socket's open subscriptions, released when they complete (onComplete) or the socket closes (onClose).
  const open = new WeakMap<SocketContext, SocketSubscriptions>();
  const held = (ctx: SocketContext) => {
    let s = open.get(ctx);
    if (!s) open.set(ctx, (s = new SocketSubscriptions()));
    return s;
  };
  const limits = graphql.subscriptions;
  // A socket's partner, looked up once: its key was checked at connection_init, and a key revoked since is
  // refused by the stream itself (subscriptions.ts); here it only names whose cap a subscription counts under.
  const partners = new WeakMap<SocketContext, Promise<string | null>>();
  const partnerOf = (ctx: SocketContext) => {
    let p = partners.get(ctx);
    if (!p)
      partners.set(
        ctx,
        (p = graphql.partnerOf(callerFromSocket(ctx.extra.request, ctx.connectionParams).authorization)),
      );
    return p;
  };
  // The kind of a document's operation, by its text: a flood repeats one document, and a refusal at the caps
  // is then decided before the envelope, the context and the variables are made (20,000 subscribes on ten
  // sockets held /healthz 10 s when each was refused only after all of that). Anything unusual (a persisted
  // id, a document that does not parse) is left to the full path below, which checks the caps again.
  const kinds = new Map<string, OperationTypeNode | null>();
  const kindOf = (query: unknown, operationName: unknown): OperationTypeNode | null => {
    if (typeof query !== "string") return null;
    const k = `${typeof operationName === "string" ? operationName : ""}\n${query}`;
    let kind = kinds.get(k);
    if (kind === undefined) {
      try {
        kind =
          getOperationAST(
            parseWithinLimits(query, graphql.limits),
            typeof operationName === "string" ? operationName : undefined,
          )?.operation ?? null;
      } catch {
        kind = null;
      }
      if (kinds.size >= 256) kinds.clear();
      kinds.set(k, kind);
    }
    return kind;
  };
  const disposable = useServer<Record<string, unknown>>(
    {
      // No valid key in connection_init (or the upgrade's headers): graphql-ws closes with 4403 Forbidden.
      onConnect: (ctx) => graphql.hasValidKey(callerFromSocket(ctx.extra.request, ctx.connectionParams).authorization),
      execute: (args) => (args.rootValue as RootValue).execute(args),
      subscribe: (args) => (args.rootValue as RootValue).subscribe(args),
      onSubscribe: async (ctx, id, payload) => {
        if (kindOf(payload.query, payload.operationName) === "subscription") {
          if (!limits.admitsOnSocket(held(ctx).size)) return [limits.error("per_socket")];
          const partner = await partnerOf(ctx);
          if (partner !== null && !limits.admitsKey(partner)) return [limits.error("per_key")];
        }
        const caller = callerFromSocket(ctx.extra.request, ctx.connectionParams);
        const { schema, execute, subscribe, contextFactory, parse, validate } = graphql.yoga.getEnveloped({
          ...ctx,
          request: caller.request,
          params: payload,
          caller,
        } as never);
        const deep = variablesRefusal(payload.variables);
        if (deep) return [withoutHttp(deep)];
        // The same manifest and allow-list as over HTTP (persisted.ts): WebSocket is no way around it.
        const resolved = graphql.persisted?.resolve(payload as typeof payload & { documentId?: unknown }) ?? null;
        if (resolved && "error" in resolved) return [withoutHttp(resolved.error)];
        let document;
        try {
          document = parse(resolved ? resolved.query : payload.query);
        } catch (error) {
          if (error instanceof GraphQLError) return [withoutHttp(error)];
          throw error;
        }
        const errors = validate(schema, document);
        if (errors.length) return errors.map(withoutHttp);
        let contextValue = await contextFactory();
        if (getOperationAST(document, payload.operationName)?.operation === "subscription") {
          // Taken last, after every other refusal, so nothing between here and execution can drop it; and
          // both caps checked and taken in one turn, after the last await: a socket's subscribes run side by side.
          const partner = await partnerOf(ctx);
          const socket = held(ctx);
          if (!limits.admitsOnSocket(socket.size)) return [limits.error("per_socket")];
          if (partner !== null) {
            const slot = limits.acquire(partner);
            if (!slot) return [limits.error("per_key")];
            // The socket closed while the key was checked: its onClose has run, nothing would release this.
            // (graphql-ws sends nothing for an id of a closed socket; the error only stops the operation.)
            if (ctx.extra.socket.readyState !== ctx.extra.socket.OPEN) {
              slot.release();
              return [new GraphQLError("The connection closed.")];
            }
            socket.hold(id, slot);
            contextValue = withSlot(contextValue, slot);
          }
        }
        const args: ExecutionArgs = {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute, subscribe } satisfies RootValue,
        };
        return args;
      },
      onComplete: (ctx, id) => open.get(ctx)?.release(id),
      onClose: (ctx) => open.get(ctx)?.releaseAll(),
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
