// The submit-and-poll contract of a generative provider (issue 20). A provider that renders in minutes is
// never awaited inside a worker slot: the job runtime submits once, stores the handle with the job, and
// comes back for it as a delayed queue job (core/upstream-waits.ts), so thousands of upstream waits cost
// rows, not slots. What follows `done` (download, probe, metadata, store) is ordinary work in a slot.
//
// Providers that are synchronous by nature (speech synthesis, merge) keep a plain async call.

/** What `submit` answers: the upstream's id for the work, and when it is worth asking again. */
export interface UpstreamHandle {
  /** The upstream's own id; callbacks name the work by it. Unique per provider. */
  id: string;
  /** The provider's suggestion for the first poll (0: at once). */
  pollAfterMs?: number;
  /** Small JSON the provider wants back at each poll (stored with the job; no secrets, no media). */
  data?: Record<string, unknown>;
}

/** One look at the upstream's work. */
export type UpstreamPoll<Result> =
  | {
      state: "pending";
      /** 0-1 of the upstream's work, when it says. */
      progress?: number;
      message?: string;
      /** When to look again; the runtime applies it with a floor and backoff when absent. */
      pollAfterMs?: number;
    }
  | { state: "done"; result: Result }
  /**
   * The upstream gave up. `error` is what the consuming plugin maps to its partner-facing text (the same
   * classes a synchronous call would throw: TransientProviderError, UnsafeContentError, or any Error).
   */
  | { state: "failed"; error: Error };

export interface UpstreamSubmitOptions {
  /** Stable for this job and step, across attempts and processes: an upstream that takes one can dedupe. */
  idempotencyKey: string;
  signal: AbortSignal;
  /**
   * Where the upstream may report early: POST, body `{"id": "<upstream id>"}`, headers
   * `X-Upstream-Timestamp: <unix seconds>` (within 5 minutes) and `X-Upstream-Signature: sha256=<hex
   * HMAC-SHA256 with `secret` of "<timestamp>.<body>">`. Absent unless UPSTREAM_CALLBACK_SECRET is set, or
   * the provider has `verifyCallback` (then the service signs its own way, and `secret` is empty without it).
   */
  callback?: { url: string; secret: string };
}

export interface UpstreamPollOptions {
  signal: AbortSignal;
  /** 0-1 of the work done inside this poll (a download or a render once the upstream is done). */
  onProgress(fraction: number, message?: string): Promise<void> | void;
}

/**
 * A provider of one kind of work. `name` says which provider it is (callbacks are routed by it) and is
 * stored with each job waiting on it.
 */
export interface UpstreamProvider<Request, Result> {
  readonly name: string;
  /** Hands the work over. A thrown error is the provider's failure (same classes as `failed`). */
  submit(request: Request, options: UpstreamSubmitOptions): Promise<UpstreamHandle>;
  /**
   * Looks at the work once. A thrown error means the look itself failed (network, 5xx): the runtime tries
   * again with backoff, and fails the job after several in a row.
   */
  poll(handle: UpstreamHandle, options: UpstreamPollOptions): Promise<UpstreamPoll<Result>>;
  /** Ends the upstream's work (a deadline passed); best effort. */
  cancel?(handle: UpstreamHandle): Promise<void>;
  /** The job is over and its result kept: the upstream may forget the work. Best effort. */
  release?(handle: UpstreamHandle): Promise<void>;
  /**
   * Checks a callback with the service's own signature (fal's ED25519, Replicate's Standard Webhooks) and
   * answers the id of the work it reports, or null when it is forged, stale or malformed (401, nothing
   * changes). When present it replaces the kernel's HMAC check for this provider, and the callback URL is
   * offered even without UPSTREAM_CALLBACK_SECRET (then `callback.secret` is empty).
   */
  verifyCallback?(request: { headers: Headers; body: Uint8Array }): Promise<{ id: string } | null>;
}

/** One route of an upstream gateway, as /metrics and /readyz show it. */
export interface UpstreamRouteStatus {
  /** The spec model id it serves. */
  model: string;
  /** Its place in the model's routes (0-based) and its provider's name. */
  index: number;
  provider: string;
  /** Its circuit breaker. */
  state: "closed" | "open" | "half-open";
  consecutiveFailures: number;
  /** Epoch ms until which the route is skipped for the service's Retry-After, when it is. */
  retryAfterUntil?: number;
}

/**
 * What an upstream gateway tells the kernel (the `upstream.gateway` collection): its routes' health for
 * /metrics and /readyz (a degraded route never makes the process unready), and the providers that verify
 * their callbacks with the service's own signature, by name.
 */
export interface UpstreamGateway {
  routes(): UpstreamRouteStatus[];
  callbackProvider(name: string): Pick<UpstreamProvider<unknown, unknown>, "name" | "verifyCallback"> | undefined;
}

/**
 * The providers of one capability by route (a model's id, a route name such as "animation"): `route(name)`
 * is the provider configured for it, or undefined when none is (the caller's 500 "not available"). One name
 * for one lookup across capabilities (`image.generate`, `video.generate`).
 */
export interface ProviderRoutes<Provider> {
  route(name: string): Provider | undefined;
}

declare module "./index.ts" {
  interface ContributionMap {
    "upstream.gateway": UpstreamGateway;
  }
}

/** The upstream did not finish before the step's deadline; it was cancelled where the provider can. */
export class UpstreamTimeoutError extends Error {}
