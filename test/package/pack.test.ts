// What `npm pack` puts in the tarball a stranger installs (package.json `files`): the server's sources, the
// test kit, the command and its templates; nothing of the test suite, the examples' tests, scripts or CI.
// Every relative import of a shipped module is itself shipped (a folder left out of `files` would make the
// installed server fail at its first import), and so is every target of `exports` and `bin`.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import process from "node:process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT } from "../helpers/process-group.ts";

interface PackFile {
  path: string;
  size: number;
}
interface Pack {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: PackFile[];
}

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

let packed: Promise<Pack> | undefined;
/** `npm pack --dry-run --json` of this checkout, run once. */
function pack(): Promise<Pack> {
  packed ??= new Promise((resolve, reject) => {
    const child = spawn("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false" },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (b: Buffer) => (out += b));
    child.stderr.on("data", (b: Buffer) => (err += b));
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) return reject(new Error(`npm pack exited ${code}: ${err}`));
      resolve((JSON.parse(out) as Pack[])[0]!);
    });
  });
  return packed;
}

test("nothing of the test suite, the examples, scripts or CI ships", async () => {
  const { files } = await pack();
  const leaked = files
    .map((f) => f.path)
    .filter((p) => /^(test|examples|scripts|schema|\.ci|\.data|\.test-data|\.scratch|node_modules)\//.test(p));
  assert.equal(leaked, []);
  assert.equal(
    files.map((f) => f.path).filter((p) => /\.test\.ts$|\.bench\.ts$/.test(p)),
    [],
  );
});

test("the server, the command, the test kit and the scaffold's templates ship", async () => {
  const paths = new Set((await pack()).files.map((f) => f.path));
  for (const path of [
    "package.json",
    "README.md",
    "main.ts",
    "tsconfig.json",
    "bin/mediagate.mjs",
    "cli/admin.ts",
    "cli/new-plugin.ts",
    "core/kernel.ts",
    "core/plugin-api.ts",
    "plugins/index.ts",
    "testkit/index.ts",
    "transports/http.ts",
    "console/index.html",
    "docs/licences.md",
    "docs/package.md",
    "templates/plugin/index.ts.tmpl",
    "templates/plugin/plugin.test.ts.tmpl",
  ])
    assert.ok(paths.has(path), `${path} is not in the tarball`);
  assert.equal(pkg.bin, { mediagate: "bin/mediagate.mjs" });
  assert.is(pkg.private, undefined);
  const targets = (value: unknown): string[] =>
    typeof value === "string"
      ? [value]
      : value && typeof value === "object"
        ? Object.values(value).flatMap(targets)
        : [];
  for (const target of targets(pkg.exports))
    assert.ok(paths.has(normalize(target)), `exports names ${target}, which is not in the tarball`);
});

test("every relative import of a shipped module ships too", async () => {
  const paths = new Set((await pack()).files.map((f) => f.path));
  const missing: string[] = [];
  for (const path of paths) {
    if (!/\.(ts|mjs|js)$/.test(path) || path.endsWith(".d.ts")) continue;
    // Comment lines left out (they show imports as examples).
    const code = readFileSync(join(ROOT, path), "utf8")
      .split("\n")
      .filter((line) => !/^\s*(\/\/|\/?\*)/.test(line))
      .join("\n");
    // Static and dynamic imports, re-exports, and module URLs: `new URL("./x.ts", import.meta.url)`.
    const specifiers = [
      ...code.matchAll(/(?:from|import\()\s*"(\.\.?\/[^"]+)"/g),
      ...code.matchAll(/new URL\(\s*"(\.\.?\/[^"]+)",\s*import\.meta\.url\)/g),
    ];
    for (const [, specifier] of specifiers) {
      const target = normalize(join(dirname(path), specifier!));
      if (!paths.has(target) && !/\/$/.test(specifier!)) missing.push(`${path} -> ${specifier}`);
    }
  }
  assert.equal(missing, []);
});

test("the licence: package.json and docs/package.md say the same", () => {
  assert.is(pkg.license, "UNLICENSED");
  const doc = readFileSync(join(ROOT, "docs", "package.md"), "utf8");
  assert.match(doc, `"license": "${pkg.license}"`);
  assert.match(doc, "licences.md");
});

test("its size, for the record (not asserted)", async () => {
  const p = await pack();
  console.log(
    `${p.filename}: ${p.entryCount} files, ${(p.size / 1024).toFixed(0)} KB packed, ${(p.unpackedSize / 1024 / 1024).toFixed(1)} MB unpacked`,
  );
});

test.run();
