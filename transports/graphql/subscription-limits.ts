// How many GraphQL subscriptions one partner may hold open in this process, and one WebSocket. Without a cap
// one key opened 20,000 (10 sockets x 2,000) in 24 s and took the server from 399 MB to 1.15 GB (issue 45):
// each holds a pub/sub listener, a revocation hold and a stream.
//
// The spec names no such limit and no text (it has no GraphQL part); the choices, and why:
//   - 200 per partner (GRAPHQL_SUBSCRIPTIONS_PER_KEY), counted by partner so a rotated key does not start
//     afresh: twenty times the in-flight job cap (10), so a client can follow every job it may run with room
//     for reconnections still being torn down. Per process: N instances allow N times as many, which bounds
//     each process's memory, the point of the cap.
//   - 100 per WebSocket (GRAPHQL_SUBSCRIPTIONS_PER_SOCKET): graphql-ws multiplexes, and a socket's work is one
//     event-loop's turn of frames; more belong on a second socket.
//   - the refusal is a 429 with the in-flight cap's way of saying it ("Too many ... Complete some and retry.",
//     code RATE_LIMITED), in the protocol's error: over graphql-ws an `error` message for that operation id
//     (the socket stays open for the others), over SSE an HTTP 429 whose body is the GraphQL error.
// Counts drop when a subscription ends for any reason: completed by the client, ended by the server (the
// job's terminal update, a revoked key, shutdown), refused later in execution, or its socket or request gone.
import { GraphQLError } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Kernel } from "../../core/kernel.ts";
import { KeyedCounts } from "../keyed-counts.ts";
import { codeFor } from "./errors.ts";

export type SubscriptionRefusal = "per_key" | "per_socket";

export const SUBSCRIPTION_ERRORS: Readonly<Record<SubscriptionRefusal, string>> = Object.freeze({
  per_key: "Too many open subscriptions for this partner. Complete some and retry.",
  per_socket: "Too many open subscriptions on this connection. Complete some and retry.",
});

/** One open subscription's place under its partner's cap; release() is idempotent. */
export interface SubscriptionSlot {
  release(): void;
}

export class SubscriptionLimits extends KeyedCounts {
  readonly refused: Record<SubscriptionRefusal, number> = { per_key: 0, per_socket: 0 };

  /** A cap of 0 is off. */
  constructor(
    readonly perKey: number,
    readonly perSocket: number,
  ) {
    super();
  }

  /** A slot under `key`'s cap, or null (counted as refused) when it is full. */
  acquire(key: string): SubscriptionSlot | null {
    if (this.perKey > 0 && this.heldBy(key) >= this.perKey) {
      this.refused.per_key++;
      return null;
    }
    this.add(key);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.remove(key);
      },
    };
  }

  /**
   * Whether `key` has room for one more, without taking it (a refusal is counted): a transport's cheap
   * refusal before its costly work; acquire() still decides.
   */
  admitsKey(key: string): boolean {
    if (this.perKey > 0 && this.heldBy(key) >= this.perKey) {
      this.refused.per_key++;
      return false;
    }
    return true;
  }

  /** Whether a socket holding `held` subscriptions may open one more (a refusal is counted). */
  admitsOnSocket(held: number): boolean {
    if (this.perSocket > 0 && held >= this.perSocket) {
      this.refused.per_socket++;
      return false;
    }
    return true;
  }

  /** The refusal as a GraphQL error (status 429, code RATE_LIMITED, the cap that was hit and its size). */
  error(reason: SubscriptionRefusal, options: { http?: boolean } = {}): GraphQLError {
    const max = reason === "per_key" ? this.perKey : this.perSocket;
    // extensions.http makes yoga answer an SSE request 429 (and is not sent); graphql-ws has no status.
    return new GraphQLError(SUBSCRIPTION_ERRORS[reason], {
      extensions: {
        code: codeFor(429),
        status: 429,
        limit: `subscriptions_${reason}`,
        max,
        ...(options.http ? { http: { status: 429 } } : {}),
      },
    });
  }
}

const byKernel = new WeakMap<Kernel, SubscriptionLimits>();

/** The kernel's one count, shared by SSE and WebSocket (and read by /metrics). */
export function subscriptionLimitsOf(kernel: Kernel): SubscriptionLimits {
  let limits = byKernel.get(kernel);
  if (!limits) {
    const { subscriptionsPerKey, subscriptionsPerSocket } = kernel.config.connections;
    byKernel.set(kernel, (limits = new SubscriptionLimits(subscriptionsPerKey, subscriptionsPerSocket)));
  }
  return limits;
}

/** The slots of one WebSocket's open subscriptions, by operation id. */
export class SocketSubscriptions {
  readonly #slots = new Map<string, SubscriptionSlot>();

  get size(): number {
    return this.#slots.size;
  }

  hold(id: string, slot: SubscriptionSlot): void {
    this.#slots.get(id)?.release();
    this.#slots.set(id, slot);
  }

  release(id: string): void {
    this.#slots.get(id)?.release();
    this.#slots.delete(id);
  }

  releaseAll(): void {
    for (const slot of this.#slots.values()) slot.release();
    this.#slots.clear();
  }
}

// The slot a transport took before execution (websocket.ts), handed to the plugin below through the
// operation's context so it is not taken twice.
const HELD = Symbol("subscription slot");

export function withSlot<C extends object>(context: C, slot: SubscriptionSlot): C {
  Object.defineProperty(context, HELD, { value: slot });
  return context;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === "function";
}

/**
 * Holds a slot for every subscription yoga executes, and releases it when the stream ends (or at once when
 * execution answers without one). Over SSE the slot is taken here, and a full cap answers the request 429;
 * over WebSocket the transport took it already (and refused with graphql-ws's `error` message).
 * `partnerOf` names the caller's partner, or null for a key that fails: the resolver then answers 401.
 */
export function subscriptionLimitsPlugin(
  limits: SubscriptionLimits,
  partnerOf: (authorization: string | null) => Promise<string | null>,
): Plugin {
  return {
    async onSubscribe({ args, subscribeFn, setSubscribeFn, setResultAndStopExecution }) {
      const context = args.contextValue as { [HELD]?: SubscriptionSlot; caller?: { authorization: string | null } };
      let slot = context[HELD];
      if (!slot) {
        const partner = await partnerOf(context.caller?.authorization ?? null);
        if (partner === null) return;
        const taken = limits.acquire(partner);
        if (!taken) return void setResultAndStopExecution({ errors: [limits.error("per_key", { http: true })] });
        slot = taken;
      }
      const held = slot;
      // A subscribe that throws or answers without a stream releases here; a stream releases at its end.
      setSubscribeFn(async (subscribeArgs) => {
        try {
          const result = await subscribeFn(subscribeArgs);
          if (!isAsyncIterable(result)) held.release();
          return result;
        } catch (error) {
          held.release();
          throw error;
        }
      });
      return {
        onSubscribeResult: ({ result }) =>
          isAsyncIterable(result) ? { onEnd: () => held.release() } : void held.release(),
      };
    },
  };
}
