// `mediagate new-plugin <name>` (bin/mediagate.mjs, cli/new-plugin.ts): it refuses what is not a plugin name
// and a folder that exists, writing nothing; it scaffolds the plugin folder in the working directory, which
// resolves "mediagate/*" through the package's own name (as a stranger's project resolves the installed
// package); the scaffold's own test passes at once when run as its README says (`npx tsx <name>/<name>.test.ts`,
// node:test), and its files are what `npm test`'s Biome accepts.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import process from "node:process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { main, refusal, spellings } from "../../cli/new-plugin.ts";
import { ROOT } from "../helpers/process-group.ts";

const BIN = join(ROOT, "bin", "mediagate.mjs");
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");

// Inside the checkout (git ignores .test-data), so that "mediagate/..." resolves through the package's name.
const SCRATCH = join(ROOT, ".test-data", "new-plugin");
mkdirSync(SCRATCH, { recursive: true });
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(SCRATCH, "run-"));
  dirs.push(dir);
  return dir;
};
test.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `node <args>` in `cwd`; its exit code and output. */
function run(args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b));
    child.stderr.on("data", (b: Buffer) => (out += b));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out }));
  });
}

/** What `main` prints to stderr and returns, with console.error captured. */
function quietly(fn: () => number): { code: number; err: string } {
  const original = console.error;
  let err = "";
  console.error = (...parts: unknown[]) => void (err += `${parts.join(" ")}\n`);
  try {
    return { code: fn(), err };
  } finally {
    console.error = original;
  }
}

test("names: lowercase letters, digits and single dashes, starting with a letter, at most 40", () => {
  const dir = tempDir();
  for (const good of ["demo", "word-count", "a1", "x-2-y", "a".repeat(40)])
    assert.is(refusal(good, dir), undefined, good);
  for (const bad of [
    "",
    "Demo",
    "1demo",
    "-demo",
    "demo-",
    "de--mo",
    "de_mo",
    "de mo",
    "../demo",
    "demo/x",
    "dé",
    "a".repeat(41),
  ]) {
    const { code, err } = quietly(() => main([bad], dir));
    assert.is(code, 2, bad);
    assert.match(err, bad ? "is not a plugin name" : "give the plugin a name", bad);
  }
  assert.equal(readdirSync(dir), [], "nothing written");
  assert.equal(spellings("word-count-2"), {
    name: "word-count-2",
    camel: "wordCount2",
    Pascal: "WordCount2",
    CONST: "WORD_COUNT_2",
    apiRange: "^1.0",
  });
});

test("an existing folder or file of that name is refused, untouched", async () => {
  const dir = tempDir();
  mkdirSync(join(dir, "demo"));
  writeFileSync(join(dir, "demo", "mine.txt"), "mine");
  writeFileSync(join(dir, "notes"), "a file");
  for (const name of ["demo", "notes"]) {
    const { code, err } = quietly(() => main([name], dir));
    assert.is(code, 2, name);
    assert.match(err, "already exists", name);
  }
  assert.equal(readdirSync(join(dir, "demo")), ["mine.txt"]);
  assert.is(readFileSync(join(dir, "notes"), "utf8"), "a file");
  // Through the command too: its exit code and one line, no stack.
  const bin = await run([BIN, "new-plugin", "demo"], dir);
  assert.is(bin.code, 2, bin.out);
  assert.match(bin.out, /^error: .*demo already exists/);
  assert.not.match(bin.out, /^\s+at /m, bin.out);
});

test("the command: usage, an unknown command, two names", async () => {
  const dir = tempDir();
  const help = await run([BIN, "--help"], dir);
  assert.is(help.code, 0);
  for (const command of ["start", "admin", "new-plugin"]) assert.match(help.out, `  ${command}`);
  const unknown = await run([BIN, "serve"], dir);
  assert.is(unknown.code, 2);
  assert.match(unknown.out, 'unknown command "serve"');
  const two = await run([BIN, "new-plugin", "a", "b"], dir);
  assert.is(two.code, 2);
  assert.match(two.out, "takes one name");
  assert.equal(readdirSync(dir), []);
});

test("new-plugin demo: the folder, next steps, and its test passes at once", async () => {
  const dir = tempDir();
  const started = performance.now();
  const made = await run([BIN, "new-plugin", "demo"], dir);
  assert.is(made.code, 0, made.out);
  const plugin = join(dir, "demo");
  assert.equal(readdirSync(plugin).sort(), [
    "README.md",
    "demo.test.ts",
    "errors.ts",
    "index.ts",
    "input.ts",
    "operations.ts",
  ]);
  assert.match(made.out, "Next steps:");
  assert.match(made.out, "npx tsx demo/demo.test.ts");
  assert.match(made.out, '"./demo/index.ts"');

  // The declaration imports mediagate only through its public plugin API, and the test only the test kit.
  const imports = (file: string) =>
    [...readFileSync(join(plugin, file), "utf8").matchAll(/from "([^"]+)"/g)].map((m) => m[1]!);
  assert.equal(imports("index.ts"), ["mediagate/plugin", "./operations.ts"]);
  for (const file of ["errors.ts", "input.ts", "operations.ts", "demo.test.ts"])
    for (const spec of imports(file))
      assert.ok(/^(\.\/|node:|zod$|mediagate\/(plugin|testing)$)/.test(spec), `${file} imports ${spec}`);
  assert.match(readFileSync(join(plugin, "operations.ts"), "utf8"), 'path: "/demo"');
  assert.not.match(readFileSync(join(plugin, "demo.test.ts"), "utf8"), "{{");

  // "mediagate/..." resolves from the new folder through the package's own name, to this checkout.
  const require = createRequire(join(plugin, "index.ts"));
  assert.is(require.resolve("mediagate/plugin"), join(ROOT, "core", "plugin-api.ts"));
  assert.is(require.resolve("mediagate/testing"), join(ROOT, "testkit", "index.ts"));

  // As its README says: `npx tsx demo/demo.test.ts` from the folder it was made in.
  const tested = await run([TSX, join("demo", "demo.test.ts")], dir);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  assert.is(tested.code, 0, tested.out);
  assert.match(tested.out, /# pass 4\b/, tested.out);
  assert.match(tested.out, /# fail 0\b/, tested.out);
  console.log(`new-plugin demo to its first passing test: ${seconds} s`);
});

test("the generated files are formatted and lint-clean by this repository's Biome", async () => {
  const dir = tempDir();
  assert.is(quietly(() => main(["word-count-2"], dir)).code, 0);
  const biome = join(ROOT, "node_modules", "@biomejs", "biome", "bin", "biome");
  for (const file of readdirSync(join(dir, "word-count-2")).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(join(dir, "word-count-2", file), "utf8");
    // --stdin-file-path: the path decides the language and the rules; .test-data itself is ignored by Biome.
    const checked = await new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [biome, "check", "--write", `--stdin-file-path=plugin/${file}`], {
        cwd: ROOT,
        stdio: ["pipe", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (b: Buffer) => (out += b));
      child.stderr.on("data", (b: Buffer) => (err += b));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, out, err }));
      child.stdin.end(text);
    });
    assert.is(checked.code, 0, `${file}: ${checked.err}`);
    assert.is(checked.out, text, `${file} is not as Biome would write it`);
  }
  assert.ok(existsSync(join(dir, "word-count-2", "word-count-2.test.ts")));
});

test.run();
