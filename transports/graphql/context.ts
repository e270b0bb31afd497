// Who is calling, in the terms the operation pipeline understands (core/operations.ts): the same
// Authorization header and User-Agent as REST, whether the GraphQL document came over HTTP, SSE or a
// WebSocket.
export interface Caller {
  authorization: string | null;
  userAgent: string | null;
  /** The HTTP request that carried the call; handlers may read it as they do under REST. */
  request: Request;
  /** Rate-limit headers for the HTTP response (see noteRateLimit). */
  rateLimit: { headers: Record<string, string>; refused: boolean };
  /** Called with the partner's id once the key is accepted: the access log line names the partner, as REST's does. */
  onAuthenticated?(partnerId: string): void;
}

export interface GraphqlContext {
  caller: Caller;
}

export function callerFromRequest(request: Request): Caller {
  return {
    authorization: request.headers.get("authorization"),
    userAgent: request.headers.get("user-agent"),
    request,
    rateLimit: { headers: {}, refused: false },
    // h3 shares its event's context with the request (`request.context`); the access log reads partnerId there.
    onAuthenticated(partnerId) {
      const context = (request as Request & { context?: { partnerId?: string } }).context;
      if (context) context.partnerId = partnerId;
    },
  };
}

/**
 * One GraphQL request may call several operations, each with its own budget, but an HTTP response has one
 * set of RateLimit headers: they describe the last call, except that a refusal (429, with Retry-After)
 * sticks, so a client that backs off on Retry-After backs off for the budget that was exhausted.
 */
export function noteRateLimit(caller: Caller, headers: Record<string, string>): void {
  if (caller.rateLimit.refused || !Object.keys(headers).length) return;
  caller.rateLimit.headers = headers;
  caller.rateLimit.refused = "Retry-After" in headers;
}
