// The subscription caps (transports/graphql/subscription-limits.ts): the count itself, then over SSE through
// app.fetch: a partner's subscription past GRAPHQL_SUBSCRIPTIONS_PER_KEY is an HTTP 429 carrying the GraphQL
// error, and every way a subscription ends gives its slot back (the WebSocket side runs against a real server
// in test/security/attacks-connections.test.ts).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import {
  SocketSubscriptions,
  SUBSCRIPTION_ERRORS,
  SubscriptionLimits,
  subscriptionLimitsOf,
} from "../../transports/graphql/subscription-limits.ts";
import { createHttpApp } from "../../transports/http.ts";
import { ticker } from "./fixtures.ts";

const unit = suite("subscription limits: the count");

unit("a partner's slots up to the cap, the next refused and counted; released once each, the map emptied", () => {
  const limits = new SubscriptionLimits(2, 0);
  const a = limits.acquire("p1")!;
  const b = limits.acquire("p1")!;
  assert.ok(a && b);
  assert.is(limits.acquire("p1"), null);
  assert.is(limits.refused.per_key, 1);
  assert.ok(limits.acquire("p2"), "another partner has its own cap");
  assert.is(limits.open, 3);
  a.release();
  a.release();
  assert.is(limits.heldBy("p1"), 1, "a second release of the same slot gives nothing back");
  assert.ok(limits.acquire("p1"), "the freed slot is taken again");
  assert.is(limits.acquire("p1"), null);
  assert.is(limits.refused.per_key, 2);
});

unit("every slot released: nothing left behind", () => {
  const limits = new SubscriptionLimits(5, 0);
  const slots = ["a", "b", "a", "c", "a"].map((k) => limits.acquire(k)!);
  for (const s of slots) s.release();
  assert.is(limits.open, 0);
  assert.is(limits.keys, 0);
});

unit("0 is no cap", () => {
  const limits = new SubscriptionLimits(0, 0);
  for (let i = 0; i < 1000; i++) assert.ok(limits.acquire("p"));
  assert.ok(limits.admitsOnSocket(10_000));
  assert.equal(limits.refused, { per_key: 0, per_socket: 0 });
});

unit("a socket's cap, and its slots released by id and all at once", () => {
  const limits = new SubscriptionLimits(0, 2);
  const socket = new SocketSubscriptions();
  assert.ok(limits.admitsOnSocket(socket.size));
  socket.hold("1", limits.acquire("p")!);
  socket.hold("2", limits.acquire("p")!);
  assert.not.ok(limits.admitsOnSocket(socket.size));
  assert.is(limits.refused.per_socket, 1);
  socket.release("1");
  socket.release("1");
  assert.is(limits.open, 1);
  assert.ok(limits.admitsOnSocket(socket.size));
  socket.hold("3", limits.acquire("p")!);
  socket.releaseAll();
  assert.is(socket.size, 0);
  assert.is(limits.open, 0);
});

unit("the refusal: 429, RATE_LIMITED, the cap named; extensions.http only for HTTP", () => {
  const limits = new SubscriptionLimits(200, 100);
  const ws = limits.error("per_socket");
  assert.is(ws.message, SUBSCRIPTION_ERRORS.per_socket);
  assert.equal(ws.extensions, { code: "RATE_LIMITED", status: 429, limit: "subscriptions_per_socket", max: 100 });
  assert.equal(limits.error("per_key", { http: true }).extensions.http, { status: 429 });
});

unit.run();

const SUBSCRIPTION = "subscription($id: String!) { jobUpdates(id: $id) { job_id state terminal } }";

const sse = suite("subscription limits over SSE");
let tk: TestKernel;
let app: ReturnType<typeof createHttpApp>;

// One kernel for the file (each test has partners of its own; the first ends with every slot given back).
sse.before(async () => {
  tk = await createTestKernel({ plugins: [account, ticker], start: true, env: { GRAPHQL_SUBSCRIPTIONS_PER_KEY: "2" } });
  app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
});
sse.after(async () => {
  await tk.close();
});

