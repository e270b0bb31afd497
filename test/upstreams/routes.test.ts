// plugins/upstreams/routes.ts on its own: a model's routes tried in order when a submit surely did not reach
// the work, never after a service accepted it; the per-route circuit breaker (open, then one half-open probe)
// and Retry-After, on a fake clock (no sleeps). The routes here are tiny in-test providers: this is a unit
// test of the chain; test/upstreams/gateway.test.ts goes through the protocol stand-ins.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { fakeClock } from "../../core/clock.ts";
import { TransientProviderError, type UpstreamProvider } from "../../core/plugin-api.ts";
import { UpstreamCallError } from "../../plugins/upstreams/protocol.ts";
import { chainProvider, FAILURE_THRESHOLD, OPEN_MS, type Route, RouteHealth } from "../../plugins/upstreams/routes.ts";
import { rejection } from "../helpers/assert.ts";

type Answer = "ok" | Error;

/** A route whose submits answer from a script (then "ok"), counting them. */
function scripted(name: string, answers: Answer[] = [], verify = false) {
  const calls: string[] = [];
  const provider: UpstreamProvider<{ model: string }, string> = {
    name,
    async submit(_request, options) {
      calls.push(options.callback ? "with-callback" : "plain");
      const answer = answers.shift() ?? "ok";
      if (answer instanceof Error) throw answer;
      return { id: `${name}-${calls.length}`, data: { at: name } };
    },
    async poll(handle) {
      return { state: "done", result: `${name}:${handle.id}` };
    },
    ...(verify ? { verifyCallback: async () => ({ id: `${name}-verified` }) } : {}),
  };
  return { provider, calls };
}

