// docs/configuration.md lists exactly the variables the code reads: the kernel's own (KERNEL_VARIABLES, the
// only ones loadConfig can read) and those every registered plugin declares. A variable added, renamed or
// removed in the code fails here until the page says so, and the other way round.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_VARIABLES } from "../../core/config.ts";
import { compileRegistry } from "../../core/registry.ts";
import { plugins } from "../../plugins/index.ts";

const PAGE = readFileSync(resolve(import.meta.dirname!, "../../docs/configuration.md"), "utf8");

/** The variables the page lists: top-level list items that start with a variable's name in backticks. */
export function listedVariables(markdown: string): string[] {
  return [...markdown.matchAll(/^- `([A-Z][A-Z0-9_]*)`/gm)].map((m) => m[1]!);
}

test("docs/configuration.md lists every variable the kernel and the registered plugins read", () => {
  const listed = listedVariables(PAGE);
  const declared = [...KERNEL_VARIABLES, ...compileRegistry(plugins).configVariables.keys()];
  const twice = listed.filter((v, i) => listed.indexOf(v) !== i);
  const missing = declared.filter((v) => !listed.includes(v));
  const extra = listed.filter((v) => !declared.includes(v));
  assert.equal(
    { missing, extra, twice },
    { missing: [], extra: [], twice: [] },
    "docs/configuration.md and the declarations differ",
  );
  assert.ok(
    declared.includes("SANDBOX_LATENCY_MS") && declared.includes("SOCIAL_EXTRACTOR"),
    "the plugins' declarations are found",
  );
});

test("the page parser reads top-level list items only", () => {
  const md = [
    "# x",
    "Prose mentions `PORT` and `NOT_LISTED`.",
    "- `PORT` (3000)",
    "## Next",
    "- `HOST`",
    "  - `NESTED`",
    "- not `AFTER`",
  ].join("\n");
  assert.equal(listedVariables(md), ["PORT", "HOST"]);
});

test.run();
