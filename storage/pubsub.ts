// Publish/subscribe between the parts of one deployment: in process by default, on Redis when REDIS_URL is
// set (cache invalidation today; job progress for GraphQL subscriptions later). Messages are JSON, on both
// stores, so code that works on one works on the other.
import { Redis } from "ioredis";
import { closeRedis, redisClientOptions, whileReachable } from "./counters.ts";

export type Listener = (message: unknown) => void;

export interface PubSub {
  publish(channel: string, message: unknown): Promise<void>;
  /** Resolves once the subscription is active; the returned function unsubscribes this listener. */
  subscribe(channel: string, listener: Listener): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface PubSubOptions {
  /** Called when a listener throws; by default the error is printed. */
  onListenerError?: (error: unknown, channel: string) => void;
}

const printListenerError = (error: unknown, channel: string) =>
  console.error(`pub/sub listener on "${channel}" failed:`, error);

function deliver(
  channel: string,
  listeners: Iterable<Listener>,
  message: unknown,
  onError: NonNullable<PubSubOptions["onListenerError"]>,
): void {
  for (const l of listeners) {
    try {
      l(message);
    } catch (error) {
      // One listener's failure must not starve the others.
      onError(error, channel);
    }
  }
}

export function memoryPubSub(options: PubSubOptions = {}): PubSub {
  const onError = options.onListenerError ?? printListenerError;
  const channels = new Map<string, Set<Listener>>();
  return {
    async publish(channel, message) {
      // A JSON round trip, so in-process delivery behaves like Redis: no shared object references, and a
      // message that cannot be serialised fails here rather than only in production.
      const copy: unknown = JSON.parse(JSON.stringify(message ?? null));
      const set = channels.get(channel);
      if (!set) return;
      // Snapshot now, deliver on a microtask: like Redis, a listener never runs inside the publisher's call
      // stack, and it has run by the time the publisher's `await publish(...)` resumes.
      const listeners = [...set];
      queueMicrotask(() =>
        deliver(
          channel,
          listeners.filter((l) => set.has(l)),
          copy,
          onError,
        ),
      );
    },
    async subscribe(channel, listener) {
      let set = channels.get(channel);
      if (!set) channels.set(channel, (set = new Set()));
      const own = set;
      own.add(listener);
      return async () => {
        own.delete(listener);
        if (own.size === 0 && channels.get(channel) === own) channels.delete(channel);
      };
    },
    async close() {
      channels.clear();
    },
  };
}

export function redisPubSub(options: { url: string; prefix?: string } & PubSubOptions): PubSub {
  const prefix = options.prefix ?? "";
  const onError = options.onListenerError ?? printListenerError;
  // A connection in subscriber mode can run nothing but (UN)SUBSCRIBE, so publishing needs its own.
  // Both fail fast while Redis is out of reach (counters.ts redisClientOptions): a publish after a committed
  // write is then a quick failure its caller handles, not seconds added to a request. The subscriber keeps
  // waiting for its first connection at boot (no command time-out, no retry limit), and resubscribes to its
  // channels by itself after a reconnect.
  const pub = new Redis(options.url, redisClientOptions());
  const sub = new Redis(options.url, redisClientOptions({ maxRetriesPerRequest: null, commandTimeout: undefined }));
  pub.on("error", () => {});
  sub.on("error", () => {});
  // One Redis subscription per channel, however many local listeners; `ready` is shared so a second
  // subscriber to a channel whose SUBSCRIBE is still in flight also waits for it to be active.
  const channels = new Map<string, { listeners: Set<Listener>; ready: Promise<void> }>();
  sub.on("message", (redisChannel: string, text: string) => {
    if (!redisChannel.startsWith(prefix)) return;
    const channel = redisChannel.slice(prefix.length);
    const entry = channels.get(channel);
    if (!entry) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return; // not one of ours: every message we publish is JSON
    }
    deliver(channel, [...entry.listeners], message, onError);
  });
  return {
    async publish(channel, message) {
      whileReachable(pub, options.url);
      await pub.publish(prefix + channel, JSON.stringify(message ?? null));
    },
    async subscribe(channel, listener) {
      let entry = channels.get(channel);
      if (!entry) {
        whileReachable(sub, options.url);
        const listeners = new Set<Listener>();
        const ready = sub.subscribe(prefix + channel).then(
          () => undefined,
          (error: unknown) => {
            if (channels.get(channel)?.listeners === listeners) channels.delete(channel);
            throw error;
          },
        );
        entry = { listeners, ready };
        channels.set(channel, entry);
      }
      const own = entry;
      own.listeners.add(listener);
      try {
        await own.ready;
      } catch (error) {
        own.listeners.delete(listener);
        throw error;
      }
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        own.listeners.delete(listener);
        if (own.listeners.size === 0 && channels.get(channel) === own) {
          channels.delete(channel);
          // Commands on one connection run in order, so a SUBSCRIBE issued after this one still wins.
          await sub.unsubscribe(prefix + channel).catch(() => {});
        }
      };
    },
    async close() {
      channels.clear();
      await Promise.all([closeRedis(pub), closeRedis(sub)]);
    },
  };
}
