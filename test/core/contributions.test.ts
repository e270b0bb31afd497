// Collections (issue 36 item 7): several plugins contribute to one named collection (`contributes`), a reader
// declares it (`collects`) and gets every contribution in registration order through `ctx.contributions`. A
// capability keeps its one provider: two providers still fail boot, and `capability()` answers the one.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CapabilityName, ContributionName } from "../../contracts/index.ts";
import { definePlugin, operation, type PluginDeclaration } from "../../core/plugin.ts";
import { BootError, compileRegistry } from "../../core/registry.ts";
import account from "../../plugins/account/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";

const THINGS = "test.things" as ContributionName;
const NOBODY = "test.nobody" as ContributionName;
const ONE = "test.one" as CapabilityName;

const contributing = (name: string, word: string) =>
  definePlugin({
    name,
    contributes: {
      [THINGS]: (host: { config: unknown }) => ({ word, sawConfig: !!host.config }),
    } as unknown as PluginDeclaration["contributes"],
  });
const first = contributing("first", "alpha");
const second = contributing("second", "beta");
const provider = definePlugin({
  name: "provider",
  provides: { [ONE]: () => ({ only: true }) } as unknown as PluginDeclaration["provides"],
});
const reader = definePlugin({
  name: "reader",
  requires: [ONE],
  collects: [THINGS, NOBODY],
  operations: [
    operation({
      method: "GET",
      path: "/test-things",
      rateLimit: "GET /me",
      async handle(ctx) {
        return {
          words: (ctx.contributions(THINGS) as unknown as { word: string }[]).map((c) => c.word),
          none: ctx.contributions(NOBODY).length,
          one: ctx.capability(ONE),
        };
      },
    }),
  ],
});

const t = suite("collections: many contributors, one reader; capabilities keep one provider");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({ plugins: [account, first, provider, reader, second] });
});
t.after(async () => {
  await tk.close();
});

t("both contributions are seen, in registration order, built once with the host", async () => {
  const all = tk.kernel.contributions(THINGS) as unknown as { word: string; sawConfig: boolean }[];
  assert.equal(
    all.map((c) => c.word),
    ["alpha", "beta"],
  );
  assert.ok(all.every((c) => c.sawConfig));
  assert.is(tk.kernel.contributions(THINGS), tk.kernel.contributions(THINGS));
  assert.ok(Object.isFrozen(all));
  assert.equal(tk.kernel.contributions(NOBODY), []);
});

t("an operation reads them through its context; the single capability answers as before", async () => {
  const { key } = await tk.partner({});
  const res = await tk.request("GET", "/test-things", { key });
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.words, ["alpha", "beta"]);
  assert.is(res.body.none, 0);
  assert.equal(res.body.one, { only: true });
});

t("a plugin reads only the collections it declared (or contributes to)", () => {
  assert.throws(
    () => tk.kernel.contributionsFor("provider")(THINGS),
    /plugin "provider" reads collection "test.things" without declaring it in collects/,
  );
  assert.is(tk.kernel.contributionsFor("first")(THINGS).length, 2);
  assert.is(tk.kernel.contributionsFor("reader")(THINGS).length, 2);
});

t("registry: contributors listed per collection; two providers of one capability still fail boot", () => {
  const reg = compileRegistry([first, second, provider, reader]);
  assert.equal(
    reg.contributors.get(THINGS)!.map((p) => p.name),
    ["first", "second"],
  );
  assert.is(reg.providers.get(ONE)!.name, "provider");
  const twin = definePlugin({
    name: "twin",
    provides: { [ONE]: () => ({}) } as unknown as PluginDeclaration["provides"],
  });
  assert.throws(
    () => compileRegistry([provider, twin]),
    (e: unknown) =>
      e instanceof BootError &&
      /capability "test.one" is provided by both "provider" and "twin"/.test((e as Error).message),
  );
  // A name means one thing: a collection may not share its name with a capability.
  const clash = definePlugin({
    name: "clash",
    contributes: { [ONE]: () => ({}) } as unknown as PluginDeclaration["contributes"],
  });
  assert.throws(
    () => compileRegistry([provider, clash]),
    /plugin "clash" contributes to "test.one", which is a capability, not a collection/,
  );
});

t.run();
