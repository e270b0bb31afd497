// The plugin boundary (docs/architecture.md, issue 13): a file under plugins/ or examples/ imports only the
// public entry `mediagate/plugin` (and `mediagate/testing` from a test), its own folder, Node built-ins and npm
// packages. A path into core/, storage/, lib/, contracts/, transports/ or another plugin is a failure here,
// so the kernel behind mediagate/plugin stays free to change. The entry lists its names one by one (no
// `export *`, checked last below), and the package exports nothing else.
//
// The SDK floor (issues 37 and 38): contracts/ and lib/, which plugins reach through mediagate/plugin and the
// kernel builds on (the public helpers too: errors, time, input, paging, records, validation, job states), never
// import the kernel (core/, storage/, transports/), so the floor can be read, tested and reused without it.
//
// The kernel is internal (core/README.md): a file imports from core/ only when it is part of the kernel or one
// of its hosts (KERNEL_USERS: core/, storage/, transports/, server.ts, main.ts, config-file.ts, cli/, testkit/,
// scripts/, test/). Anything else reaches the kernel through its public face alone (KERNEL_FACE: the
// `mediagate/plugin` entry and the two modules it declares plugins with), and the floor and plugins not even so.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";

const ROOT = resolve(import.meta.dirname!, "../..");
const PUBLIC = new Set(["mediagate/plugin", "mediagate/testing"]);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "node_modules") out.push(...sources(path));
    } else if (/\.(ts|mts|mjs|js)$/.test(name)) out.push(path);
  }
  return out;
}

/** Every module specifier of a file: static imports and re-exports, dynamic imports, worker URLs. */
export function specifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
    /\bnew\s+URL\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url\s*\)/g,
    /\bimport\.meta\.resolve\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

/** The folder a file may import from: its plugin's or example's own folder (plugins/index.ts: plugins/). */
function ownFolder(file: string): string {
  const rel = relative(ROOT, file).split(sep);
  return rel.length > 2 ? join(ROOT, rel[0]!, rel[1]!) : join(ROOT, rel[0]!);
}

export function violations(file: string, text: string): string[] {
  const own = ownFolder(file);
  const bad: string[] = [];
  for (const spec of specifiers(text)) {
    if (spec.startsWith(".")) {
      const target = resolve(dirname(file), spec);
      if (!(target + sep).startsWith(own + sep)) bad.push(spec);
    } else if (spec.startsWith("mediagate/") || spec === "mediagate") {
      if (!PUBLIC.has(spec)) bad.push(spec);
    } else if (spec.startsWith("/") || spec.startsWith("file:")) {
      bad.push(spec);
    }
  }
  return bad;
}

test("plugins and examples import only mediagate/plugin, their own folder and packages", () => {
  const files = [...sources(join(ROOT, "plugins")), ...sources(join(ROOT, "examples"))];
  assert.ok(files.length > 50, "the walk found the plugin sources");
  const found = files.flatMap((f) => violations(f, readFileSync(f, "utf8")).map((s) => `${relative(ROOT, f)}: ${s}`));
  assert.equal(found, [], `imports past the public plugin API:\n${found.join("\n")}`);
});

test("the check catches deep imports of every kind", () => {
  const file = join(ROOT, "plugins", "images", "index.ts");
  const text = [
    'import { ApiError } from "../../core/errors.ts";',
    'import type { BlobStore } from "../../storage/blobs.ts";',
    'export { x } from "../video/records.ts";',
    'const m = await import("../../lib/media/index.ts");',
    'const w = new URL("../../lib/media/ffmpeg-wasm.worker.mjs", import.meta.url);',
    'import { createKernel } from "mediagate/core/kernel.ts";',
    'import { ok } from "./input.ts";',
    'import { definePlugin } from "mediagate/plugin";',
    'import { z } from "zod";',
    'import { randomBytes } from "node:crypto";',
  ].join("\n");
  assert.equal(violations(file, text), [
    "../../core/errors.ts",
    "../../storage/blobs.ts",
    "../video/records.ts",
    "mediagate/core/kernel.ts",
    "../../lib/media/index.ts",
    "../../lib/media/ffmpeg-wasm.worker.mjs",
  ]);
});

