// `jobUpdates` over SSE (through app.fetch) and over WebSocket (on a real Node server, graphql-ws client),
// with the job workers running: the current state first, then each change until the terminal one. Then
// two instances on one Postgres database and one Redis: a subscriber on the API instance sees the job
// that the worker instance runs.

import { type Client, createClient } from "graphql-ws";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import WebSocket from "ws";
import type { JobUpdate } from "../../core/jobs.ts";
import type { Kernel } from "../../core/kernel.ts";
import account from "../../plugins/account/index.ts";
import type { PubSub } from "../../storage/pubsub.ts";
import { createTestKernel, graphql, graphqlSubscription, type TestKernel } from "../../testkit/index.ts";
import { callerFromRequest } from "../../transports/graphql/context.ts";
import { subscribeToJob } from "../../transports/graphql/subscriptions.ts";
import { type HttpServer, serveHttp } from "../../transports/http.ts";
import {
  databaseBackends,
  isolatedPostgresDatabase,
  isolatedRedisPrefix,
  postgresUrl,
  redisUrl,
} from "../helpers/backends.ts";
import { openGate, ticker } from "./fixtures.ts";
import { startSharedInstance } from "./helpers.ts";

const SUBSCRIPTION =
  "subscription($id: String!) { jobUpdates(id: $id) { job_id plugin kind state terminal progress message error updated_at } }";

async function submit(tk: TestKernel, key: string, input: Record<string, unknown> = {}): Promise<string> {
  const res = await graphql(tk, "mutation($input: TickInput) { tick(input: $input) }", { input }, { key });
  assert.is(res.errors, undefined, JSON.stringify(res.errors));
  return res.data.tick.job_id;
}

