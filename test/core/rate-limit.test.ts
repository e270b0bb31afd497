// The rate-limit table against the spec's own markdown, and the one algorithm on every counter store (memory
// always, Redis when it answers) with the same test bodies.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Counters } from "../../contracts/counters.ts";
import { type FakeClock, fakeClock } from "../../core/clock.ts";
import { createRateLimiter, type RateLimitDecision } from "../../core/rate-limit.ts";
import { RATE_LIMITS } from "../../core/rate-limits.ts";
import { memoryCounters, redisCounters } from "../../storage/counters.ts";
import { rejection } from "../helpers/assert.ts";
import { isolatedRedisPrefix, storeBackends } from "../helpers/backends.ts";

const SPEC = resolve(import.meta.dirname!, "../../../shared/spec/part-1-shared-rules-account-images-media.md");

/** The spec's rate-limit table, parsed strictly: a row the parser does not understand fails the test. */
function specTable(): Array<{ endpoint: string; windows: Array<{ limit: number; windowSeconds: number }> }> {
  const text = readFileSync(SPEC, "utf8");
  const start = text.indexOf("### Rate limits");
  assert.ok(start >= 0, "the spec has a rate-limit section");
  const end = text.indexOf("\n#", start + 1);
  const lines = text
    .slice(start, end < 0 ? undefined : end)
    .split("\n")
    .filter((l) => l.startsWith("|"));
  assert.equal(
    lines.slice(0, 2),
    ["| Endpoint | Limit |", "|---|---|"],
    "the table's header is where the parser expects it",
  );
  return lines.slice(2).map((line) => {
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    assert.is(cells.length, 2, `two cells in ${line}`);
    const [endpoint, limit] = cells as [string, string];
    assert.match(endpoint, /^(GET|POST|PUT|PATCH|DELETE) \/\S*$/, `an endpoint in ${line}`);
    assert.match(limit, /^\d+\/(min|h)( and \d+\/(min|h))*$/, `a limit the parser knows in ${line}`);
    const windows = limit.split(" and ").map((part) => {
      const [n, unit] = part.split("/") as [string, string];
      return { limit: Number(n), windowSeconds: unit === "min" ? 60 : 3600 };
    });
    return { endpoint, windows };
  });
}

const table = suite("rate-limit table");

table("has every row of the spec's table, with its numbers, in the spec's order, and nothing else", () => {
  const rows = specTable();
  assert.ok(rows.length >= 60, `the whole table was read (${rows.length} rows)`);
  assert.is(new Set(rows.map((r) => r.endpoint)).size, rows.length, "the spec names each endpoint once");
  assert.equal(
    Object.keys(RATE_LIMITS),
    rows.map((r) => r.endpoint),
  );
  for (const { endpoint, windows } of rows) {
    assert.equal(JSON.parse(JSON.stringify(RATE_LIMITS[endpoint as keyof typeof RATE_LIMITS])), windows, endpoint);
  }
});

table("the chunked caption upload part is the one row with two windows: 300/min and 3000/h", () => {
  assert.equal(RATE_LIMITS["POST /captions/uploads/<session_id>/part/<index>"], [
    { limit: 300, windowSeconds: 60 },
    { limit: 3000, windowSeconds: 3600 },
  ]);
  const multi = Object.entries(RATE_LIMITS)
    .filter(([, w]) => w.length > 1)
    .map(([k]) => k);
  assert.equal(multi, ["POST /captions/uploads/<session_id>/part/<index>"]);
  for (const windows of Object.values(RATE_LIMITS))
    assert.is(windows[0]!.windowSeconds, 60, "every first window is per minute");
});

table.run();

const PART = "POST /captions/uploads/<session_id>/part/<index>";
const allowedCount = (ds: RateLimitDecision[]) => ds.filter((d) => d.allowed).length;

