// The README's configuration section lists exactly the variables the code reads: the kernel's own
// (KERNEL_VARIABLES, the only ones loadConfig can read) and those every registered plugin declares. A variable
// added, renamed or removed in the code fails here until the README says so, and the other way round.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_VARIABLES } from "../../core/config.ts";
import { compileRegistry } from "../../core/registry.ts";
import { plugins } from "../../plugins/index.ts";

const README = readFileSync(resolve(import.meta.dirname!, "../../README.md"), "utf8");

/** The variables the section lists: list items that start with a variable's name in backticks. */
export function listedVariables(markdown: string): string[] {
  const start = markdown.search(/^## Configuration$/m);
  if (start < 0) throw new Error('README.md has no "## Configuration" section');
  const rest = markdown.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^- `([A-Z][A-Z0-9_]*)`/gm)].map((m) => m[1]!);
}

test("README's configuration section lists every variable the kernel and the registered plugins read", () => {
  const listed = listedVariables(README);
  const declared = [...KERNEL_VARIABLES, ...compileRegistry(plugins).configVariables.keys()];
  const twice = listed.filter((v, i) => listed.indexOf(v) !== i);
  const missing = declared.filter((v) => !listed.includes(v));
  const extra = listed.filter((v) => !declared.includes(v));
  assert.equal({ missing, extra, twice }, { missing: [], extra: [], twice: [] }, "README.md ## Configuration and the declarations differ");
  assert.ok(declared.includes("SANDBOX_LATENCY_MS") && declared.includes("SOCIAL_EXTRACTOR"), "the plugins' declarations are found");
});

test("the section parser reads list items only, up to the next section", () => {
  const md = ["# x", "## Configuration", "Prose mentions `PORT` and `NOT_LISTED`.", "- `PORT` (3000)", "- `HOST`", "  - `NESTED`", "## Next", "- `AFTER`"].join("\n");
  assert.equal(listedVariables(md), ["PORT", "HOST"]);
});

test.run();
