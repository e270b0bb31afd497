// GET /me, /credits and /usage answer the balance from the key cache's copy of the partner row (core/accounts.ts).
// That is only right if every ledger write evicts it: a charge, a refund and an admin credit, in the process
// that made the write and, through `partner.changed`, in every other one. The clocks here never move, so the
// cache's 5 s TTL cannot be what makes an answer fresh: only an eviction can.

import { type Kysely, type KyselyPlugin, sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { Accounts } from "../../core/accounts.ts";
import { fakeClock } from "../../core/clock.ts";
import { loadConfig } from "../../core/config.ts";
import { hashApiKey } from "../../core/ids.ts";
import { createKernel, type Kernel } from "../../core/kernel.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import account from "../../plugins/account/index.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { memoryCounters, redisCounters } from "../../storage/counters.ts";
import { type Database, openDatabase } from "../../storage/db.ts";
import { memoryPubSub, type PubSub, redisPubSub } from "../../storage/pubsub.ts";
import type { KernelTables } from "../../storage/tables.ts";
import { createHttpApp } from "../../transports/http.ts";
import { isolatedPostgresDatabase, isolatedRedisPrefix, postgresUrl, redisUrl } from "../helpers/backends.ts";
import { generousLimits } from "../helpers/test-limits.ts";

const ADMIN = "balance-cache-admin";

// A paid operation, so a charge goes through the same path as a real plugin's (ctx.submitJob).
const paid = definePlugin({
  name: "paid",
  rateLimits: generousLimits("POST /paid"),
  operations: [
    operation({
      method: "POST",
      path: "/paid",
      status: 202,
      input: z.object({ credits: z.number().int().min(0) }),
      async handle(ctx) {
        const job = await ctx.submitJob({ kind: "paid", credits: ctx.input.credits, state: "queued" });
        return { job_id: job.jobId, credits_remaining: job.creditsRemaining };
      },
    }),
  ],
});

interface Node {
  kernel: Kernel;
  call(
    method: string,
    path: string,
    init?: { key?: string; admin?: boolean; body?: unknown },
  ): Promise<{ status: number; body: any }>;
}

function node(kernel: Kernel): Node {
  const app = createHttpApp(kernel, { adminToken: ADMIN });
  return {
    kernel,
    async call(method, path, init = {}) {
      const headers: Record<string, string> = { "user-agent": "balance-cache-test/1" };
      if (init.key) headers.authorization = `Bearer ${init.key}`;
      if (init.admin) headers.authorization = `Bearer ${ADMIN}`;
      if (init.body !== undefined) headers["content-type"] = "application/json";
      const url = `http://mediagate.test${path.startsWith("/api/") ? path : `/api/v1/partner${path}`}`;
      const res = await app.fetch(
        new Request(url, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }),
      );
      return { status: res.status, body: await res.json() };
    },
  };
}

/** The balance as GET /me, /credits and /usage tell it; they must agree. */
async function shown(n: Node, key: string): Promise<number> {
  const [me, credits, usage] = await Promise.all([
    n.call("GET", "/me", { key }),
    n.call("GET", "/credits", { key }),
    n.call("GET", "/usage", { key }),
  ]);
  assert.is(me.status, 200);
  assert.is(credits.body.credits_remaining, me.body.credits_remaining, "/credits agrees with /me");
  assert.is(usage.body.credits_remaining, me.body.credits_remaining, "/usage agrees with /me");
  return me.body.credits_remaining;
}

/** Waits (up to 3 s, well inside the cache's TTL even on a real clock) for `n` to show `expected`. */
async function eventually(n: Node, key: string, expected: number, what: string): Promise<void> {
  const until = Date.now() + 3000;
  let last = await shown(n, key);
  while (last !== expected && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
    last = await shown(n, key);
  }
  assert.is(last, expected, what);
}

/** Writes a balance behind the service's back (no eviction): what a stale cache would go on showing. */
async function setBalanceBehindTheCache(kernel: Kernel, partnerId: string, credits: number): Promise<void> {
  await sql`update partners set credits_remaining = ${credits} where id = ${partnerId}`.execute(kernel.database.kysely);
}

// ---------------------------------------------------------------------------------------------------------
// Two kernels sharing one database and one pub/sub, like two API processes: on PGlite and memory pub/sub
// always (one database object, one in-process bus), on Postgres and Redis when both answer (separate pools
// and Redis connections, so every eviction crosses the network).

interface Pair {
  a: Node;
  b: Node;
  close(): Promise<void>;
}

async function kernelOn(
  database: Database,
  pubsub: PubSub,
  counters: ReturnType<typeof memoryCounters>,
): Promise<Kernel> {
  const config = loadConfig({
    LOG_LEVEL: "silent",
    ROLE: "api",
    SANDBOX_LATENCY_MS: "0",
    DATA_DIR: "/tmp/mediagate-balance-cache",
  });
  const kernel = await createKernel({
    config,
    plugins: [account, paid],
    database,
    blobs: memoryBlobStore(),
    pubsub,
    counters,
    clock: fakeClock(Date.UTC(2026, 10, 1, 12)),
  });
  // What start() does for the cache, without the queue and the usage timer this test has no use for.
  const unlisten = await kernel.accounts.listen();
  const stop = kernel.stop.bind(kernel);
  kernel.stop = async () => {
    await unlisten();
    await stop();
  };
  return kernel;
}

