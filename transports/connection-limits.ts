// What one client may hold of a Node HTTP server before it sends a full request: time-outs for the headers and
// a minimum rate for the body, caps on open connections per client address and in all. Without them (Node's
// defaults: headers 60 s checked every 30 s, a whole request 300 s, no cap) 19,960 half-open header connections
// from one client filled the process's file descriptors in 19 s, and /healthz, /media and the database's own
// files were refused until they closed (issue 45).
//
// The choices, and why:
//   - headers within 10 s (HTTP_HEADERS_TIMEOUT_MS): an API client sends its headers in one write; 10 s is
//     generous for a bad mobile link and a sixth of Node's default. Node checks every
//     `connectionsCheckingInterval`, set here to a tenth of the time-out (at most 1 s) so the time-out means
//     what it says; an expired connection is answered 408 and closed (Node's own answer, see `clientError`).
//   - a body at 1 KB/s at least over each 10 s window (HTTP_BODY_TIMEOUT_MS, HTTP_BODY_MIN_BYTES_PER_S),
//     rather than a time for the whole body: an upload of 100 MB at a good rate takes minutes and is welcome, a
//     body that drips a byte a second is not. A window in which the server is not reading the body (the
//     socket is paused because the handler has not taken what it has) is not the client's fault and does not
//     count. A cut body's connection is closed: its answer may already be on its way, so no status is written.
//   - 256 connections per address (HTTP_CONNECTIONS_PER_ADDRESS): a browser opens 6 per host, an SDK's pool
//     a few dozen; a NAT of a whole office stays under it. IPv6 addresses count by their /64, the block one
//     subscriber gets. Behind a proxy every connection has the proxy's address: 0 turns the cap off there.
//   - in all (HTTP_CONNECTIONS_MAX), the open-file limit less a fifth (at least 256 kept back for the database,
//     media files, ffmpeg's pipes and the probe port), at most 10,000: past it the process would refuse its
//     own files, which is what made /media fail. Node closes a connection over it before making a socket
//     of it (`server.maxConnections`, counted from its `drop` event).
//   - HEALTH_PORT gets its own small cap (64) and no per-address cap (a kubelet probes from one address), so
//     its probes answer whatever the public port holds.
// A connection over a cap is closed at once, before a byte is read: answering it would mean reading its
// request, which is what the cap is there to spare.
//
// Node only: under Deno, srvx exposes no node:http server and the runtime's own time-outs hold (docs/configuration.md).

import { readFileSync } from "node:fs";
import type { IncomingMessage, Server } from "node:http";
import type { Http2Server } from "node:http2";
import type { Socket } from "node:net";
import type { ConnectionSettings } from "../core/config.ts";
import { addressKey } from "./address-key.ts";
import { KeyedCounts } from "./keyed-counts.ts";

export type ConnectionRefusal = "per_address" | "max";
export type TimeoutPhase = "headers" | "body";

/** The counts /metrics shows for one listener (transports/metrics.ts). */
export interface ConnectionCounts {
  /** `public` (PORT), `health` (HEALTH_PORT) or `admin` (a port of the admin API's own, with the public caps). */
  readonly listener: string;
  open(): number;
  readonly refused: Record<ConnectionRefusal, number>;
  readonly timeouts: Record<TimeoutPhase, number>;
}

/** The caps of one listener; 0 is off. */
export interface ConnectionCaps {
  perAddress: number;
  max: number;
}

const HEALTH_CAPS: ConnectionCaps = { perAddress: 0, max: 64 };
const MAX_CEILING = 10_000;
const MIN_HEADROOM = 256;
/** Without a readable limit (not Linux): what most systems give a service. */
const FALLBACK_FD_LIMIT = 4_096;

