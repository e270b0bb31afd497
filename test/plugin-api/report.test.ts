// The plugin API report (docs/plugin-api.md, issue 38 item 4): regenerated in memory from core/plugin-api.ts by
// scripts/plugin-api-report.ts and compared with the committed file, so a change of what `mediagate/plugin`
// exports, or of a type it exports, fails here until the report is regenerated and its diff reviewed.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { PLUGIN_API_VERSION } from "../../core/plugin-version.ts";
import { ENTRY, pluginApiReport, REGENERATE, REPORT, readPluginApi } from "../../scripts/plugin-api-report.ts";

/** The first line where `actual` and `expected` differ, told for a reader, or null when they are equal. */
export function firstDifference(actual: string, expected: string): string | null {
  const a = actual.split("\n");
  const e = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) {
      const show = (line: string | undefined) => (line === undefined ? "(no line)" : JSON.stringify(line));
      return `line ${i + 1}: the code gives ${show(a[i])}, docs/plugin-api.md has ${show(e[i])}`;
    }
  }
  return null;
}

const ROOT = resolve(import.meta.dirname!, "../..");
const api = readPluginApi();

test("docs/plugin-api.md is the report of what mediagate/plugin exports today", () => {
  const difference = firstDifference(pluginApiReport(api), readFileSync(REPORT, "utf8"));
  if (difference !== null) {
    assert.unreachable(`the plugin API changed: run ${REGENERATE} and review the diff (${difference})`);
  }
});

test("the report names the plugin API version and how to regenerate it", () => {
  const text = pluginApiReport(api);
  assert.ok(text.includes(`Plugin API version **${PLUGIN_API_VERSION}**`), "the version is in the header");
  assert.ok(text.includes(REGENERATE), "the command is in the header");
});

test("mediagate/plugin lists its names one by one: no `export *`, so a change in lib/ cannot widen the contract", () => {
  const wholesale = readFileSync(ENTRY, "utf8").match(/^\s*export\s*\*.*$/gm) ?? [];
  assert.equal(wholesale, []);
});

test("every name is in a group, once, with a kind and a declaration", () => {
  const names = api.names.map((n) => n.name);
  assert.equal(names.length, new Set(names).size, "a name listed twice");
  assert.ok(names.length > 50, `${names.length} names`);
  assert.ok(api.groups.length > 5, `${api.groups.length} groups`);
  for (const group of api.groups) {
    assert.ok(group.description.length > 20, `group "${group.title}" says what it is for`);
    assert.ok(group.names.length > 0, `group "${group.title}" exports something`);
  }
  for (const n of api.names) assert.ok(n.kinds.length > 0 && n.text.length > 0, n.name);
  for (const wanted of ["PLUGIN_API_VERSION", "satisfiesApiRange", "definePlugin", "PluginDeclaration"]) {
    assert.ok(names.includes(wanted), `${wanted} is exported`);
  }
});

test("the report holds nothing of the machine that wrote it (the first test compares it with another run's)", () => {
  const text = pluginApiReport(api);
  assert.not.ok(text.includes(ROOT), "no absolute path of the checkout");
  assert.not.ok(/\bimport\("/.test(text), "no import() type, whose path would be the machine's");
  assert.not.ok(/\b20\d\d-\d\d-\d\d\b/.test(text), "no date");
});

test("firstDifference names the first differing line", () => {
  assert.is(firstDifference("a\nb\nc", "a\nb\nc"), null);
  assert.is(firstDifference("a\nx\nc", "a\nb\nc"), 'line 2: the code gives "x", docs/plugin-api.md has "b"');
  assert.is(firstDifference("a\nb", "a\nb\nc"), 'line 3: the code gives (no line), docs/plugin-api.md has "c"');
});

test.run();
