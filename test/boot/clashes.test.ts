// Boot checks by name (issue 38, item 6): each clash between two plugins stops the boot with one line naming
// both plugins and what they both claim, and a plugin written for another plugin API is refused by name. The
// test kit rejects with that error instead of leaving its database and Redis connections open (which kept the
// test process from exiting).
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import type { CapabilityName } from "../../contracts/index.ts";
import { compileJobKinds, type JobKindDeclaration } from "../../core/jobs.ts";
import { type CapabilityHost, definePlugin, operation, type PluginDeclaration } from "../../core/plugin.ts";
import { PLUGIN_API_VERSION } from "../../core/plugin-version.ts";
import { BootError, compileRegistry } from "../../core/registry.ts";
import { queuedThen } from "../../lib/job-states.ts";
import { defineConfig, envVar } from "../../lib/plugin-config.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase, storeBackends } from "../helpers/backends.ts";
import { pingPlugin } from "../helpers/ping-plugin.ts";
import { spawnGroup } from "../helpers/process-group.ts";

const t = suite("boot checks: clashes name both plugins and the thing claimed");

const noop = async () => ({});
const CAP = "test.engine" as CapabilityName;

/** The BootError `run` throws, with exactly this one-line message. */
function bootError(run: () => unknown, message: string) {
  try {
    run();
  } catch (err) {
    assert.instance(err, BootError);
    assert.is((err as Error).message, message);
    assert.not.match((err as Error).message, /\n/);
    return;
  }
  assert.unreachable(`no boot error; expected: ${message}`);
}

t("the same plugin object twice, or two plugins with one name", () => {
  const a = definePlugin({ name: "a" });
  bootError(
    () => compileRegistry([account, a, a]),
    'plugin "a" is registered twice (entries 2 and 3 of the plugin list)',
  );
  bootError(
    () => compileRegistry([a, account, definePlugin({ name: "a" })]),
    'two different plugins are named "a" (entries 1 and 3 of the plugin list)',
  );
});

t("two plugins declaring one route: the route is named, not the rate-limit row both declare for it", () => {
  // Each declares the row "POST /ping" as well; the row's check used to fire first, saying the spec's table
  // already had it.
  const one = pingPlugin("one", { limitPerMinute: 5 });
  const two = pingPlugin("two", { limitPerMinute: 5 });
  bootError(() => compileRegistry([one, two]), 'route POST /ping is declared by "one" and "two"');
  // Parameters are matched by position, whatever their names.
  const r1 = definePlugin({
    name: "r1",
    operations: [operation({ method: "GET", path: "/status/<job_id>", handle: noop })],
  });
  const r2 = definePlugin({
    name: "r2",
    operations: [operation({ method: "GET", path: "/status/<id>", handle: noop })],
  });
  bootError(() => compileRegistry([r1, r2]), 'route GET /status/<id> is declared by "r1" and "r2"');
  // The same row declared by two plugins for two routes names both.
  const rowA = definePlugin({ name: "row-a", rateLimits: { "my row": [{ limit: 1, windowSeconds: 1 }] } });
  const rowB = definePlugin({ name: "row-b", rateLimits: { "my row": [{ limit: 2, windowSeconds: 1 }] } });
  bootError(() => compileRegistry([rowA, rowB]), 'rate limit "my row" is declared by "row-a" and "row-b"');
});

t("two routes that give one GraphQL field name", () => {
  const row = { "GET /a-b": [{ limit: 1, windowSeconds: 1 }] };
  const dashed = definePlugin({
    name: "dashed",
    rateLimits: row,
    operations: [operation({ method: "GET", path: "/a-b", handle: noop })],
  });
  const nested = definePlugin({
    name: "nested",
    operations: [operation({ method: "GET", path: "/a/b", rateLimit: "GET /a-b", handle: noop })],
  });
  bootError(
    () => compileRegistry([dashed, nested]),
    'GraphQL field Query.aB is claimed by "dashed" (GET /a-b) and "nested" (GET /a/b)',
  );
  // Each alone boots.
  compileRegistry([dashed]);
});

t("one job kind name in two plugins is not a clash: a kind belongs to its plugin", () => {
  // Jobs are stored and queued by plugin and kind (`<plugin>/<kind>`, queue `<plugin>.<kind>`, plugin names
  // have no dot), so two plugins' "render" kinds never meet; refusing them would refuse a valid deployment.
  const render: JobKindDeclaration<Record<string, never>> = {
    ...queuedThen("done", "failed"),
    failError: "failed",
    run: async () => ({ state: "done" }),
  };
  const a = definePlugin({ name: "maker-a", jobs: { render } });
  const b = definePlugin({ name: "maker-b", jobs: { render } });
  const registry = compileRegistry([a, b]);
  const kinds = compileJobKinds(registry.plugins, (m) => new BootError(m));
  assert.equal(
    [...kinds.values()].map((k) => k.queue),
    ["maker-a.render", "maker-b.render"],
  );
});

