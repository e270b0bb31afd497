// Open `jobUpdates` subscriptions end when their key stops being valid (issue 14, item 4), over SSE and over
// WebSocket: a rotated key ends the stream with the 401 "Invalid API key", a deactivated partner with the
// 403 "API key deactivated", each as a final GraphQL error; another partner's stream stays open; the
// shutdown function ends them all with its message. On the embedded setup (PGlite, in-process pub/sub), and
// on two instances sharing one Postgres database and one Redis: the revocation goes through instance 1's
// admin API and the subscription open on instance 2 ends.

import { type Client, createClient } from "graphql-ws";
import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import WebSocket from "ws";
import { z } from "zod";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import type { Kernel } from "../../core/kernel.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, graphql, graphqlSubscription, type TestKernel } from "../../testkit/index.ts";
import { endSubscriptions, SHUTDOWN_MESSAGE } from "../../transports/graphql/subscriptions.ts";
import { createHttpApp, type HttpServer, serveHttp } from "../../transports/http.ts";
import { isolatedPostgresDatabase, isolatedRedisPrefix, postgresUrl, redisUrl } from "../helpers/backends.ts";
import { jobPlugin, QUEUED_RUNNING_DONE } from "../helpers/job-plugin.ts";
import { jobGates } from "./fixtures.ts";
import { startSharedInstance } from "./helpers.ts";

// A job that stays queued until the test lets it go (fixtures.ts's ticker lets go by itself after 20 s, which
// a loaded machine can reach before a test is done with the job); every gate opens when a test ends.
const holdGates = jobGates();
const openGate = holdGates.open;
const openAllGates = holdGates.openAll;
const hold: JobKindDeclaration<Record<string, never>> = {
  ...QUEUED_RUNNING_DONE,
  failError: "The hold failed.",
  retries: 0,
  async run(ctx) {
    await holdGates.wait(ctx.jobId);
    await ctx.moveTo("running", "started");
    return { state: "done" };
  },
};
const holder = jobPlugin("holder", "hold", hold, {
  limitPerMinute: 1000,
  body: z.object({ note: z.string().optional() }),
});

const SUBSCRIPTION = "subscription($id: String!) { jobUpdates(id: $id) { job_id state terminal progress } }";
const ADMIN_TOKEN = "revocation-test-admin-token";
// A bounded wait for "ends at all"; nothing here measures how fast.
const ENDS_WITHIN_MS = 12_000;

type Result = { data?: any; errors?: Array<{ message: string; extensions?: Record<string, any> }> };
type Transport = "sse" | "websocket";

/**
 * One deployment as the tests see it: where the admin API is called (instance 1), and where subscribers
 * connect (instance 2; the same instance on the embedded setup).
 */
interface Deployment {
  admin: Kernel;
  subscriber: Kernel;
  /** ws://…/graphql of a real server on the subscriber instance. */
  wsUrl: string;
}

// Asked before any suite is queued: a top-level await between suites would let uvu start the first suite
// while the second is being declared, when the file is run on its own (`npx tsx <file>`).
const pg = await postgresUrl();
const redis = await redisUrl();

const apps = new WeakMap<Kernel, ReturnType<typeof createHttpApp>>();
function appOf(kernel: Kernel) {
  let app = apps.get(kernel);
  if (!app) apps.set(kernel, (app = createHttpApp(kernel, { adminToken: ADMIN_TOKEN })));
  return app;
}