// Declared plugin configuration (issue 13, item 6): a plugin's variables are declared with defineConfig and
// read by the kernel at boot, so no file under plugins/ reads the environment itself, in any spelling.
const ENVIRONMENT_READS = [
  /\bprocess\s*\.\s*env\b/,
  /\bprocess\s*\[\s*["'`]env["'`]\s*\]/,
  /\bDeno\s*\.\s*env\b/,
  /\bimport\s*\{[^}]*\benv\b[^}]*\}\s*from\s*["'](?:node:)?process["']/,
];

test("no file under plugins/ reads process.env or Deno.env", () => {
  const files = sources(join(ROOT, "plugins"));
  const found = files.flatMap((f) =>
    readFileSync(f, "utf8")
      .split("\n")
      .flatMap((line, i) =>
        ENVIRONMENT_READS.some((re) => re.test(line)) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim()}`] : [],
      ),
  );
  assert.equal(
    found,
    [],
    `plugins read the environment instead of declaring their variables (definePlugin config):\n${found.join("\n")}`,
  );
  const spellings = [
    "const a = process.env.X;",
    'const b = process["env"];',
    "const c = Deno.env.get('X');",
    'import { env } from "node:process";',
  ];
  assert.equal(
    spellings.filter((line) => !ENVIRONMENT_READS.some((re) => re.test(line))),
    [],
    "each spelling is caught",
  );
});

const FLOOR = ["contracts", "lib"];
const KERNEL = ["core", "storage", "transports"];

/** The kernel folders a file's relative imports reach (`core`, `storage`, `transports`), one per import. */
export function kernelImports(file: string, text: string): string[] {
  return specifiers(text).flatMap((spec) => {
    if (!spec.startsWith(".")) return [];
    const top = relative(ROOT, resolve(dirname(file), spec)).split(sep)[0]!;
    return KERNEL.includes(top) ? [spec] : [];
  });
}

test("the SDK floor (contracts/, lib/) imports nothing of the kernel (core/, storage/, transports/)", () => {
  const files = FLOOR.flatMap((dir) => sources(join(ROOT, dir)));
  assert.ok(files.length > 40, "the walk found the floor's sources");
  const found = files.flatMap((f) => {
    const specs = kernelImports(f, readFileSync(f, "utf8"));
    return specs.length ? [`${relative(ROOT, f).split(sep).join("/")}: ${specs.join(", ")}`] : [];
  });
  assert.equal(
    found,
    [],
    `the floor imports the kernel (move the helper into lib/, the type into contracts/):\n${found.join("\n")}`,
  );
});

test("the floor check catches every kind of kernel import and nothing else", () => {
  const file = join(ROOT, "lib", "outbound", "source.ts");
  const text = [
    'import { ApiError } from "../../core/errors.ts";',
    'import type { BlobStore } from "../../storage/blobs.ts";',
    'export { serve } from "../../transports/http.ts";',
    'const m = await import("../../core/kernel.ts");',
    'import { ApiError } from "../api-error.ts";',
    'import type { OutboundGuard } from "./fetch.ts";',
    'import type { CapabilityMap } from "../../contracts/index.ts";',
    'import { z } from "zod";',
  ].join("\n");
  assert.equal(kernelImports(file, text), [
    "../../core/errors.ts",
    "../../storage/blobs.ts",
    "../../transports/http.ts",
    "../../core/kernel.ts",
  ]);
});

/** Who may import any module of core/: the kernel's own folders and the hosts that boot, test or script it. */
const KERNEL_USERS = [
  "core",
  "storage",
  "transports",
  "server.ts",
  "main.ts",
  "config-file.ts",
  "cli",
  "testkit",
  "scripts",
  "test",
];
/** The kernel's public face: the `mediagate/plugin` entry and the modules declaring what a plugin is. */
const KERNEL_FACE = new Set(["core/plugin-api.ts", "core/plugin.ts", "core/plugin-version.ts"]);

/** The kernel internals a file imports: relative imports into core/ past its public face, unless the file may. */
export function internalImports(file: string, text: string): string[] {
  if (KERNEL_USERS.includes(relative(ROOT, file).split(sep)[0]!)) return [];
  return specifiers(text).filter((spec) => {
    if (!spec.startsWith(".")) return false;
    const target = relative(ROOT, resolve(dirname(file), spec))
      .split(sep)
      .join("/");
    return target.startsWith("core/") && !KERNEL_FACE.has(target);
  });
}

test("kernel internals (core/) are imported only by the kernel and its hosts", () => {
  const top = readdirSync(ROOT).filter((name) => !name.startsWith(".") && name !== "node_modules");
  const files = top.flatMap((name) => {
    const path = join(ROOT, name);
    return statSync(path).isDirectory() ? sources(path) : /\.(ts|mts|mjs|js)$/.test(name) ? [path] : [];
  });
  assert.ok(files.length > 300, "the walk found the repository's sources");
  const found = files.flatMap((f) =>
    internalImports(f, readFileSync(f, "utf8")).map((s) => `${relative(ROOT, f).split(sep).join("/")}: ${s}`),
  );
  assert.equal(found, [], `kernel internals imported from outside the kernel:\n${found.join("\n")}`);
});

test("the internals check catches an import past the kernel's public face, and only outside the kernel", () => {
  const text = [
    'import { createJobRuntime } from "../core/jobs.ts";',
    'export { KERNEL_ERRORS } from "../core/errors.ts";',
    'const k = await import("../core/kernel.ts");',
    'import { definePlugin } from "../core/plugin.ts";',
    'export * from "../core/plugin-api.ts";',
    'import { PLUGIN_API_VERSION } from "../core/plugin-version.ts";',
    'import { notFound } from "../lib/errors.ts";',
    'import { serve } from "../transports/http.ts";',
  ].join("\n");
  assert.equal(internalImports(join(ROOT, "sdk", "index.ts"), text), [
    "../core/jobs.ts",
    "../core/errors.ts",
    "../core/kernel.ts",
  ]);
  for (const host of ["transports/x.ts", "cli/x.ts", "testkit/x.ts", "server.ts", "scripts/x.ts", "test/x.ts"]) {
    assert.equal(internalImports(join(ROOT, host), text), [], host);
  }
});

test("mediagate/plugin exports name by name (no `export *`), and the package exports its three entries", () => {
  const text = readFileSync(join(ROOT, "core", "plugin-api.ts"), "utf8");
  // Every name plugins compile against is listed, and reviewed through the API report (docs/plugin-api.md).
  const wholesale = [...text.matchAll(/\bexport\s*\*\s*from\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  assert.equal(wholesale, [], "`export *` would hand plugins whatever a module exports");
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: Record<string, string> };
  assert.equal(pkg.exports, {
    ".": "./server.ts",
    "./plugin": "./core/plugin-api.ts",
    "./testing": "./testkit/index.ts",
  });
});

test.run();
