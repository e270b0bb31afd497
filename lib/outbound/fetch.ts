// The network half of the outbound-URL guard (docs/architecture.md invariant 6). One undici Agent per guard, whose connector
// (a) refuses IP-literal hosts that are not public, (b) gives the TCP/TLS socket a `lookup` that resolves the
// name, checks every answer and hands back only checked addresses (so the address connected to is the address
// checked, in the same call: there is no second lookup a rebinding DNS server could answer differently), and
// (c) after the connection is up, checks the socket's remote address once more before any request byte is
// sent. TLS SNI and certificate verification use the hostname, as undici derives them from the URL's host.
// Redirects are never followed; size and time are capped while the body streams.

import type { LookupAddress, LookupOptions } from "node:dns";
import { lookup as dnsLookup } from "node:dns/promises";
import { isIPv4, isIPv6 } from "node:net";
import { Agent, buildConnector } from "undici";
import { concatBytes } from "../formats/bytes.ts";
import { classifyAddress, isIpLiteral, unbracket } from "./address.ts";
import { type CheckUrlResult, checkUrl } from "./check.ts";
import { OutboundError } from "./errors.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to every address it has (tests inject one; the default is the system resolver). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface OutboundGuardOptions {
  /** ALLOW_PRIVATE_URLS (development only): plain http and non-public addresses are allowed. Default false. */
  allowPrivate?: boolean;
  /** DNS resolver; default `dns.promises.lookup(host, { all: true, verbatim: true })`. */
  lookup?: Resolver;
  /** Longest accepted URL text (default 4096). */
  maxUrlLength?: number;
  /** TCP + TLS connect timeout per connection, in ms (default 10,000); the request deadline still applies. */
  connectTimeoutMs?: number;
  /** Extra trusted CA certificates (PEM), e.g. a test server's self-signed certificate. */
  ca?: string | string[];
  /** Called once per new connection with the address actually connected to (logs, tests). */
  onConnect?: (info: { hostname: string; address: string; port: number }) => void;
}

export interface OutboundRequest {
  /** Default GET. */
  method?: string;
  /** Request headers; `host` is ignored (it always comes from the URL). */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Deadline for the whole exchange (DNS, connect, headers, every body byte). Default 30,000 ms. */
  timeoutMs?: number;
  /** Most body bytes accepted (as received, no decompression). Default 10,000,000. */
  maxBytes?: number;
  /** The caller's cancellation; fails with kind `aborted`. */
  signal?: AbortSignal;
  /** Which statuses are a success; anything else fails with `http_status`. 3xx is always `redirect`. Default 2xx. */
  acceptStatus?: (status: number) => boolean;
  /** Plain http is allowed for this request (CheckUrlOptions.allowHttp); addresses must still be public. */
  allowHttp?: boolean;
}

export interface OutboundResponse {
  status: number;
  /** Lowercase names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Uint8Array;
  /** The URL that was fetched (after the checks). */
  url: URL;
}

export interface OutboundStream {
  status: number;
  headers: Record<string, string>;
  /** The declared Content-Length, when there is one (already checked against maxBytes). */
  contentLength: number | undefined;
  url: URL;
  /** The body, capped: iteration throws OutboundError `too_large`, `timeout`, `aborted` or `network`. */
  body: AsyncIterable<Uint8Array>;
  /** Stops the download and frees the connection; safe to call more than once or after the body ended. */
  cancel(): void;
}