async function adminCall(kernel: Kernel, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await appOf(kernel).fetch(
    new Request(`http://mediagate.test/api/v1/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
        "user-agent": "tests/1.0",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  const parsed = await res.json();
  assert.is(res.status, status, JSON.stringify(parsed));
  return parsed;
}

const rotate = (d: Deployment, partnerId: string): Promise<{ api_key: string }> =>
  adminCall(d.admin, "POST", `/partners/${partnerId}/rotate-key`);
const deactivate = (d: Deployment, partnerId: string) =>
  adminCall(d.admin, "PATCH", `/partners/${partnerId}`, { is_active: false });

async function partner(d: Deployment): Promise<{ id: string; key: string }> {
  const { partner_id, api_key } = await adminCall(
    d.admin,
    "POST",
    "/partners",
    { name: "Subscriber", credits: 100 },
    201,
  );
  return { id: partner_id, key: api_key };
}

/** A job of this key, held at its gate (queued) until the test opens it. */
async function job(d: Deployment, key: string): Promise<string> {
  const res = await graphql(
    { kernel: d.subscriber, adminToken: ADMIN_TOKEN } as TestKernel,
    'mutation { hold(input: { note: "held" }) }',
    {},
    { key },
  );
  assert.is(res.errors, undefined, JSON.stringify(res.errors));
  return res.data.hold.job_id;
}

const clients: Client[] = [];
function wsClient(url: string, key: string): Client {
  // The `ws` package sends no User-Agent unless told, and the edge rule refuses a request without one.
  class AgentWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers: { "user-agent": "tests/1.0" } });
    }
  }
  const c = createClient({
    url,
    webSocketImpl: AgentWebSocket,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 0,
  });
  clients.push(c);
  return c;
}
async function disposeClients() {
  for (const c of clients.splice(0)) await c.dispose();
}

/** A subscriber reading in the background: what it got so far, and when its stream ended. */
interface Subscriber {
  results: Result[];
  ended: boolean;
  done: Promise<void>;
}

async function subscribe(d: Deployment, transport: Transport, key: string, id: string): Promise<Subscriber> {
  const stream: AsyncIterable<Result> =
    transport === "sse"
      ? graphqlSubscription(
          { kernel: d.subscriber, adminToken: ADMIN_TOKEN } as TestKernel,
          SUBSCRIPTION,
          { id },
          { key },
        )
      : (wsClient(d.wsUrl, key).iterate({ query: SUBSCRIPTION, variables: { id } }) as AsyncIterable<Result>);
  const s: Subscriber = { results: [], ended: false, done: Promise.resolve() };
  s.done = (async () => {
    try {
      for await (const r of stream) s.results.push(r);
    } finally {
      s.ended = true;
    }
  })();
  s.done.catch(() => {});
  // Open once the job's current state has arrived.
  await until(() => s.results.length > 0 || s.ended, "the first update");
  assert.is(s.results[0]?.data?.jobUpdates?.state, "queued", JSON.stringify(s.results));
  return s;
}

async function until(check: () => boolean, what: string, ms = ENDS_WITHIN_MS) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The stream ended, and its last message is the given error (no data), every earlier one an update. */
async function endsWith(s: Subscriber, message: string, status: number, code: string) {
  await until(() => s.ended, `the stream to end with "${message}"`);
  await s.done;
  const last = s.results.at(-1)!;
  assert.is(last.data?.jobUpdates ?? null, null, JSON.stringify(s.results));
  assert.is(last.errors?.length, 1, JSON.stringify(s.results));
  assert.is(last.errors![0]!.message, message);
  assert.is(last.errors![0]!.extensions?.status, status);
  assert.is(last.errors![0]!.extensions?.code, code);
  for (const r of s.results.slice(0, -1)) assert.is(r.errors, undefined, JSON.stringify(s.results));
}

/** Still open: the job's gate opens and the stream follows it to its end, without an error. */
async function staysOpen(s: Subscriber, jobId: string) {
  assert.is(s.ended, false, JSON.stringify(s.results));
  openGate(jobId);
  await until(() => s.ended, "the unrelated stream to follow its job to the end");
  await s.done;
  for (const r of s.results) assert.is(r.errors, undefined, JSON.stringify(s.results));
  const last = s.results.at(-1)!.data.jobUpdates;
  assert.is(last.state, "done");
  assert.is(last.terminal, true);
}

/** Two partners on `d`, each with a held job and a stream of that job's updates open over `transport`. */
async function twoPartnersWatching(d: Deployment, transport: Transport) {
  const a = await partner(d);
  const b = await partner(d);
  const jobA = await job(d, a.key);
  const jobB = await job(d, b.key);
  const sa = await subscribe(d, transport, a.key, jobA);
  const sb = await subscribe(d, transport, b.key, jobB);
  return { a, jobA, jobB, sa, sb };
}

/** The same tests on a deployment, for one transport. */
function revocationTests(t: ReturnType<typeof suite>, deployment: () => Deployment, transport: Transport) {
  t(
    `${transport}: a rotated key ends its streams with "Invalid API key"; another partner's stays open; the new key subscribes`,
    async () => {
      const d = deployment();
      const { a, jobA, jobB, sa, sb } = await twoPartnersWatching(d, transport);
      const sa2 = await subscribe(d, transport, a.key, jobA);

      const { api_key } = await rotate(d, a.id);
      await endsWith(sa, "Invalid API key", 401, "UNAUTHENTICATED");
      await endsWith(sa2, "Invalid API key", 401, "UNAUTHENTICATED");

      // A subscription with the new key is not ended by the rotation that issued it.
      const fresh = await subscribe(d, transport, api_key, jobA);
      await staysOpen(sb, jobB);
      await staysOpen(fresh, jobA);
    },
  );

  t(
    `${transport}: a deactivated partner's streams end with "API key deactivated"; another partner's stays open`,
    async () => {
      const d = deployment();
      const { a, jobB, sa, sb } = await twoPartnersWatching(d, transport);

      await deactivate(d, a.id);
      await endsWith(sa, "API key deactivated", 403, "FORBIDDEN");
      await staysOpen(sb, jobB);
    },
  );

  t(`${transport}: the shutdown function ends every open stream with its message`, async () => {
    const d = deployment();
    const { sa, sb } = await twoPartnersWatching(d, transport);
    await endSubscriptions(d.subscriber);
    await endsWith(sa, SHUTDOWN_MESSAGE, 503, "SERVICE_UNAVAILABLE");
    await endsWith(sb, SHUTDOWN_MESSAGE, 503, "SERVICE_UNAVAILABLE");
    assert.is(d.subscriber.accounts.revocations.size, 0);
  });
}

// ---- Embedded: PGlite and the in-process pub/sub, one instance ---------------------------------------

const embedded = suite("Subscriptions end when their key is revoked (embedded)");
let tk: TestKernel;
let server: HttpServer;
let serverClosed = false;
let local: Deployment;
embedded.before.each(async () => {
  tk = await createTestKernel({ plugins: [account, holder], start: true });
  server = await serveHttp(tk.kernel, { adminToken: ADMIN_TOKEN, port: 0, hostname: "127.0.0.1" });
  serverClosed = false;
  local = {
    admin: tk.kernel,
    subscriber: tk.kernel,
    wsUrl: new URL("/graphql", server.url).toString().replace(/^http/, "ws"),
  };
});
embedded.after.each(async () => {
  openAllGates();
  await disposeClients();
  if (!serverClosed) await server.close();
  await tk.close();
});

for (const transport of ["sse", "websocket"] as const) revocationTests(embedded, () => local, transport);

embedded(
  "websocket: the server's close() ends the open streams with the shutdown message before the sockets go",
  async () => {
    const a = await partner(local);
    const b = await partner(local);
    const sa = await subscribe(local, "websocket", a.key, await job(local, a.key));
    const sb = await subscribe(local, "websocket", b.key, await job(local, b.key));
    serverClosed = true;
    await server.close();
    await endsWith(sa, SHUTDOWN_MESSAGE, 503, "SERVICE_UNAVAILABLE");
    await endsWith(sb, SHUTDOWN_MESSAGE, 503, "SERVICE_UNAVAILABLE");
  },
);

for (const transport of ["sse", "websocket"] as const) {
  embedded(
    `${transport}: a revocation whose message was lost is caught on the next update delivered, and by the periodic check`,
    async () => {
      const a = await partner(local);
      const jobA = await job(local, a.key);
      const onUpdate = await subscribe(local, transport, a.key, jobA);
      const b = await partner(local);
      const periodic = await subscribe(local, transport, b.key, await job(local, b.key));
      // Deactivated behind the kernel's back: no eviction, no message. The cached row lives 5 s.
      await sql`update partners set is_active = false where id in (${a.id}, ${b.id})`.execute(
        tk.kernel.database.kysely,
      );
      tk.clock.advance(6_000);

      // The job moves: its next update is not delivered, the refusal is.
      openGate(jobA);
      await endsWith(onUpdate, "API key deactivated", 403, "FORBIDDEN");
      // A quiet stream: the periodic check (here called at once rather than waited for).
      assert.is(periodic.ended, false);
      await tk.kernel.accounts.revocations.recheckAll();
      await endsWith(periodic, "API key deactivated", 403, "FORBIDDEN");
    },
  );
}

embedded.run();

// ---- Two instances on one Postgres database and one Redis -------------------------------------------

const cross = suite("Subscriptions end when their key is revoked on another instance (Postgres and Redis)");
if (pg && redis) {
  let one: Kernel;
  let two: Kernel;
  let twoServer: HttpServer;
  let shared: Deployment;
  cross.before(async () => {
    const backends = { databaseUrl: await isolatedPostgresDatabase(), redis, prefix: isolatedRedisPrefix() };
    const instance = (role: "all" | "api") => startSharedInstance(backends, role, [account, holder]);
    one = await instance("all"); // the admin API is called here; it also runs the jobs
    two = await instance("api"); // the subscribers are here
    twoServer = await serveHttp(two, { adminToken: ADMIN_TOKEN, port: 0, hostname: "127.0.0.1" });
    shared = {
      admin: one,
      subscriber: two,
      wsUrl: new URL("/graphql", twoServer.url).toString().replace(/^http/, "ws"),
    };
  });
  cross.after.each(async () => {
    openAllGates();
    await disposeClients();
  });
  cross.after(async () => {
    await twoServer?.close();
    for (const k of [two, one]) {
      await k?.stop();
      await k?.pubsub.close();
      await k?.counters.close();
    }
  });

  for (const transport of ["sse", "websocket"] as const) revocationTests(cross, () => shared, transport);
}
cross.run();