/** The updates a subscriber saw, checked against what the job does: queued, running, 50 % "halfway", then its end. */
function assertRun(updates: JobUpdate[], jobId: string, end: "done" | "failed") {
  assert.ok(updates.length >= 2, JSON.stringify(updates));
  assert.is(updates[0]!.state, "queued");
  assert.is(updates[0]!.terminal, false);
  for (const u of updates) {
    assert.is(u.job_id, jobId);
    assert.is(u.plugin, "ticker");
    assert.is(u.kind, "tick");
    assert.match(u.updated_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  }
  assert.ok(
    updates.some((u) => u.state === "running" && u.progress === 50 && u.message === "halfway"),
    JSON.stringify(updates),
  );
  const last = updates.at(-1)!;
  assert.is(last.state, end);
  assert.is(last.terminal, true);
  assert.is(updates.filter((u) => u.terminal).length, 1);
  if (end === "failed") assert.is(last.error, "The tick failed.");
  // Never backwards: once running, never queued again.
  assert.not.ok(updates.slice(updates.findIndex((u) => u.state === "running")).some((u) => u.state === "queued"));
}

/** Reads a subscription: the first update, then opens the job's gate and reads the rest. */
async function follow(stream: AsyncIterable<{ data: any; errors?: unknown }>, jobId: string): Promise<JobUpdate[]> {
  const updates: JobUpdate[] = [];
  for await (const result of stream) {
    assert.is(result.errors, undefined, JSON.stringify(result.errors));
    updates.push(result.data.jobUpdates);
    if (updates.length === 1) openGate(jobId);
  }
  return updates;
}

/** Counts live pub/sub listeners, to see that a subscriber who leaves is unsubscribed. */
function countingPubSub(inner: PubSub) {
  const live = new Set<object>();
  const pubsub: PubSub = {
    publish: (c, m) => inner.publish(c, m),
    close: () => inner.close(),
    async subscribe(channel, listener) {
      const token = {};
      const off = await inner.subscribe(channel, listener);
      live.add(token);
      return async () => {
        live.delete(token);
        await off();
      };
    },
  };
  return { pubsub, live };
}

async function until(check: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const backend of await databaseBackends()) {
  const t = suite(`GraphQL jobUpdates over SSE on ${backend.name}`);
  let tk: TestKernel;
  t.before.each(async () => {
    tk = await createTestKernel({
      plugins: [account, ticker],
      start: true,
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    });
  });
  t.after.each(async () => {
    await tk.close();
  });

  t("streams the current state, then each change, and completes after the terminal one", async () => {
    const p = await tk.partner();
    const id = await submit(tk, p.key);
    assertRun(await follow(graphqlSubscription(tk, SUBSCRIPTION, { id }, { key: p.key }), id), id, "done");
  });

  t("a failing job ends on its failure state, with the job's public error", async () => {
    const p = await tk.partner({ credits: 10 });
    const id = await submit(tk, p.key, { fail: true, credits: 5 });
    assertRun(await follow(graphqlSubscription(tk, SUBSCRIPTION, { id }, { key: p.key }), id), id, "failed");
    assert.is(await tk.kernel.accounts.balance(p.id), 10, "refunded");
  });

  t("an ended job yields its final state once", async () => {
    const p = await tk.partner();
    const id = await submit(tk, p.key);
    openGate(id);
    for (let i = 0; i < 200 && !(await tk.kernel.jobs.current(id, p.id))?.terminal; i++)
      await new Promise((r) => setTimeout(r, 50));
    const updates: JobUpdate[] = [];
    for await (const r of graphqlSubscription(tk, SUBSCRIPTION, { id }, { key: p.key }))
      updates.push(r.data.jobUpdates);
    assert.equal(
      updates.map((u) => [u.state, u.terminal]),
      [["done", true]],
    );
  });

  t("another account's job, a missing job, a missing key: the REST texts", async () => {
    const owner = await tk.partner();
    const other = await tk.partner();
    const id = await submit(tk, owner.key);
    openGate(id);
    const first = async (vars: Record<string, unknown>, key?: string) => {
      const results = [];
      for await (const r of graphqlSubscription(tk, SUBSCRIPTION, vars, { key })) results.push(r);
      assert.is(results.length, 1);
      return results[0]!;
    };
    for (const [vars, key, message, status] of [
      [{ id }, other.key, "Not found", 404],
      [{ id: "svc-00000000" }, owner.key, "Not found", 404],
      [{ id }, undefined, "Missing or invalid Authorization header", 401],
    ] as const) {
      const r = await first(vars, key);
      assert.is(r.data ?? null, null);
      assert.is((r.errors as any)[0].message, message);
      assert.is((r.errors as any)[0].extensions.status, status);
    }
  });

  t("a subscriber that leaves is unsubscribed at once, even from a quiet job", async () => {
    const p = await tk.partner();
    const id = await submit(tk, p.key);
    const counting = countingPubSub(tk.kernel.pubsub);
    const original = tk.kernel.pubsub;
    tk.kernel.pubsub = counting.pubsub;
    try {
      for await (const r of graphqlSubscription(tk, SUBSCRIPTION, { id }, { key: p.key })) {
        assert.is(r.data.jobUpdates.state, "queued");
        assert.is(counting.live.size, 1);
        break;
      }
      await until(() => counting.live.size === 0, "the listener to go");

      // And directly: return() ends a pending next() without waiting for a message.
      const caller = callerFromRequest(
        new Request("http://t/graphql", { headers: { authorization: `Bearer ${p.key}`, "user-agent": "tests/1.0" } }),
      );
      const it = await subscribeToJob(tk.kernel, caller, id);
      assert.is((await it.next()).value!.state, "queued");
      const pending = it.next();
      assert.is(counting.live.size, 1);
      await it.return!();
      assert.is((await pending).done, true);
      assert.is(counting.live.size, 0);
    } finally {
      tk.kernel.pubsub = original;
      openGate(id);
    }
  });

  t.run();
}

const ws = suite("GraphQL over WebSocket on a real server");
let tk: TestKernel;
let server: HttpServer;
let clients: Client[] = [];
let wsUrl: string;
ws.before.each(async () => {
  tk = await createTestKernel({ plugins: [account, ticker], start: true });
  // The server main.ts runs (transports/http.ts), WebSocket transport included.
  server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port: 0, hostname: "127.0.0.1" });
  assert.ok(server.websocket);
  wsUrl = new URL("/graphql", server.url).toString().replace(/^http/, "ws");
});
ws.after.each(async () => {
  for (const c of clients) await c.dispose();
  clients = [];
  await server.close();
  await tk.close();
});