export interface OutboundGuard {
  readonly allowPrivate: boolean;
  /** Syntactic check only (sync, no DNS): for request validation before any charge. `allowHttp`: see OutboundRequest. */
  checkUrl(text: unknown, opts?: { allowHttp?: boolean }): CheckUrlResult;
  /** checkUrl, then DNS: every address must be public. Throws OutboundError `invalid_url`, `not_public`, `network`. */
  resolvePublic(url: string | URL): Promise<ResolvedAddress[]>;
  /** A capped request whose body is read whole. Throws OutboundError on any failure. */
  fetch(url: string | URL, req?: OutboundRequest): Promise<OutboundResponse>;
  /** A capped request whose body is streamed (large media). Throws OutboundError on failure before the body. */
  stream(url: string | URL, req?: OutboundRequest): Promise<OutboundStream>;
  /** Closes the pooled connections (kernel shutdown, tests). */
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_BYTES = 10_000_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout fires at once beyond this

const defaultResolver: Resolver = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

function familyOf(address: string): 4 | 6 | 0 {
  return isIPv4(address) ? 4 : isIPv6(address) ? 6 : 0;
}

type NetLookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

export function createOutboundGuard(options: OutboundGuardOptions = {}): OutboundGuard {
  const allowPrivate = options.allowPrivate === true;
  const resolver = options.lookup ?? defaultResolver;
  const checkOpts = {
    allowPrivate,
    ...(options.maxUrlLength === undefined ? {} : { maxUrlLength: options.maxUrlLength }),
  };

  /** Resolves a hostname and checks every answer; an empty or partly non-public answer fails whole. */
  async function resolveChecked(hostname: string): Promise<ResolvedAddress[]> {
    const host = unbracket(hostname);
    if (isIpLiteral(host)) {
      const cls = classifyAddress(host);
      if (cls !== null && !allowPrivate)
        throw new OutboundError("not_public", `address ${host} is not public (${cls})`);
      return [{ address: host, family: familyOf(host) === 6 ? 6 : 4 }];
    }
    let answers: ResolvedAddress[];
    try {
      answers = await resolver(host);
    } catch (cause) {
      throw new OutboundError("network", `DNS lookup of ${host} failed`, { cause });
    }
    if (!Array.isArray(answers) || answers.length === 0)
      throw new OutboundError("network", `DNS lookup of ${host} returned no address`);
    const out: ResolvedAddress[] = [];
    for (const a of answers) {
      const address = String(a?.address ?? "");
      const family = familyOf(address);
      const cls = family === 0 ? "invalid" : classifyAddress(address);
      if (family === 0 || (cls !== null && !allowPrivate)) {
        throw new OutboundError("not_public", `${host} resolves to ${address} (${cls})`);
      }
      out.push({ address, family });
    }
    return out;
  }

  // The socket's lookup: node:net calls it once per connection (all: true when it tries several addresses).
  function netLookup(hostname: string, opts: LookupOptions, callback: NetLookupCallback): void {
    resolveChecked(hostname).then(
      (addresses) => {
        const wanted =
          opts.family === 4 || opts.family === "IPv4" ? 4 : opts.family === 6 || opts.family === "IPv6" ? 6 : 0;
        const list = wanted ? addresses.filter((a) => a.family === wanted) : addresses;
        if (list.length === 0)
          return callback(new OutboundError("network", `${hostname} has no IPv${wanted} address`), "");
        if (opts.all)
          callback(
            null,
            list.map((a) => ({ address: a.address, family: a.family })),
          );
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: unknown) => callback(err instanceof Error ? err : new OutboundError("network", String(err)), ""),
    );
  }

  const baseConnect = buildConnector({
    timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    lookup: netLookup as never,
    ...(options.ca === undefined ? {} : { ca: options.ca }),
  });

  // Two connectors, one pool each: https only, and http-or-https for requests that allow plain http. Both
  // refuse non-public addresses the same way.
  const connector =
    (httpAllowed: boolean): buildConnector.connector =>
    (opts, callback) => {
      const host = unbracket(opts.hostname);
      // node:net skips `lookup` for an IP literal, so literals are checked here.
      if (isIpLiteral(host) && !allowPrivate && classifyAddress(host) !== null) {
        callback(new OutboundError("not_public", `address ${host} is not public`), null);
        return;
      }
      if (opts.protocol !== "https:" && !allowPrivate && !(httpAllowed && opts.protocol === "http:")) {
        callback(new OutboundError("invalid_url", `scheme ${opts.protocol} is not allowed`), null);
        return;
      }
      baseConnect(opts, (...args) => {
        const [err, socket] = args;
        if (err || !socket) {
          callback(err ?? new OutboundError("network", "no socket"), null);
          return;
        }
        // Belt and braces: whatever node:net did, the peer must be a public address before a request byte goes out.
        const remote = socket.remoteAddress ?? "";
        if (!allowPrivate && classifyAddress(remote) !== null) {
          socket.destroy();
          callback(new OutboundError("not_public", `connected to non-public ${remote}`), null);
          return;
        }
        options.onConnect?.({ hostname: opts.hostname, address: remote, port: socket.remotePort ?? 0 });
        callback(null, socket);
      });
    };

  const agentOptions = {
    // Our deadline governs; undici's own timers only need to be no shorter.
    headersTimeout: 0,
    bodyTimeout: 0,
  };
  const agent = new Agent({ connect: connector(false), ...agentOptions });
  const httpAgent = new Agent({ connect: connector(true), ...agentOptions });

  function checked(url: string | URL, allowHttp = false): URL {
    const result = checkUrl(typeof url === "string" ? url : url.href, { ...checkOpts, allowHttp });
    if (!result.ok) throw new OutboundError(result.kind, result.reason);
    return result.url;
  }

  async function resolvePublic(url: string | URL): Promise<ResolvedAddress[]> {
    return resolveChecked(checked(url).hostname);
  }

  async function stream(url: string | URL, req: OutboundRequest = {}): Promise<OutboundStream> {
    const target = checked(url, req.allowHttp === true);
    const maxBytes = req.maxBytes ?? DEFAULT_MAX_BYTES;
    const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const acceptStatus = req.acceptStatus ?? ((s: number) => s >= 200 && s < 300);

    const ac = new AbortController();
    if (req.signal?.aborted) throw new OutboundError("aborted", "aborted by the caller");
    const onCallerAbort = () => ac.abort(new OutboundError("aborted", "aborted by the caller"));
    req.signal?.addEventListener("abort", onCallerAbort, { once: true });
    const timer = setTimeout(
      () => {
        ac.abort(new OutboundError("timeout", `no complete answer within ${timeoutMs} ms`));
        cleanup();
      },
      Math.min(Math.max(timeoutMs, 0), MAX_TIMER_MS),
    );
    let done = false;
    const cleanup = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onCallerAbort);
    };
    const fail = (err: unknown): OutboundError => {
      cleanup();
      return toOutboundError(err, ac.signal);
    };

    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers ?? {})) if (k.toLowerCase() !== "host") headers[k] = v;

    let res: Awaited<ReturnType<Agent["request"]>>;
    try {
      res = await (req.allowHttp ? httpAgent : agent).request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: (req.method ?? "GET").toUpperCase() as "GET",
        headers,
        body: req.body ?? null,
        signal: ac.signal,
      });
    } catch (err) {
      throw fail(err);
    }

    const body = res.body;
    // Destroying an unfinished body emits an error; the iterator sees its own, nobody else must crash on it.
    body.on("error", () => {});
    const drop = () => {
      body.destroy();
      cleanup();
    };
    const status = res.statusCode;
    const flat = flattenHeaders(res.headers);
    if (status >= 300 && status < 400) {
      drop();
      throw new OutboundError("redirect", `answered ${status}; redirects are not followed`, {
        status,
        ...(flat.location ? { location: flat.location } : {}),
      });
    }
    if (!acceptStatus(status)) {
      drop();
      throw new OutboundError("http_status", `answered ${status}`, { status });
    }
    const declared =
      flat["content-length"] !== undefined && /^\d+$/.test(flat["content-length"])
        ? Number(flat["content-length"])
        : undefined;
    if (declared !== undefined && declared > maxBytes) {
      drop();
      throw new OutboundError("too_large", `Content-Length ${declared} exceeds ${maxBytes} bytes`);
    }

    async function* capped(): AsyncGenerator<Uint8Array> {
      let total = 0;
      try {
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          total += chunk.byteLength;
          if (total > maxBytes) throw new OutboundError("too_large", `body exceeds ${maxBytes} bytes`);
          yield chunk;
        }
        if (ac.signal.aborted) throw ac.signal.reason;
      } catch (err) {
        throw fail(err);
      } finally {
        if (!body.destroyed) body.destroy();
        cleanup();
      }
    }

    return { status, headers: flat, contentLength: declared, url: target, body: capped(), cancel: drop };
  }

  async function fetchWhole(url: string | URL, req: OutboundRequest = {}): Promise<OutboundResponse> {
    const s = await stream(url, req);
    const chunks: Uint8Array[] = [];
    for await (const chunk of s.body) chunks.push(chunk);
    const body = concatBytes(chunks);
    return { status: s.status, headers: s.headers, body, url: s.url };
  }

  return {
    allowPrivate,
    checkUrl: (text, opts) => checkUrl(text, { ...checkOpts, allowHttp: opts?.allowHttp === true }),
    resolvePublic,
    fetch: fetchWhole,
    stream,
    close: async () => {
      await Promise.all([agent.close(), httpAgent.close()]);
    },
  };
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** Maps whatever undici, node:net or node:tls threw to an OutboundError (ours pass through, also as causes). */
function toOutboundError(err: unknown, signal: AbortSignal): OutboundError {
  if (signal.aborted && signal.reason instanceof OutboundError) return signal.reason;
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof OutboundError) return e;
  }
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && TIMEOUT_CODES.has(code))
    return new OutboundError("timeout", String((err as Error).message), { cause: err });
  return new OutboundError("network", err instanceof Error ? err.message : String(err), { cause: err });
}