for (const backend of await storeBackends()) {
  const t = suite(`rate limiter on ${backend.name}`);
  let counters: Counters;
  let clock: FakeClock;
  let limiter: ReturnType<typeof createRateLimiter>;
  t.before.each(() => {
    // 5 s into a minute (and into an hour), so window ends are known numbers.
    clock = fakeClock(Date.UTC(2026, 10, 1, 12, 0, 5));
    counters =
      backend.name === "redis"
        ? redisCounters({ url: backend.url, prefix: isolatedRedisPrefix() })
        : memoryCounters(() => clock.now());
    limiter = createRateLimiter(counters, () => clock.now());
  });
  t.after.each(async () => {
    await counters.close();
  });

  t("holds its limit exactly under concurrency: 100 at once against 20/min lets exactly 20 through", async () => {
    const decisions = await Promise.all(Array.from({ length: 100 }, () => limiter.check("p1", "POST /analyze")));
    assert.is(allowedCount(decisions), 20);
    for (const d of decisions.filter((d) => !d.allowed)) assert.ok(d.retryAfterSeconds! >= 10);
    // The refused 80 gave their counts back: the window holds exactly the 20 that ran.
    const next = await limiter.check("p1", "POST /analyze");
    assert.not.ok(next.allowed);
    assert.is(next.headers.RateLimit, '"per-minute";r=0;t=55');
  });

  t("a new window allows again; subjects and rules are separate budgets", async () => {
    for (let i = 0; i < 5; i++) assert.ok((await limiter.check("p1", "POST /generate-video")).allowed);
    assert.not.ok((await limiter.check("p1", "POST /generate-video")).allowed);
    assert.ok((await limiter.check("p2", "POST /generate-video")).allowed, "another partner");
    assert.ok((await limiter.check("p1", "POST /merge-videos")).allowed, "another endpoint");
    clock.advance(54_999);
    assert.not.ok((await limiter.check("p1", "POST /generate-video")).allowed, "the last millisecond of the minute");
    clock.advance(1);
    const fresh = await limiter.check("p1", "POST /generate-video");
    assert.ok(fresh.allowed, "the next minute");
    assert.is(fresh.headers.RateLimit, '"per-minute";r=4;t=60');
  });

  t("headers follow draft-ietf-httpapi-ratelimit-headers on every decision", async () => {
    const first = await limiter.check("p1", "POST /generate-video");
    assert.equal(first, {
      allowed: true,
      headers: { "RateLimit-Policy": '"per-minute";q=5;w=60', RateLimit: '"per-minute";r=4;t=55' },
      retryAfterSeconds: null,
    });
    clock.advance(10_500); // t rounds up: 44.5 s left is announced as 45
    const second = await limiter.check("p1", "POST /generate-video");
    assert.is(second.headers.RateLimit, '"per-minute";r=3;t=45');

    const part = await limiter.check("p1", PART);
    assert.is(part.headers["RateLimit-Policy"], '"per-minute";q=300;w=60, "per-hour";q=3000;w=3600');
    assert.is(part.headers.RateLimit, '"per-minute";r=299;t=45, "per-hour";r=2999;t=3585');
  });

  t("a refusal says when to retry: when the exceeded window resets, never under 10 s", async () => {
    for (let i = 0; i < 5; i++) await limiter.check("p1", "POST /generate-video");
    const early = await limiter.check("p1", "POST /generate-video");
    assert.not.ok(early.allowed);
    assert.is(early.retryAfterSeconds, 55);
    assert.is(early.headers["Retry-After"], "55");
    assert.is(early.headers.RateLimit, '"per-minute";r=0;t=55');

    clock.advance(52_000); // 3 s before the window ends
    const late = await limiter.check("p1", "POST /generate-video");
    assert.not.ok(late.allowed);
    assert.is(late.retryAfterSeconds, 10);
    assert.is(late.headers["Retry-After"], "10");
    assert.is(late.headers.RateLimit, '"per-minute";r=0;t=3');
  });

  t("two windows: 300/min and 3000/h, and a per-minute refusal does not spend the hour", async () => {
    // 301 at once every minute: the minute admits 300 and refuses one, for ten minutes, and then the hour is
    // spent. Had the ten refusals counted against the hour, only 2990 would have passed.
    const perMinute: number[] = [];
    for (let minute = 0; minute < 11; minute++) {
      perMinute.push(allowedCount(await Promise.all(Array.from({ length: 301 }, () => limiter.check("p1", PART)))));
      clock.advance(60_000);
    }
    assert.equal(perMinute, [300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 0]);
    const d = await limiter.check("p1", PART);
    assert.not.ok(d.allowed);
    // Now 12:11:05: the minute has room, the hour (ends 13:00:00) has none and decides the wait.
    assert.is(d.headers.RateLimit, '"per-minute";r=300;t=55, "per-hour";r=0;t=2935');
    assert.is(d.retryAfterSeconds, 2935);
    assert.is(d.headers["Retry-After"], "2935");
    clock.set(Date.UTC(2026, 10, 1, 13, 0, 0));
    assert.ok((await limiter.check("p1", PART)).allowed, "the next hour");
  });

  t("an override replaces the first window's limit only", async () => {
    const raised = await Promise.all(Array.from({ length: 30 }, () => limiter.check("p1", "POST /generate-video", 20)));
    assert.is(allowedCount(raised), 20);
    assert.is(raised[0]!.headers["RateLimit-Policy"], '"per-minute";q=20;w=60');

    const lowered = await Promise.all(Array.from({ length: 5 }, () => limiter.check("p1", PART, 2)));
    assert.is(allowedCount(lowered), 2);
    assert.is(lowered[0]!.headers["RateLimit-Policy"], '"per-minute";q=2;w=60, "per-hour";q=3000;w=3600');

    const malformed = await Promise.all(
      Array.from({ length: 10 }, () => limiter.check("p2", "POST /generate-video", Number.NaN)),
    );
    assert.is(allowedCount(malformed), 5, "a malformed override falls back to the table, never to no limit");
  });

  t("a rule outside the table needs its windows; an unknown name is an error", async () => {
    const windows = [{ limit: 3, windowSeconds: 10 }];
    const ds = await Promise.all(Array.from({ length: 6 }, () => limiter.check("p1", "POST /acme/thing", windows)));
    assert.is(allowedCount(ds), 3);
    assert.is(ds[0]!.headers["RateLimit-Policy"], '"per-10s";q=3;w=10');
    assert.ok(ds.filter((d) => !d.allowed).every((d) => d.retryAfterSeconds === 10));
    const err = await rejection(limiter.check("p1", "POST /nope" as never));
    assert.match(String(err), "not a row of the rate-limit table");
  });

  t.run();
}
