// Runs every *.test.ts under test/ (or the files named on the command line) in one process with uvu,
// and ends with the line "N passed, N failed" that CI reads.
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";

(globalThis as any).UVU_DEFER = 1;
(globalThis as any).UVU_QUEUE = [];

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "bench" && name !== "helpers") out.push(...findTests(path));
    } else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
// Arguments may name test files or folders of them.
const files = args.length
  ? args.flatMap((f) => (statSync(resolve(f)).isDirectory() ? findTests(resolve(f)) : [resolve(f)]))
  : findTests(resolve(import.meta.dirname ?? "test"));
for (const file of files) {
  // Each file registers its suites with uvu's deferred queue and calls suite.run().
  (globalThis as any).UVU_INDEX = (globalThis as any).UVU_QUEUE.length;
  (globalThis as any).UVU_QUEUE.push([file.replace(process.cwd() + "/", "")]);
  await import(pathToFileURL(file).href);
}

let passed = 0;
let failed = 0;
let skipped = 0;
const started = Date.now();
for (const group of (globalThis as any).UVU_QUEUE as any[][]) {
  const name = group.shift();
  process.stdout.write(`\n${name} `);
  for (const runSuite of group) {
    const [errs, ran, skips, total] = await runSuite();
    passed += ran;
    skipped += skips;
    failed += total - ran - skips;
    if (errs.length) process.stdout.write("\n" + errs + "\n");
  }
}
const { afterAll } = await import("./helpers/lifecycle.ts");
await afterAll();
process.stdout.write(`\n\nDuration: ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
process.stdout.write(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}\n`);
process.exit(failed ? 1 : 0);
