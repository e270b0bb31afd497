// The outbound guard's failures. The kind is for callers to choose the spec's partner-facing text; the
// message and cause are internal (logs only) and never reach a partner (docs/architecture.md invariant 7).

export type OutboundErrorKind =
  /** The text is not an acceptable URL: syntax, scheme, userinfo, non-ASCII or IDN host, lengths. */
  | "invalid_url"
  /** The host is, or resolves to, an address that is not public (or a special-use name). */
  | "not_public"
  /** The server answered 3xx; redirects are never followed. `location` holds the target for logs. */
  | "redirect"
  /** The server answered a status the caller did not accept (by default anything but 2xx). */
  | "http_status"
  /** The body (or its declared Content-Length) exceeds maxBytes. */
  | "too_large"
  /** The whole exchange (DNS, connect, headers, body) did not finish within timeoutMs. */
  | "timeout"
  /** The caller's own AbortSignal fired. */
  | "aborted"
  /** DNS failure, connection refused or reset, TLS failure and the like. */
  | "network";

export class OutboundError extends Error {
  readonly kind: OutboundErrorKind;
  /** The HTTP status, for `redirect` and `http_status`. */
  readonly status?: number;
  /** The Location header of a refused redirect. */
  readonly location?: string;

  constructor(
    kind: OutboundErrorKind,
    message: string,
    extra: { status?: number; location?: string; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "OutboundError";
    this.kind = kind;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.location !== undefined) this.location = extra.location;
  }
}

export function isOutboundError(err: unknown, kind?: OutboundErrorKind): err is OutboundError {
  return err instanceof OutboundError && (kind === undefined || err.kind === kind);
}