t("one configuration variable with two declarations", () => {
  const a = definePlugin({
    name: "greeter-a",
    config: defineConfig({ greeting: envVar("GREETING", z.string().default("hello"), "") }),
  });
  const b = definePlugin({
    name: "greeter-b",
    config: defineConfig({ greeting: envVar("GREETING", z.string().default("hej"), "") }),
  });
  bootError(
    () => compileRegistry([a, b]),
    'plugins "greeter-a" and "greeter-b" both declare GREETING, with different schemas (share one declaration)',
  );
  // One shared declaration is one meaning: both read it.
  const shared = defineConfig({ greeting: envVar("GREETING", z.string().default("hello"), "") });
  const c = definePlugin({ name: "greeter-c", config: shared });
  const d = definePlugin({ name: "greeter-d", config: shared });
  assert.equal(compileRegistry([c, d]).configVariables.get("GREETING")?.plugins, ["greeter-c", "greeter-d"]);
});

const providing = (name: string, value: string, extra: Partial<PluginDeclaration> = {}, calls?: string[]) =>
  definePlugin({
    name,
    provides: {
      [CAP]: () => {
        calls?.push(name);
        return { by: value };
      },
    } as unknown as PluginDeclaration["provides"],
    ...extra,
  });

t("one capability provided twice, unless one overrides", () => {
  bootError(
    () => compileRegistry([providing("sandbox", "s"), providing("adapter", "a")]),
    'capability "test.engine" is provided by both "sandbox" and "adapter" (the one that replaces the other declares overrides: ["test.engine"])',
  );
  bootError(
    () =>
      compileRegistry([
        providing("sandbox", "s", { overrides: [CAP] }),
        providing("adapter", "a", { overrides: [CAP] }),
      ]),
    'capability "test.engine" is overridden by both "sandbox" and "adapter"',
  );
  bootError(
    () => compileRegistry([definePlugin({ name: "liar", overrides: [CAP] })]),
    'plugin "liar" overrides capability "test.engine" but does not provide it',
  );
  // The overrider wins wherever it stands, and its users are ordered after it.
  const user = definePlugin({ name: "user", requires: [CAP] });
  for (const list of [
    [providing("sandbox", "s"), user, providing("adapter", "a", { overrides: [CAP] })],
    [providing("adapter", "a", { overrides: [CAP] }), user, providing("sandbox", "s")],
  ]) {
    const registry = compileRegistry(list);
    assert.is(registry.providers.get(CAP)!.name, "adapter");
    const names = registry.plugins.map((p) => p.name);
    assert.ok(names.indexOf("adapter") < names.indexOf("user"), names.join(", "));
  }
});

/** A plugin answering GET /engine with the capability the kernel hands it. */
const engineUser = definePlugin({
  name: "user",
  requires: [CAP],
  operations: [
    operation({
      method: "GET",
      path: "/engine",
      rateLimit: "GET /me",
      handle: async (ctx) => ({ engine: ctx.capability(CAP) }),
    }),
  ],
});

t("an overriding plugin's capability is the one the kernel builds and hands out", async () => {
  const calls: string[] = [];
  const tk = await createTestKernel({
    plugins: [
      account,
      providing("sandbox", "s", {}, calls),
      engineUser,
      providing("adapter", "a", { overrides: [CAP] }, calls),
    ],
  });
  try {
    assert.equal(calls, ["adapter"], "the overridden factory is never called");
    const { key } = await tk.partner({});
    const res = await tk.request("GET", "/engine", { key });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.engine, { by: "a" });
  } finally {
    await tk.close();
  }
});

t(
  "an overriding factory may wrap what it displaced (host.replaced); a plugin that does not override gets nothing",
  async () => {
    const calls: string[] = [];
    const wrapper = definePlugin({
      name: "wrapper",
      provides: {
        [CAP]: (host: CapabilityHost) => {
          calls.push("wrapper");
          const inner = host.replaced(CAP) as { by: string } | undefined;
          return { by: "w", around: inner?.by ?? null, other: host.replaced("image.generate") ?? null };
        },
      },
      overrides: [CAP],
    } as PluginDeclaration);
    const tk = await createTestKernel({
      plugins: [account, providing("sandbox", "s", {}, calls), engineUser, wrapper],
    });
    try {
      assert.equal(calls, ["wrapper", "sandbox"], "the displaced factory is built when asked for, once");
      const { key } = await tk.partner({});
      const res = await tk.request("GET", "/engine", { key });
      assert.equal(res.body.engine, { by: "w", around: "s", other: null });
    } finally {
      await tk.close();
    }
  },
);