/** The soft open-file limit of this process (Linux: /proc/self/limits), or undefined. */
export function openFileLimit(limits = () => readFileSync("/proc/self/limits", "utf8")): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits());
    if (!m) return undefined;
    return m[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** HTTP_CONNECTIONS_MAX when unset: below the open-file limit with room for everything else the process opens. */
export function defaultConnectionsMax(fdLimit = openFileLimit() ?? FALLBACK_FD_LIMIT): number {
  if (!Number.isFinite(fdLimit)) return MAX_CEILING;
  const headroom = Math.max(MIN_HEADROOM, Math.ceil(fdLimit / 5));
  return Math.max(1, Math.min(MAX_CEILING, fdLimit - headroom));
}

/**
 * Open connections by address and in all, against the caps: a pure count, so it can be tested without
 * sockets. `admit` says why a connection is refused (and counts the refusal), or counts it in.
 */
export class ConnectionLedger extends KeyedCounts {
  readonly refused: Record<ConnectionRefusal, number> = { per_address: 0, max: 0 };

  constructor(readonly caps: ConnectionCaps) {
    super();
  }

  /** How many addresses hold a connection (the map's size: it must drop to 0 when all close). */
  get addresses(): number {
    return this.keys;
  }

  admit(key: string | undefined): ConnectionRefusal | null {
    if (this.caps.max > 0 && this.open >= this.caps.max) return this.#refuse("max");
    const counted = this.#counted(key);
    if (counted !== undefined && this.heldBy(counted) >= this.caps.perAddress) return this.#refuse("per_address");
    this.add(counted);
    return null;
  }

  /** One admitted connection closed (`key` as it was admitted under). */
  release(key: string | undefined): void {
    this.remove(this.#counted(key));
  }

  /** The address a connection is counted under: none without one, or when there is no cap per address. */
  #counted(key: string | undefined): string | undefined {
    return this.caps.perAddress > 0 ? key : undefined;
  }

  /** Counts a refusal made elsewhere (Node's own `maxConnections`). */
  refusedElsewhere(reason: ConnectionRefusal): void {
    this.refused[reason]++;
  }

  #refuse(reason: ConnectionRefusal): ConnectionRefusal {
    this.refused[reason]++;
    return reason;
  }
}

/** Bodies being received, checked each window against the minimum rate. */
export class BodyRateWatch {
  readonly #watched = new Map<IncomingMessage, { since: number; bytes: number }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly windowMs: number,
    readonly minBytesPerS: number,
    private readonly onSlow: (request: IncomingMessage) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get watching(): number {
    return this.#watched.size;
  }

