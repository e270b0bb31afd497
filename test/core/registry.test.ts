import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CapabilityName } from "../../contracts/index.ts";
import { definePlugin, operation, type PluginDeclaration } from "../../core/plugin.ts";
import { BootError, compileRegistry } from "../../core/registry.ts";
import textStats from "../../examples/text-stats-plugin/index.ts";
import account from "../../plugins/account/index.ts";

const t = suite("registry: declarations compile once, mistakes fail boot by name");

const noop = async () => ({});

t("operations compile to spec-notation endpoints and router paths", () => {
  const reg = compileRegistry([account, textStats]);
  const me = reg.operations.find((o) => o.endpoint === "GET /me")!;
  assert.is(me.rateLimit, "GET /me");
  assert.equal(me.rateWindows, [{ limit: 60, windowSeconds: 60 }]);
  const p = definePlugin({
    name: "p",
    operations: [operation({ method: "GET", path: "/status/<job_id>", handle: noop })],
  });
  assert.is(compileRegistry([p]).operations[0]!.routerPath, "/status/:job_id");
  assert.ok(Object.isFrozen(reg.operations));
  assert.is((reg.costs as any).text_stats, 2);
  assert.ok(reg.features.has("text_stats"));
});

t("a missing capability fails boot and names plugin and capability", () => {
  const p = definePlugin({ name: "upscale", requires: ["image.upscale" as CapabilityName] });
  assert.throws(
    () => compileRegistry([p]),
    (e: unknown) =>
      e instanceof BootError && /plugin "upscale" requires capability "image.upscale"/.test((e as Error).message),
  );
  // `media` is the kernel's own, so requiring it needs no provider.
  compileRegistry([definePlugin({ name: "video", requires: ["media"] })]);
});

t("providers are ordered before the plugins that require them", () => {
  const user = definePlugin({ name: "user", requires: ["thing" as CapabilityName] });
  const provider = definePlugin({
    name: "provider",
    provides: { ["thing" as CapabilityName]: () => 1 } as PluginDeclaration["provides"],
  });
  assert.equal(
    compileRegistry([user, provider]).plugins.map((p) => p.name),
    ["provider", "user"],
  );
});

t("two different plugins with one name, the same plugin twice, or one route twice, fail boot", () => {
  const a1 = definePlugin({ name: "a" });
  const a2 = definePlugin({ name: "a" });
  assert.throws(() => compileRegistry([a1, a2]), /two different plugins are named "a"/);
  assert.throws(() => compileRegistry([a1, a1]), /plugin "a" is registered twice/);
  const r1 = definePlugin({
    name: "r1",
    operations: [operation({ method: "GET", path: "/status/<job_id>", handle: noop })],
  });
  const r2 = definePlugin({
    name: "r2",
    operations: [operation({ method: "GET", path: "/status/<id>", handle: noop })],
  });
  assert.throws(() => compileRegistry([r1, r2]), /route GET \/status\/<id> is declared by "r1" and "r2"/);
});

t("an operation must name a rate-limit row; a plugin may not redeclare the spec's", () => {
  const bad = definePlugin({
    name: "bad",
    operations: [operation({ method: "POST", path: "/nowhere", handle: noop })],
  });
  assert.throws(() => compileRegistry([bad]), /POST \/nowhere names rate limit "POST \/nowhere"/);
  const clash = definePlugin({ name: "clash", rateLimits: { "GET /me": [{ limit: 1, windowSeconds: 1 }] } });
  assert.throws(() => compileRegistry([clash]), /redeclares rate limit "GET \/me"/);
});

t("migrations are namespaced by plugin", () => {
  const m = definePlugin({ name: "m", migrations: [{ name: "other/0001", statements: [] }] });
  assert.throws(() => compileRegistry([m]), /must be named "m\/..."/);
});

t("definePlugin returns a frozen value and has no side effects", () => {
  const p = definePlugin({ name: "pure" });
  assert.ok(Object.isFrozen(p));
  assert.throws(() => definePlugin({ name: "Bad Name" }), /lowercase/);
});

t.run();
