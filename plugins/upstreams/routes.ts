// Failover between a model's routes and each route's health (issue 39 item 6). A submit that surely did not
// reach the work (UpstreamCallError `accepted: false` for a connect error, a time-out before an answer, 429
// or 5xx; a sandbox's TransientProviderError at submit) moves to the next route; a failure after a service
// accepted the work never does (no double generation): it is the job's failure. Each route has a circuit
// breaker (FAILURE_THRESHOLD consecutive failures open it for OPEN_MS; then one half-open probe decides) and
// honours Retry-After (the route is skipped until then). State is per process, in memory: a breaker is a
// guess about the near future, not a record.
import {
  type Clock,
  TransientProviderError,
  type UpstreamHandle,
  type UpstreamPollOptions,
  type UpstreamProvider,
  type UpstreamSubmitOptions,
} from "mediagate/plugin";
import { UpstreamCallError } from "./protocol.ts";

export const FAILURE_THRESHOLD = 3;
export const OPEN_MS = 30_000;

export type BreakerState = "closed" | "open" | "half-open";

/** One route's state as /metrics and /readyz show it. */
export interface RouteStatus {
  /** The spec model id. */
  model: string;
  /** Its place in the model's list (0-based) and its provider's name in the file. */
  index: number;
  provider: string;
  state: BreakerState;
  consecutiveFailures: number;
  /** Epoch ms until which Retry-After keeps the route skipped, when it does. */
  retryAfterUntil?: number;
}

interface Health {
  failures: number;
  openUntil: number;
  /** A half-open probe is under way: no other submit goes to the route until it answers. */
  probing: boolean;
  retryAfterUntil: number;
}

/** The breakers of every route of the gateway, read by /metrics and /readyz through `statuses()`. */
export class RouteHealth {
  private readonly health = new Map<string, Health & { model: string; index: number; provider: string }>();

  constructor(
    private readonly clock: Clock,
    private readonly options: { threshold: number; openMs: number } = {
      threshold: FAILURE_THRESHOLD,
      openMs: OPEN_MS,
    },
  ) {}

  /** Declares a route (state closed) so that it is reported before its first call. */
  add(model: string, index: number, provider: string): string {
    const id = `${model}#${index}`;
    if (!this.health.has(id))
      this.health.set(id, { model, index, provider, failures: 0, openUntil: 0, probing: false, retryAfterUntil: 0 });
    return id;
  }

  private get(id: string) {
    const h = this.health.get(id);
    if (!h) throw new Error(`route ${id} was not declared`);
    return h;
  }

  state(id: string): BreakerState {
    const h = this.get(id);
    if (h.failures < this.options.threshold) return "closed";
    return this.clock.now() < h.openUntil ? "open" : "half-open";
  }

  /** Whether a submit may go to the route now; taking a half-open route's one probe. */
  take(id: string): boolean {
    const h = this.get(id);
    if (this.clock.now() < h.retryAfterUntil) return false;
    const state = this.state(id);
    if (state === "open") return false;
    if (state === "half-open") {
      if (h.probing) return false;
      h.probing = true;
    }
    return true;
  }

  succeeded(id: string): void {
    const h = this.get(id);
    h.failures = 0;
    h.openUntil = 0;
    h.probing = false;
  }

  failed(id: string, retryAfterMs?: number): void {
    const h = this.get(id);
    const now = this.clock.now();
    h.failures++;
    h.probing = false;
    if (h.failures >= this.options.threshold) h.openUntil = now + this.options.openMs;
    if (retryAfterMs !== undefined && retryAfterMs > 0)
      h.retryAfterUntil = Math.max(h.retryAfterUntil, now + retryAfterMs);
  }

  /** A call that ended neither way (the request's own fault, an abort): a half-open probe is free again. */
  released(id: string): void {
    this.get(id).probing = false;
  }

  statuses(): RouteStatus[] {
    const now = this.clock.now();
    return [...this.health.entries()].map(([id, h]) => ({
      model: h.model,
      index: h.index,
      provider: h.provider,
      state: this.state(id),
      consecutiveFailures: h.failures,
      ...(h.retryAfterUntil > now ? { retryAfterUntil: h.retryAfterUntil } : {}),
    }));
  }
}

