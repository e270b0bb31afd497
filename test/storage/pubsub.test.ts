// Pub/sub, in process and on Redis, through the same test bodies. On Redis the publisher and the subscriber
// are separate PubSub instances (separate connections), as they are between two API processes.
//
// "Nothing arrived" is never concluded from waiting a while: a fence message published after the one that
// must not arrive, on the same connections, arrives after it if it arrives at all (Redis keeps the order of
// one connection's messages to one subscriber), so once the fence is in, the answer is final.

import { Redis } from "ioredis";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { memoryPubSub, type PubSub, redisPubSub } from "../../storage/pubsub.ts";
import { isolatedRedisPrefix, storeBackends } from "../helpers/backends.ts";

async function waitFor(check: () => boolean, what: string): Promise<void> {
  // A generous bound only so that a lost message fails the test instead of hanging the run.
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error(`never happened: ${what}`);
}

/** A listener on `channel` that keeps what it hears, in order; `off` unsubscribes it. */
async function listen(bus: PubSub, channel: string): Promise<{ got: unknown[]; off: () => Promise<void> }> {
  const got: unknown[] = [];
  const off = await bus.subscribe(channel, (m) => got.push(m));
  return { got, off };
}

for (const backend of await storeBackends()) {
  const t = suite(`pub/sub on ${backend.name}`);
  let prefix: string;
  const opened: PubSub[] = [];
  const open = (onListenerError?: (e: unknown) => void): PubSub => {
    const p =
      backend.name === "redis"
        ? redisPubSub({ url: backend.url, prefix, onListenerError })
        : memoryPubSub({ onListenerError });
    opened.push(p);
    return p;
  };
  /** A publisher and a subscriber: two connections on Redis, the one in-process bus in memory. */
  const pair = (): [PubSub, PubSub] => {
    const a = open();
    return [a, backend.name === "redis" ? open() : a];
  };
  const numsub = async (channel: string): Promise<number> => {
    if (backend.name !== "redis") return -1;
    const raw = new Redis(backend.url);
    try {
      const reply = (await raw.call("PUBSUB", "NUMSUB", prefix + channel)) as [string, number];
      return Number(reply[1]);
    } finally {
      await raw.quit();
    }
  };

  t.before.each(() => {
    prefix = isolatedRedisPrefix();
  });
  t.after.each(async () => {
    await Promise.all(opened.splice(0).map((p) => p.close()));
  });

  t("a message reaches every listener of its channel, as a JSON copy", async () => {
    const [pub, sub] = pair();
    const { got: got1 } = await listen(sub, "partner.changed");
    const { got: got2 } = await listen(sub, "partner.changed");
    const sent = { partnerId: "prt_1", at: new Date(Date.UTC(2026, 0, 1)), nested: { n: 1 } };
    await pub.publish("partner.changed", sent);
    await waitFor(() => got1.length === 1 && got2.length === 1, "both listeners got the message");
    assert.equal(got1[0], { partnerId: "prt_1", at: "2026-01-01T00:00:00.000Z", nested: { n: 1 } });
    assert.equal(got2[0], got1[0]);
    assert.ok(got1[0] !== sent, "listeners never share the publisher's object");
    await pub.publish("partner.changed", undefined);
    await waitFor(() => got1.length === 2, "an empty message arrives as null");
    assert.is(got1[1], null);
  });

  t("unsubscribe stops delivery to that listener only; the last one ends the channel's subscription", async () => {
    const [pub, sub] = pair();
    const { got: a, off: offA } = await listen(sub, "c");
    const { got: b, off: offB } = await listen(sub, "c");
    const { got: fence } = await listen(sub, "fence");
    await pub.publish("c", 1);
    await waitFor(() => a.length === 1 && b.length === 1, "first message");

    await offA();
    await offA(); // a second call is harmless and does not remove anyone else
    await pub.publish("c", 2);
    await waitFor(() => b.length === 2, "b still subscribed");
    assert.equal(a, [1]);

    await offB();
    await pub.publish("c", 3);
    await pub.publish("fence", "after 3");
    await waitFor(() => fence.length === 1, "fence");
    assert.equal(a, [1]);
    assert.equal(b, [1, 2]);
    if (backend.name === "redis") assert.is(await numsub("c"), 0, "no Redis subscription is left behind");
  });

  t("channels are separate", async () => {
    const [pub, sub] = pair();
    const { got } = await listen(sub, "one");
    const { got: fence } = await listen(sub, "fence");
    await pub.publish("two", "wrong channel");
    await pub.publish("one", "right channel");
    await pub.publish("fence", 0);
    await waitFor(() => fence.length === 1, "fence");
    assert.equal(got, ["right channel"]);
  });

  t("a throwing listener does not starve the others and is reported", async () => {
    const errors: unknown[] = [];
    const bus = open((e) => errors.push(e));
    const sender = backend.name === "redis" ? open() : bus;
    const got: unknown[] = [];
    await bus.subscribe("c", () => {
      throw new Error("listener bug");
    });
    await bus.subscribe("c", (m) => got.push(m));
    await sender.publish("c", "x");
    await waitFor(() => got.length === 1, "the second listener got the message");
    assert.is(errors.length, 1);
    assert.match(String(errors[0]), "listener bug");
  });

  if (backend.name === "redis") {
    t("one Redis SUBSCRIBE per channel however many listeners, even when they subscribe at once", async () => {
      const [pub, sub] = pair();
      const got: number[] = [];
      // All five must resolve only once the subscription is active, not just the first.
      const offs = await Promise.all(Array.from({ length: 5 }, (_, i) => sub.subscribe("c", () => got.push(i))));
      assert.is(await numsub("c"), 1);
      await pub.publish("c", "x");
      await waitFor(() => got.length === 5, "every listener got the message");
      for (const off of offs.slice(0, 4)) await off();
      assert.is(await numsub("c"), 1, "still subscribed while one listener remains");
      await offs[4]!();
      assert.is(await numsub("c"), 0);
    });

    t("a second listener's subscribe also waits for the channel's SUBSCRIBE in flight", async () => {
      const pub = open();
      await pub.publish("warm-up", 0);
      // Still connecting: its SUBSCRIBE waits in the offline queue while the publisher is ready to go.
      const sub = open();
      const got: unknown[] = [];
      const first = sub.subscribe("c", () => {});
      await sub.subscribe("c", (m) => got.push(m));
      await pub.publish("c", "x");
      await waitFor(() => got.length === 1, "delivery to the second listener");
      await first;
      assert.is(await numsub("c"), 1);
    });

    t("two instances on the same prefix both hear a third; another prefix hears nothing", async () => {
      const pub = open();
      const subA = open();
      const subB = open();
      const { got: a } = await listen(subA, "c");
      const { got: b } = await listen(subB, "c");
      prefix = isolatedRedisPrefix();
      const other = open();
      const { got: foreign } = await listen(other, "c");
      const { got: fence } = await listen(other, "fence");
      const otherPub = open();
      await pub.publish("c", { n: 1 });
      await waitFor(() => a.length === 1 && b.length === 1, "both instances got it");
      // PUBLISH hands a message to every subscriber before it returns, and subA/subB already have it, so
      // had `other` been a subscriber it would have it before this fence.
      await otherPub.publish("fence", 0);
      await waitFor(() => fence.length === 1, "fence");
      assert.equal(foreign, []);
    });

    t("a subscription reopened right after the last unsubscribe is active", async () => {
      const [pub, sub] = pair();
      const off = await sub.subscribe("c", () => {});
      const got: unknown[] = [];
      const unsubscribing = off();
      await sub.subscribe("c", (m) => got.push(m));
      await unsubscribing;
      assert.is(await numsub("c"), 1);
      await pub.publish("c", "again");
      await waitFor(() => got.length === 1, "delivery after resubscribe");
    });
  }

  if (backend.name === "memory")
    t("a memory bus is its own: two instances do not hear each other", async () => {
      const a = open();
      const b = open();
      const { got } = await listen(b, "c");
      const { got: fence } = await listen(b, "fence");
      await a.publish("c", 1);
      await b.publish("fence", 0);
      await waitFor(() => fence.length === 1, "fence");
      assert.equal(got, []);
    });

  t.run();
}