t("a capability factory that throws stops the boot naming the plugin and the capability", async () => {
  const broken = definePlugin({
    name: "broken",
    provides: {
      [CAP]: () => {
        throw new TypeError("cannot read the model table");
      },
    },
  } as PluginDeclaration);
  const err = await createTestKernel({ plugins: [account, broken] }).catch((e: unknown) => e);
  assert.instance(err, BootError);
  assert.is(
    (err as Error).message,
    'plugin "broken" failed to build capability "test.engine": cannot read the model table',
  );
});

t("the plugin API range: refused by name when not satisfied, accepted when satisfied or absent", () => {
  const major = Number(PLUGIN_API_VERSION.split(".")[0]);
  const future = definePlugin({ name: "future", apiVersion: `^${major + 1}.0` });
  bootError(
    () => compileRegistry([account, future]),
    `plugin "future" was written for mediagate plugin API ^${major + 1}.0; this is ${PLUGIN_API_VERSION}`,
  );
  bootError(
    () => compileRegistry([definePlugin({ name: "odd", apiVersion: "latest" })]),
    `plugin "odd" was written for mediagate plugin API latest; this is ${PLUGIN_API_VERSION}`,
  );
  const current = definePlugin({ name: "current", apiVersion: `^${major}.0` });
  const unversioned = definePlugin({ name: "unversioned" });
  assert.equal(
    compileRegistry([account, current, unversioned]).plugins.map((p) => p.name),
    ["account", "current", "unversioned"],
  );
});

/** Rejects when `promise` has not settled in time, so a hang fails this test rather than the file's time-out. */
function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`createTestKernel did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

t("the test kit rejects with the boot error, on every backend, and closes what it opened", async () => {
  const failing = [
    // Caught when the declarations compile, before the kernel opens anything (the kit has opened its own).
    {
      plugins: [account, definePlugin({ name: "future", apiVersion: "^99.0" })],
      message: /plugin "future" was written for mediagate plugin API \^99\.0/,
    },
    // Caught after the database is migrated: a capability factory that throws.
    {
      plugins: [
        account,
        definePlugin({
          name: "broken",
          provides: {
            [CAP]: () => {
              throw new BootError('plugin "broken": no engine here');
            },
          } as unknown as PluginDeclaration["provides"],
        }),
      ],
      message: /plugin "broken": no engine here/,
    },
  ];
  for (const db of await databaseBackends())
    for (const store of await storeBackends())
      for (const { plugins, message } of failing) {
        const where = `${db.name}/${store.name}`;
        const opened = createTestKernel({
          plugins,
          ...(db.name === "postgres" ? { databaseUrl: await isolatedPostgresDatabase() } : {}),
          ...(store.name === "redis" ? { redisUrl: store.url } : {}),
        });
        const err = await settledWithin(opened, 60_000).then(
          () => assert.unreachable(`${where}: the kit booted`),
          (e: unknown) => e,
        );
        assert.instance(err, BootError, `${where}: ${(err as Error).message}`);
        assert.match((err as Error).message, message, where);
      }
});

t("a test process whose kit failed to boot exits on its own (Postgres and Redis when reachable)", async () => {
  const db = (await databaseBackends()).find((b) => b.name === "postgres");
  const store = (await storeBackends()).find((b) => b.name === "redis");
  const { child, output } = spawnGroup([process.execPath, "--import", "tsx", "test/boot/failing-kit.ts"], {
    ...(db ? { KIT_DATABASE_URL: await isolatedPostgresDatabase() } : {}),
    ...(store?.name === "redis" ? { KIT_REDIS_URL: store.url } : {}),
  });
  // A bounded wait: the connections the kit left open used to keep the process alive for ever.
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c))),
    new Promise<"running">((resolve) => {
      timer = setTimeout(() => resolve("running"), 120_000);
    }),
  ]).finally(() => clearTimeout(timer));
  if (code === "running") process.kill(-child.pid!, "SIGKILL");
  assert.is(code, 0, `the process did not exit on its own:\n${output()}`);
  assert.match(output(), /boot error: plugin "broken": no engine here/);
});

t.run();