const down = (status?: number, retryAfterMs?: number) =>
  new UpstreamCallError(`service answered ${status ?? "nothing"}`, {
    ...(status !== undefined ? { status } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    accepted: false,
  });

function setup(...providers: Array<UpstreamProvider<{ model: string }, string>>) {
  const clock = fakeClock();
  const health = new RouteHealth(clock);
  const routes: Route<{ model: string }, string>[] = providers.map((provider, i) => ({
    id: health.add("image-a-pro", i, provider.name),
    provider,
  }));
  const chain = chainProvider({
    name: "upstreams.image.image-a-pro",
    health,
    routesOf: () => routes,
    byId: new Map(routes.map((r) => [r.id, r])),
  });
  return { clock, health, chain, ids: routes.map((r) => r.id) };
}

const options = () => ({ idempotencyKey: "job:route", signal: new AbortController().signal });
const pollOnce = (chain: UpstreamProvider<{ model: string }, string>, handle: Parameters<typeof chain.poll>[0]) =>
  chain.poll(handle, { signal: new AbortController().signal, onProgress: () => {} });

const t = suite("upstream routes");

t("a 503 at submit moves to the next route; the poll goes to the route that took the work", async () => {
  const a = scripted("fal", [down(503)]);
  const b = scripted("replicate");
  const { chain, health, ids } = setup(a.provider, b.provider);
  const handle = await chain.submit({ model: "image-a-pro" }, options());
  assert.is(a.calls.length, 1);
  assert.is(b.calls.length, 1);
  assert.is(handle.id, "replicate-1");
  assert.equal(await pollOnce(chain, handle), { state: "done", result: "replicate:replicate-1" });
  assert.is(health.statuses().find((s) => s.index === 0)?.consecutiveFailures, 1);
  assert.is(health.state(ids[1]!), "closed");
});

t("a connect error and a 429 fail over too; a 400 does not (the request's fault, not the route's)", async () => {
  for (const err of [down(), down(429), new TransientProviderError("sandbox flaky")]) {
    const b = scripted("b");
    const { chain } = setup(scripted("a", [err]).provider, b.provider);
    assert.is((await chain.submit({ model: "image-a-pro" }, options())).id, "b-1");
  }
  const b = scripted("b");
  const { chain, health } = setup(scripted("a", [down(400)]).provider, b.provider);
  assert.match((await rejection(chain.submit({ model: "image-a-pro" }, options()))).message, /answered 400/);
  assert.is(b.calls.length, 0);
  assert.is(health.statuses()[0]?.consecutiveFailures, 0);
});

t("never fails over once a service accepted the work", async () => {
  const accepted = new UpstreamCallError("time-out after the request was sent", { status: 504, accepted: true });
  const b = scripted("b");
  const { chain } = setup(scripted("a", [accepted]).provider, b.provider);
  assert.match(
    (await rejection(chain.submit({ model: "image-a-pro" }, options()))).message,
    /time-out after the request was sent/,
  );
  assert.is(b.calls.length, 0, "the second route must not be asked: the first may be generating");
});

t("every route down: a transient failure naming the last error", async () => {
  const { chain } = setup(scripted("a", [down(502)]).provider, scripted("b", [down(503)]).provider);
  const err = await chain.submit({ model: "image-a-pro" }, options()).catch((e) => e);
  assert.instance(err, TransientProviderError);
  assert.match(err.message, /answered 503/);
});

t("the breaker opens after consecutive failures, skips the route, then lets one half-open probe through", async () => {
  const a = scripted(
    "a",
    Array.from({ length: FAILURE_THRESHOLD }, () => down(503)),
  );
  const b = scripted("b");
  const { chain, clock, health, ids } = setup(a.provider, b.provider);
  for (let i = 0; i < FAILURE_THRESHOLD; i++) await chain.submit({ model: "image-a-pro" }, options());
  assert.is(health.state(ids[0]!), "open");
  await chain.submit({ model: "image-a-pro" }, options());
  assert.is(a.calls.length, FAILURE_THRESHOLD, "an open route is not asked");
  assert.is(b.calls.length, FAILURE_THRESHOLD + 1);
  clock.advance(OPEN_MS);
  assert.is(health.state(ids[0]!), "half-open");
  // One probe at a time: while it is under way, the route is skipped.
  assert.ok(health.take(ids[0]!));
  assert.not.ok(health.take(ids[0]!));
  health.released(ids[0]!);
  const handle = await chain.submit({ model: "image-a-pro" }, options());
  assert.is(handle.id, `a-${FAILURE_THRESHOLD + 1}`, "the probe went to the half-open route and it answered");
  assert.is(health.state(ids[0]!), "closed");
  assert.is(health.statuses()[0]?.consecutiveFailures, 0);
});

t("a failed half-open probe opens the breaker again", async () => {
  const a = scripted(
    "a",
    Array.from({ length: FAILURE_THRESHOLD + 1 }, () => down(500)),
  );
  const { chain, clock, health, ids } = setup(a.provider, scripted("b").provider);
  for (let i = 0; i < FAILURE_THRESHOLD; i++) await chain.submit({ model: "image-a-pro" }, options());
  clock.advance(OPEN_MS);
  await chain.submit({ model: "image-a-pro" }, options());
  assert.is(a.calls.length, FAILURE_THRESHOLD + 1);
  assert.is(health.state(ids[0]!), "open");
});

t("Retry-After keeps the route skipped until then, without opening its breaker", async () => {
  const a = scripted("a", [down(429, 10_000)]);
  const b = scripted("b");
  const { chain, clock, health, ids } = setup(a.provider, b.provider);
  await chain.submit({ model: "image-a-pro" }, options());
  assert.is(health.state(ids[0]!), "closed");
  assert.ok(health.statuses()[0]?.retryAfterUntil);
  await chain.submit({ model: "image-a-pro" }, options());
  assert.is(a.calls.length, 1, "skipped while Retry-After runs");
  clock.advance(10_000);
  assert.is((await chain.submit({ model: "image-a-pro" }, options())).id, "a-2");
  assert.is(health.statuses()[0]?.retryAfterUntil, undefined);
});

t("all routes skipped: transient, and no route is asked", async () => {
  const a = scripted("a", [down(429, 60_000)]);
  const { chain } = setup(a.provider);
  await chain.submit({ model: "image-a-pro" }, options()).catch(() => {});
  const err = await chain.submit({ model: "image-a-pro" }, options()).catch((e) => e);
  assert.instance(err, TransientProviderError);
  assert.match(err.message, /no route available \(1 skipped/);
  assert.is(a.calls.length, 1);
});

t("callbacks: verified by the routes that can; a route that cannot is not handed the URL", async () => {
  const a = scripted("sandbox");
  const b = scripted("fal", [], true);
  const { chain } = setup(a.provider, b.provider);
  const callback = { url: "https://api.example.test/upstream/x/callback", secret: "" };
  await chain.submit({ model: "image-a-pro" }, { ...options(), callback });
  assert.equal(a.calls, ["plain"]);
  assert.equal(await chain.verifyCallback?.({ headers: new Headers(), body: new Uint8Array() }), {
    id: "fal-verified",
  });
  const { chain: plain } = setup(scripted("sandbox").provider);
  assert.is(plain.verifyCallback, undefined, "a chain of sandboxes keeps the kernel's HMAC check");
});

t("a stored handle naming a route no longer in the file fails the poll plainly", async () => {
  const { chain } = setup(scripted("a").provider);
  const err = await rejection(
    Promise.resolve().then(() => pollOnce(chain, { id: "x", data: { route: "image-a-pro#7", inner: { id: "x" } } })),
  );
  assert.match(err.message, /no longer in the providers file/);
});

t.run();