/** Whether a submit's failure leaves the work surely untaken and the next route worth trying. */
export function mayTryNext(err: unknown): boolean {
  if (err instanceof UpstreamCallError) {
    if (err.accepted) return false;
    const s = err.upstreamStatus;
    return s === undefined || s === 429 || s >= 500;
  }
  // A sandbox route throws this at submit for `[sandbox:flaky]`: nothing was taken.
  return err instanceof TransientProviderError;
}

/** One route of a model: its provider (a protocol route or the sandbox) and its breaker's id. */
export interface Route<Request, Result> {
  id: string;
  provider: UpstreamProvider<Request, Result>;
}

/** What the gateway stores in a chain's handle: which route accepted the work, and that route's own handle. */
interface ChainData {
  route: string;
  inner: UpstreamHandle;
}

/**
 * One provider over the routes of one or more models: submit goes to the first route that takes the work
 * (in the model's order, skipping open breakers and Retry-After), poll/cancel/release go to the route that
 * took it (named in the handle, so a restart polls the same upstream id). `name` is the provider's name for
 * job waits and callbacks; `verifyCallback` asks each distinct route provider that can verify.
 */
export function chainProvider<Request, Result>(options: {
  name: string;
  health: RouteHealth;
  /** The model a request is for, and its routes (none: the model has no route). */
  routesOf(request: Request): readonly Route<Request, Result>[];
  /** Every route by id, for polls of stored handles. */
  byId: ReadonlyMap<string, Route<Request, Result>>;
  log?: { warn(message: string): void };
}): UpstreamProvider<Request, Result> {
  const { health, byId } = options;
  const routeOf = (handle: UpstreamHandle) => {
    const data = handle.data as ChainData | undefined;
    const route = data && byId.get(data.route);
    if (!route || !data) throw new Error(`upstream work ${handle.id} names a route no longer in the providers file`);
    return { route, inner: data.inner };
  };
  const verifiers = [...new Set([...byId.values()].map((r) => r.provider))].filter((p) => p.verifyCallback);
  const chain: UpstreamProvider<Request, Result> = {
    name: options.name,
    async submit(request: Request, submitOptions: UpstreamSubmitOptions): Promise<UpstreamHandle> {
      const routes = options.routesOf(request);
      if (routes.length === 0) throw new Error(`${options.name}: this model has no route in the providers file`);
      let last: unknown;
      let skipped = 0;
      for (const route of routes) {
        if (!health.take(route.id)) {
          skipped++;
          continue;
        }
        let inner: UpstreamHandle;
        // A chain that verifies callbacks with the services' signatures cannot check our HMAC: a route that
        // would sign with it (a sandbox) is polled instead of told where to call.
        const { callback, ...withoutCallback } = submitOptions;
        const routeOptions = verifiers.length && !route.provider.verifyCallback ? withoutCallback : submitOptions;
        try {
          inner = await route.provider.submit(request, routeOptions);
        } catch (err) {
          if (!mayTryNext(err) || submitOptions.signal.aborted) {
            health.released(route.id);
            throw err;
          }
          health.failed(route.id, err instanceof UpstreamCallError ? err.retryAfterMs : undefined);
          options.log?.warn(`${options.name}: route ${route.id} did not take the work (${(err as Error).message})`);
          last = err;
          continue;
        }
        health.succeeded(route.id);
        return {
          id: inner.id,
          ...(inner.pollAfterMs !== undefined ? { pollAfterMs: inner.pollAfterMs } : {}),
          data: { route: route.id, inner } satisfies ChainData as unknown as Record<string, unknown>,
        };
      }
      // Every route refused or was skipped: transient for the job (the runtime or the area's chain retries).
      if (last instanceof TransientProviderError) throw last;
      throw new TransientProviderError(
        last
          ? `no route took the work (last: ${(last as Error).message})`
          : `no route available (${skipped} skipped by their breakers or Retry-After)`,
      );
    },
    poll(handle: UpstreamHandle, pollOptions: UpstreamPollOptions) {
      const { route, inner } = routeOf(handle);
      return route.provider.poll(inner, pollOptions);
    },
    async cancel(handle: UpstreamHandle) {
      const { route, inner } = routeOf(handle);
      await route.provider.cancel?.(inner);
    },
    async release(handle: UpstreamHandle) {
      const { route, inner } = routeOf(handle);
      await route.provider.release?.(inner);
    },
  };
  if (verifiers.length)
    chain.verifyCallback = async (request) => {
      for (const p of verifiers) {
        const found = await p.verifyCallback!(request);
        if (found) return found;
      }
      return null;
    };
  return chain;
}
