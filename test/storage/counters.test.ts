// Counters, in process and on Redis, through the same test bodies: the rate limiter relies on exactly these
// properties (atomic increments, an expiry set once and never pushed back, keys that really expire).

import { Redis } from "ioredis";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Counters } from "../../contracts/counters.ts";
import { type FakeClock, fakeClock } from "../../core/clock.ts";
import { memoryCounters, redisCounters } from "../../storage/counters.ts";
import { rejection } from "../helpers/assert.ts";
import { isolatedRedisPrefix, type StoreBackend, storeBackends } from "../helpers/backends.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const backend of await storeBackends()) {
  const t = suite(`counters on ${backend.name}`);
  let clock: FakeClock;
  let prefix: string;
  const opened: Counters[] = [];
  const open = (): Counters => {
    const c =
      backend.name === "redis" ? redisCounters({ url: backend.url, prefix }) : memoryCounters(() => clock.now());
    opened.push(c);
    return c;
  };
  // Memory runs on the injected clock; Redis keeps its own time, so there the test waits it out.
  const letTimePass = async (ms: number) => {
    if (backend.name === "redis") await sleep(ms);
    else clock.advance(ms);
  };

  t.before.each(() => {
    clock = fakeClock(Date.UTC(2026, 10, 1, 12, 0, 0));
    prefix = isolatedRedisPrefix();
  });
  t.after.each(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });

  t("a new key starts at `by` with the given expiry; get reads it; a missing key is 0", async () => {
    const c = open();
    assert.is(await c.get("k"), 0);
    const first = await c.increment("k", 60_000);
    assert.is(first.value, 1);
    assert.ok(first.ttlMs > 0 && first.ttlMs <= 60_000, `ttl ${first.ttlMs}`);
    assert.is((await c.increment("k", 60_000, 4)).value, 5);
    assert.is((await c.increment("k", 60_000, -2)).value, 3);
    assert.is(await c.get("k"), 3);
    assert.is((await c.increment("other", 60_000, 7)).value, 7, "keys are separate");
  });

  t("concurrent increments are atomic: every caller sees a distinct value", async () => {
    const c = open();
    const results = await Promise.all(Array.from({ length: 200 }, () => c.increment("hot", 60_000)));
    assert.equal(
      results.map((r) => r.value).sort((a, b) => a - b),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    assert.is(await c.get("hot"), 200);
  });

  t("the expiry is set once: a later increment neither extends nor shortens it", async () => {
    const c = open();
    await c.increment("k", 60_000);
    await letTimePass(20);
    const longer = await c.increment("k", 10 * 60_000);
    assert.ok(longer.ttlMs <= 60_000, `a longer ttl was applied: ${longer.ttlMs}`);
    const shorter = await c.increment("k", 1);
    assert.ok(shorter.ttlMs > 1_000, `a shorter ttl was applied: ${shorter.ttlMs}`);
    assert.is(shorter.value, 3);
  });

  t("an expired key reads 0 and starts over with a fresh expiry", async () => {
    const c = open();
    await c.increment("short", 50, 9);
    await letTimePass(120);
    assert.is(await c.get("short"), 0);
    const again = await c.increment("short", 60_000);
    assert.is(again.value, 1);
    assert.ok(again.ttlMs > 50, "the old expiry does not carry over");
  });

  t("separate instances share state only through Redis, and prefixes keep deployments apart", async () => {
    const a = open();
    const b = open();
    await a.increment("shared", 60_000, 2);
    await b.increment("shared", 60_000, 3);
    if (backend.name === "redis") {
      assert.is(await a.get("shared"), 5, "two connections count against the same key");
      prefix = isolatedRedisPrefix();
      const elsewhere = open();
      assert.is(await elsewhere.get("shared"), 0);
    } else {
      assert.is(await a.get("shared"), 2, "an in-process store is its own");
    }
  });

  t("fractional and non-positive ttls round up to whole milliseconds; non-integer steps are refused", async () => {
    const c = open();
    const r = await c.increment("tiny", 0.2);
    assert.is(r.value, 1);
    assert.ok(r.ttlMs <= 1);
    assert.instance(await rejection(c.increment("k", 1000, 1.5)), RangeError);
    assert.instance(await rejection(c.increment("k", Number.NaN)), RangeError);
  });

  if (backend.name === "redis") redisOnly(t, backend, () => prefix, open);

  t.run();
}

function redisOnly(
  t: ReturnType<typeof suite>,
  backend: Extract<StoreBackend, { name: "redis" }>,
  prefix: () => string,
  open: () => Counters,
) {
  t("on Redis every key lives under the prefix and always carries an expiry", async () => {
    const c = open();
    await Promise.all(Array.from({ length: 20 }, () => c.increment("k", 60_000)));
    const raw = new Redis(backend.url);
    try {
      assert.is(await raw.get(`${prefix()}k`), "20");
      const pttl = await raw.pttl(`${prefix()}k`);
      assert.ok(pttl > 0 && pttl <= 60_000, `pttl ${pttl}`);
      assert.is(await raw.exists("k"), 0, "nothing is written outside the prefix");
    } finally {
      await raw.quit();
    }
  });
}