async function memoryPair(): Promise<Pair> {
  const database = await openDatabase({});
  const pubsub = memoryPubSub();
  const a = await kernelOn(database, pubsub, memoryCounters());
  const b = await kernelOn(database, pubsub, memoryCounters());
  return {
    a: node(a),
    b: node(b),
    async close() {
      await b.stop();
      await a.stop();
      await pubsub.close();
      await database.close();
    },
  };
}

async function networkPair(redis: string): Promise<Pair> {
  const url = await isolatedPostgresDatabase();
  const prefix = isolatedRedisPrefix();
  const kernels: Kernel[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  for (let i = 0; i < 2; i++) {
    const database = await openDatabase({ url });
    const pubsub = redisPubSub({ url: redis, prefix });
    const counters = redisCounters({ url: redis, prefix });
    kernels.push(await kernelOn(database, pubsub, counters));
    closers.push(
      () => pubsub.close(),
      () => counters.close(),
      () => database.close(),
    );
  }
  return {
    a: node(kernels[0]!),
    b: node(kernels[1]!),
    async close() {
      for (const k of kernels) await k.stop();
      for (const c of closers) await c();
    },
  };
}

const backends: Array<{ name: string; pair: () => Promise<Pair> }> = [
  { name: "PGlite and memory pub/sub", pair: memoryPair },
];
const pg = await postgresUrl();
const redis = await redisUrl();
if (pg && redis) backends.push({ name: "Postgres and Redis", pair: () => networkPair(redis) });

for (const backend of backends) {
  const t = suite(`balance cache on ${backend.name}`);
  let pair: Pair;
  t.before.each(async () => {
    pair = await backend.pair();
  });
  t.after.each(async () => {
    await pair.close();
  });

  t("the balance really is served from the cache (so the evictions below are what keeps it right)", async () => {
    const { a, b } = pair;
    const { partner, apiKey } = await a.kernel.accounts.create({ name: "Cached", credits: 1000 });
    assert.is(await shown(a, apiKey), 1000);
    assert.is(await shown(b, apiKey), 1000);
    await setBalanceBehindTheCache(a.kernel, partner.id, 990);
    assert.is(await shown(a, apiKey), 1000, "a write that announces nothing is not seen here");
    assert.is(await shown(b, apiKey), 1000, "nor there");
    await a.kernel.accounts.changed(partner.id);
    assert.is(await shown(a, apiKey), 990, "the writing process sees it at once");
    await eventually(b, apiKey, 990, "the other process sees it once the message arrives");
  });

  t("a charge, a refund and an admin credit each evict the cached balance, here and in the other process", async () => {
    const { a, b } = pair;
    const { partner, apiKey } = await a.kernel.accounts.create({ name: "Ledger", credits: 1000 });
    assert.is(await shown(a, apiKey), 1000);
    assert.is(await shown(b, apiKey), 1000);

    // Charge through REST on a.
    const charged = await a.call("POST", "/paid", { key: apiKey, body: { credits: 40 } });
    assert.is(charged.status, 202);
    assert.is(charged.body.credits_remaining, 960);
    assert.is(await shown(a, apiKey), 960, "charge: the charging process at once");
    await eventually(b, apiKey, 960, "charge: the other process");

    // Refund on b (a worker elsewhere ending the job as failed).
    assert.ok(
      await b.kernel.finishJob(charged.body.job_id, { state: "failed", refund: true, error: "Generation failed." }),
    );
    assert.is(await shown(b, apiKey), 1000, "refund: the refunding process at once");
    await eventually(a, apiKey, 1000, "refund: the other process");

    // Charge through the kernel on b, then an admin credit through the admin API on a.
    await b.kernel.chargeAndCreateJob({
      partnerId: partner.id,
      plugin: "paid",
      kind: "paid",
      endpoint: "POST /paid",
      state: "queued",
      credits: 25,
      inflight: false,
    });
    assert.is(await shown(b, apiKey), 975);
    await eventually(a, apiKey, 975, "kernel charge: the other process");
    const credited = await a.call("POST", `/api/v1/admin/partners/${partner.id}/credits`, {
      admin: true,
      body: { amount: 500, type: "purchase", description: "Invoice 7" },
    });
    assert.is(credited.status, 200);
    assert.is(credited.body.credits_remaining, 1475);
    assert.is(await shown(a, apiKey), 1475, "admin credit: the crediting process at once");
    await eventually(b, apiKey, 1475, "admin credit: the other process");

    // A refused charge (402) changes nothing and shows nothing new.
    const refused = await b.call("POST", "/paid", { key: apiKey, body: { credits: 5000 } });
    assert.is(refused.status, 402);
    assert.is(refused.body.credits_remaining, 1475);
    assert.is(await shown(b, apiKey), 1475);

    const sum = await sql<{ s: string }>`select sum(amount) as s from ledger where partner_id = ${partner.id}`.execute(
      a.kernel.database.kysely,
    );
    assert.is(Number(sum.rows[0]!.s), 1475, "the ledger sums to the balance shown");
  });

  t("a charge is decided by the database, not by a cached balance", async () => {
    const { a, b } = pair;
    const { partner, apiKey } = await a.kernel.accounts.create({ name: "Stale", credits: 100 });
    assert.is(await shown(b, apiKey), 100);
    // The balance drops without any eviction: b's cache still says 100, the row says 10.
    await setBalanceBehindTheCache(a.kernel, partner.id, 10);
    assert.is(await shown(b, apiKey), 100);
    const refused = await b.call("POST", "/paid", { key: apiKey, body: { credits: 50 } });
    assert.is(refused.status, 402, "the conditional update in the transaction refuses it");
    assert.is(refused.body.credits_remaining, 10, "and reports the balance the transaction read");
  });

  t.run();
}

// ---------------------------------------------------------------------------------------------------------
// A read that was on its way to the database when an eviction arrived may carry the row as it was before the
// write: it must not fill the cache, and no caller that arrives after the eviction may share it.

/** Holds the result of the next query on `partners` until released. */
function gate() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  let armed = true;
  let queries = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    async transformResult(args) {
      queries++;
      if (armed) {
        armed = false;
        entered();
        await released;
      }
      return args.result;
    },
  };
  return { plugin, release, reached, queries: () => queries };
}