  /** Watches `request`'s body until it is complete or its connection closes. */
  watch(request: IncomingMessage): void {
    if (request.complete) return;
    this.#watched.set(request, { since: this.now(), bytes: request.socket.bytesRead });
    request.once("close", () => this.#watched.delete(request));
    this.#timer ??= setInterval(() => this.check(), Math.max(50, Math.min(this.windowMs, 1_000))).unref();
  }

  /** One look at every watched body (the timer's; tests call it with their own clock). */
  check(): void {
    const now = this.now();
    for (const [request, w] of this.#watched) {
      const socket = request.socket;
      if (request.complete || !socket || socket.destroyed) {
        this.#watched.delete(request);
        continue;
      }
      const elapsed = now - w.since;
      if (elapsed < this.windowMs) continue;
      const read = socket.bytesRead;
      // Paused: the handler has not taken what arrived, so the client is not the slow one.
      const held = socket.isPaused() || request.readableLength >= request.readableHighWaterMark;
      if (!held && read - w.bytes < (this.minBytesPerS * elapsed) / 1000) {
        this.#watched.delete(request);
        this.onSlow(request);
        continue;
      }
      w.since = now;
      w.bytes = read;
    }
    if (this.#watched.size === 0) this.stop();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

function hasBody(request: IncomingMessage): boolean {
  const length = request.headers["content-length"];
  return (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined;
}

// What Node writes itself when no `clientError` listener is registered (lib/_http_server.js).
const NODE_ANSWERS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n",
  HPE_HEADER_OVERFLOW: "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n",
  HPE_CHUNK_EXTENSIONS_OVERFLOW: "HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n",
};
const BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";

const countsByServer = new WeakMap<object, ConnectionCounts[]>();

/** Every listener's counts registered under `owner` (the kernel), for /metrics. */
export function connectionCountsOf(owner: object): readonly ConnectionCounts[] {
  return countsByServer.get(owner) ?? [];
}

export interface GuardedServer {
  readonly counts: ConnectionCounts;
  readonly ledger: ConnectionLedger;
  /** Stops the body-rate timer (the server's close does the rest). */
  stop(): void;
}

/**
 * Applies the time-outs and caps to a node:http server (before or after it listens) and registers its counts
 * under `owner`. `listener` names it on /metrics; `health` gives it the probe port's caps, any other the public ones.
 */
export function guardConnections(
  node: Server | Http2Server,
  settings: ConnectionSettings,
  options: { owner: object; listener: "public" | "health" | "admin" },
): GuardedServer {
  // srvx serves HTTP/1 here (an HTTP/2 server only with TLS, which main.ts never asks for); both share these.
  const server = node as Server;
  const caps: ConnectionCaps =
    options.listener === "health"
      ? HEALTH_CAPS
      : { perAddress: settings.perAddress, max: settings.max ?? defaultConnectionsMax() };
  const ledger = new ConnectionLedger({ perAddress: caps.perAddress, max: 0 });
  const timeouts: Record<TimeoutPhase, number> = { headers: 0, body: 0 };

  if (settings.headersTimeoutMs > 0) {
    server.headersTimeout = settings.headersTimeoutMs;
    // Node refuses a request time-out below the headers'; 0 (none) is left as it is.
    if (server.requestTimeout > 0 && server.requestTimeout < settings.headersTimeoutMs)
      server.requestTimeout = settings.headersTimeoutMs;
    // Read by Node when it starts its checking timer at listen: set it before then for it to hold.
    (server as Server & { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.max(
      100,
      Math.min(1_000, Math.floor(settings.headersTimeoutMs / 10)),
    );
  }
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;

  // The cap in all: Node closes the handle before a socket is made of it; `drop` tells us.
  if (caps.max > 0) server.maxConnections = caps.max;
  server.on("drop", () => ledger.refusedElsewhere("max"));

  // Before Node's own listener, so a refused connection never gets a parser.
  server.prependListener("connection", (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    if (ledger.admit(key) !== null) {
      socket.destroy();
      return;
    }
    socket.once("close", () => ledger.release(key));
  });

  const bodies =
    settings.bodyTimeoutMs > 0 && settings.bodyMinBytesPerS > 0
      ? new BodyRateWatch(settings.bodyTimeoutMs, settings.bodyMinBytesPerS, (request) => {
          timeouts.body++;
          request.socket.destroy();
        })
      : undefined;
  // Sockets whose request body is still coming: Node's whole-request time-out there is the body's.
  const receiving = new WeakSet<Socket>();
  server.on("request", (request: IncomingMessage) => {
    if (!hasBody(request) || request.complete) return;
    receiving.add(request.socket);
    request.once("end", () => receiving.delete(request.socket));
    bodies?.watch(request);
  });

  // Counted here; answered as Node would unless another listener answers (http-conventions.ts may write the spec's
  // shape for malformed requests): with any other `clientError` listener, Node's default is off for all.
  const onClientError = (error: Error & { code?: string }, socket: Socket) => {
    if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
      timeouts[receiving.has(socket) ? "body" : "headers"]++;
      // The server's sockets allow half-open: an answer ended on a client that never ends its side would
      // keep the descriptor. A timed-out connection goes once its answer is written, whoever wrote it.
      setImmediate(() => void (socket.destroyed || socket.destroySoon()));
    }
    if (server.listenerCount("clientError") > 1) return;
    if (socket.writable && socket.bytesWritten === 0) socket.write(NODE_ANSWERS[error.code ?? ""] ?? BAD_REQUEST);
    socket.destroy(error);
  };
  server.on("clientError", onClientError);

  const counts: ConnectionCounts = {
    listener: options.listener,
    open: () => ledger.open,
    refused: ledger.refused,
    timeouts,
  };
  const all = countsByServer.get(options.owner) ?? [];
  all.push(counts);
  countsByServer.set(options.owner, all);
  server.once("close", () => {
    bodies?.stop();
    const left = (countsByServer.get(options.owner) ?? []).filter((c) => c !== counts);
    countsByServer.set(options.owner, left);
  });
  return { counts, ledger, stop: () => bodies?.stop() };
}