function client(connectionParams: Record<string, unknown>, userAgent: string | null = "tests/1.0"): Client {
  // The `ws` package sends no User-Agent unless told, and the edge rule refuses a request without one.
  class AgentWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers: userAgent ? { "user-agent": userAgent } : {} });
    }
  }
  const c = createClient({ url: wsUrl, webSocketImpl: AgentWebSocket, connectionParams, retryAttempts: 0 });
  clients.push(c);
  return c;
}

ws("a subscription streams the job until it ends; the key comes in connectionParams", async () => {
  const p = await tk.partner();
  const id = await submit(tk, p.key);
  const c = client({ authorization: `Bearer ${p.key}` });
  assertRun(await follow(c.iterate({ query: SUBSCRIPTION, variables: { id } }) as AsyncIterable<any>, id), id, "done");
});

ws("queries and mutations run over the socket too, with the REST error texts", async () => {
  const p = await tk.partner({ credits: 77 });
  const c = client({ Authorization: `Bearer ${p.key}` });
  for await (const r of c.iterate({ query: "{ me { credits_remaining } }" }) as AsyncIterable<any>)
    assert.is(r.data.me.credits_remaining, 77);
  // Without a key, connection_init is refused: the socket closes with 4403 Forbidden before any operation runs.
  const refused = await (async () => {
    try {
      for await (const _ of client({}).iterate({ query: "{ me { credits_remaining } }" }) as AsyncIterable<any>)
        return "answered";
      return "completed";
    } catch (closed) {
      return (closed as { code?: number }).code;
    }
  })();
  assert.is(refused, 4403);
  for await (const r of client({ authorization: `Bearer ${p.key}` }, null).iterate({
    query: "{ me { credits_remaining } }",
  }) as AsyncIterable<any>)
    assert.is(r.errors[0].message, "error code: 1010");
  const other = await tk.partner();
  const id = await submit(tk, other.key);
  openGate(id);
  for await (const r of c.iterate({ query: SUBSCRIPTION, variables: { id } }) as AsyncIterable<any>)
    assert.is(r.errors[0].message, "Not found");
});

const cross = suite("GraphQL subscriptions across instances (Postgres and Redis)");
const pg = await postgresUrl();
const redis = await redisUrl();
if (pg && redis) {
  let a: Kernel;
  let b: Kernel;
  cross.before(async () => {
    const backends = { databaseUrl: await isolatedPostgresDatabase(), redis, prefix: isolatedRedisPrefix() };
    const instance = (role: "worker" | "api") => startSharedInstance(backends, role, [account, ticker]);
    a = await instance("worker"); // runs jobs, serves nothing here
    b = await instance("api"); // serves the subscriber, runs no jobs
  });
  cross.after(async () => {
    await b?.stop();
    await a?.stop();
  });

  cross("a subscriber on the API instance follows a job run by the worker instance", async () => {
    const { apiKey } = await a.accounts.create({ name: "Two instances", credits: 10 });
    // The test kit's helpers need only a kernel and an admin token.
    const onB = { kernel: b, adminToken: "x" } as TestKernel;
    const id = await submit(onB, apiKey);
    assertRun(await follow(graphqlSubscription(onB, SUBSCRIPTION, { id }, { key: apiKey }), id), id, "done");
  });
}
cross.run();
ws.run();