async function submit(key: string): Promise<string> {
  const res = await graphql(tk, "mutation($input: TickInput) { tick(input: $input) }", { input: {} }, { key });
  assert.is(res.errors, undefined, JSON.stringify(res.errors));
  return res.data.tick.job_id;
}

/** An SSE subscription: its status and its first `next` event's data; `close()` drops the stream as a client leaving. */
async function subscribe(key: string, id: string) {
  const controller = new AbortController();
  const res = await app.fetch(
    new Request("http://mediagate.test/graphql", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "text/event-stream",
        authorization: `Bearer ${key}`,
        "user-agent": "mediagate-tests/1.0",
      },
      body: JSON.stringify({ query: SUBSCRIPTION, variables: { id } }),
      signal: controller.signal,
    }),
  );
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/event: next\ndata: .*\n\n/.test(text) && !/event: complete/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const data = JSON.parse(/event: next\ndata: (.*)\n/.exec(text)?.[1] ?? "null") as {
    data?: any;
    errors?: Array<{ message: string; extensions: Record<string, unknown> }>;
  } | null;
  return {
    status: res.status,
    data,
    /** Reads to the end of the stream. */
    async rest() {
      for (;;) if ((await reader.read()).done) return;
    },
    async close() {
      await reader.cancel().catch(() => {});
      controller.abort();
    },
  };
}

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(check(), what);
}

sse(
  "past the cap a partner's subscription is an HTTP 429 with the GraphQL error; a closed stream gives its slot back",
  async () => {
    const p = await tk.partner();
    const other = await tk.partner();
    const id = await submit(p.key);
    const limits = subscriptionLimitsOf(tk.kernel);
    const first = await subscribe(p.key, id);
    const second = await subscribe(p.key, id);
    assert.equal([first.status, second.status], [200, 200]);
    assert.is(first.data?.data?.jobUpdates?.job_id, id);
    assert.is(limits.heldBy(p.id), 2);

    const third = await subscribe(p.key, id);
    assert.is(third.status, 429);
    assert.equal(
      third.data?.errors?.map((e) => [e.message, e.extensions.code, e.extensions.status, e.extensions.limit]),
      [[SUBSCRIPTION_ERRORS.per_key, "RATE_LIMITED", 429, "subscriptions_per_key"]],
    );
    assert.is(third.data?.errors?.[0]?.extensions.http, undefined, "extensions.http is yoga's, not sent");
    await third.close();
    // Another partner's key is not this one's cap (its job is someone else's: "Not found", no slot held).
    const foreign = await subscribe(other.key, id);
    assert.is(foreign.status, 200);
    assert.is(foreign.data?.errors?.[0]?.message, "Not found");
    await foreign.close();
    assert.is(limits.heldBy(other.id), 0, "a subscription that never streamed holds nothing");

    await first.close();
    await until(() => limits.heldBy(p.id) === 1, "the closed stream's slot released");
    const again = await subscribe(p.key, id);
    assert.is(again.status, 200);
    assert.is(limits.heldBy(p.id), 2);
    await Promise.all([second.close(), again.close()]);
    await until(() => limits.open === 0 && limits.keys === 0, `no slot left: ${limits.open} open`);
    assert.is(limits.refused.per_key, 1);
  },
);

sse("a stream that ends with its job gives its slot back", async () => {
  const p = await tk.partner();
  const id = await submit(p.key);
  const limits = subscriptionLimitsOf(tk.kernel);
  const { openGate } = await import("./fixtures.ts");
  const s = await subscribe(p.key, id);
  assert.is(limits.heldBy(p.id), 1);
  openGate(id);
  await s.rest();
  await until(() => limits.heldBy(p.id) === 0, "released at the terminal update");
});

sse.run();
