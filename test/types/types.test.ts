// This folder holds type tests of the public plugin API (plugin-api.types.ts): `@ts-expect-error` lines that
// `tsc --noEmit -p .` compiles, where an unused directive (a mistake the types stopped refusing) fails the
// typecheck. Nothing in them runs; this file checks what makes them work: tsconfig.json compiles the folder,
// and each directive says what mistake it stands for.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";

const ROOT = resolve(import.meta.dirname!, "../..");
const HERE = join(ROOT, "test", "types");

test("tsconfig.json compiles test/types", () => {
  const tsconfig = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[] };
  assert.ok(tsconfig.include.includes("test"), `tsconfig.json includes ${tsconfig.include.join(", ")}`);
});

test("every @ts-expect-error in test/types names the mistake it stands for", () => {
  const files = readdirSync(HERE).filter((f) => f.endsWith(".types.ts"));
  assert.ok(files.length > 0, "the folder has type tests");
  const lines = files.flatMap((f) =>
    readFileSync(join(HERE, f), "utf8")
      .split("\n")
      .map((line, i) => ({ at: `${f}:${i + 1}`, line })),
  );
  const directives = lines.filter(({ line }) => /^\s*\/\/ @ts-expect-error\b/.test(line));
  assert.ok(directives.length >= 15, `${directives.length} directives`);
  const bare = directives.filter(({ line }) => !/@ts-expect-error \S.{9,}/.test(line)).map(({ at }) => at);
  assert.equal(bare, [], "a directive without its reason");
});

test.run();