const race = suite("key cache: reads that race an eviction");
let raceDb: Database;
race.before.each(async () => {
  raceDb = await openDatabase({});
});
race.after.each(async () => {
  await raceDb.close();
});

async function raceKernel(): Promise<Kernel> {
  const config = loadConfig({ LOG_LEVEL: "silent", DATA_DIR: "/tmp/mediagate-balance-cache" });
  return createKernel({
    config,
    plugins: [account],
    database: raceDb,
    blobs: memoryBlobStore(),
    counters: memoryCounters(),
    pubsub: memoryPubSub(),
    clock: fakeClock(),
  });
}

/**
 * A race kernel with one partner (100 credits) named `name`, a new gate, the kernel's accounts over the race
 * database with every query passing through the gate, and the hash of the partner's key.
 */
async function raceRig(name: string) {
  const kernel = await raceKernel();
  const { partner, apiKey } = await kernel.accounts.create({ name, credits: 100 });
  const g = gate();
  const gated = raceDb.kysely.withPlugin(g.plugin) as Kysely<KernelTables>;
  const accounts = new Accounts(gated, kernel.clock, kernel.pubsub, kernel.usage);
  return { kernel, partner, g, accounts, hash: hashApiKey(apiKey) };
}

race("a read overtaken by an eviction answers its caller but does not fill the cache", async () => {
  const { kernel, partner, g, accounts, hash } = await raceRig("Race");

  const read = accounts.byKeyHash(hash);
  await g.reached; // the row (100) has been read and is on its way back
  await accounts.changed(partner.id); // meanwhile a write is announced
  g.release();
  assert.is((await read)!.creditsRemaining, 100, "the overtaken read answers what it read");
  // The write the eviction announced (made here behind the service's back, so only the eviction tells of it).
  await setBalanceBehindTheCache(kernel, partner.id, 70);
  assert.is(await accounts.balance(partner.id), 70, "the overtaken read did not fill the cache");
  assert.is((await accounts.byKeyHash(hash))!.creditsRemaining, 70, "the next key lookup reads the row again");
  assert.is(g.queries(), 3, "key read, balance read, key read: all from the database");
  assert.is(await accounts.balance(partner.id), 70);
  assert.is(g.queries(), 3, "and now the cache holds the fresh row");
  await kernel.stop();
});

race("callers share a read in flight only if no eviction came after it started", async () => {
  const { kernel, partner, g, accounts, hash } = await raceRig("Join");

  const first = accounts.byKeyHash(hash);
  await g.reached;
  const joined = accounts.byKeyHash(hash); // before any eviction: shares the read
  await accounts.changed(partner.id);
  const after = accounts.byKeyHash(hash); // after it: must make its own
  g.release();
  const [p1, p2, p3] = await Promise.all([first, joined, after]);
  assert.is(p2, p1, "a caller that came before the eviction shared the read");
  assert.is.not(p3, p1, "a caller that came after the eviction made its own read");
  assert.is(g.queries(), 2);
  await kernel.stop();
});

race("without an eviction a burst of misses makes one read, and later calls are hits", async () => {
  const { kernel, partner, g, accounts, hash } = await raceRig("Burst");
  const burst = Array.from({ length: 20 }, () => accounts.byKeyHash(hash));
  await g.reached;
  g.release();
  const got = await Promise.all(burst);
  assert.ok(got.every((p) => p === got[0]));
  assert.is(g.queries(), 1);
  assert.is((await accounts.byKeyHash(hash))!.id, partner.id);
  assert.is(await accounts.balance(partner.id), 100);
  assert.is(g.queries(), 1, "both answered from the cache");
  await kernel.stop();
});

race.run();
