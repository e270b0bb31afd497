// The server's config file: which plugins it runs. `mediagate.config.ts`, `.mjs`, `.js` or `.json` in the
// working directory (the first found, in that order), or the file MEDIAGATE_CONFIG names:
//
//   import { defaultPlugins, defineServerConfig } from "mediagate";
//   export default defineServerConfig({
//     plugins: [...defaultPlugins, "mediagate-plugin-x", "./my-plugin/index.ts"],
//     disable: ["social"],
//   });
//
// A string is an npm package or a path, resolved from the config file's folder; the module's default export
// (or its `plugin` export) is the declaration, or an array of them. In JSON, the string "...defaultPlugins"
// stands for the spread. `disable` removes plugins by name: their routes answer 404 and their GraphQL fields
// are absent. Without a config file the server runs `defaultPlugins`. Whatever fails here is a BootError of
// one line naming the file, the plugin and the cause (main.ts prints it).
//
// A `.ts` config file or plugin path is loaded as an ES module whatever the project's package.json says:
// under tsx, a `.ts` file in a package without "type": "module" (what `npm init` writes) is CommonJS, and
// importing one that imports mediagate fails with "Cannot require() ES Module ... in a cycle".
import { existsSync, readFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import type { PluginDeclaration } from "./core/plugin.ts";
import { BootError } from "./core/registry.ts";

/** What a config file exports (its default export). */
export interface ServerConfig {
  /** The plugins, in order: declarations and package names or paths. Default: `defaultPlugins`. */
  plugins?: ReadonlyArray<PluginDeclaration | string>;
  /** Plugin names to leave out (e.g. a spec area: "social"). */
  disable?: readonly string[];
}

/** Types a config file's default export; returns it unchanged. */
export function defineServerConfig<const C extends ServerConfig>(config: C): C {
  return config;
}

export const CONFIG_FILES = [
  "mediagate.config.ts",
  "mediagate.config.mjs",
  "mediagate.config.js",
  "mediagate.config.json",
] as const;

/** In a JSON config (which cannot spread), this entry of `plugins` stands for `...defaultPlugins`. */
export const DEFAULT_PLUGINS_ENTRY = "...defaultPlugins";

export interface LoadedServerConfig {
  /** The config file read, absolute; undefined when there is none (the plugins are then the defaults). */
  file: string | undefined;
  plugins: PluginDeclaration[];
}

export interface LoadServerConfigOptions {
  /** The plugins when no file names any (`defaultPlugins`). */
  defaults: readonly PluginDeclaration[];
  /** Where to look for the file; default the working directory. */
  cwd?: string;
  /** Where MEDIAGATE_CONFIG is read; default the environment. */
  env?: Record<string, string | undefined>;
}

/** The config file to read: MEDIAGATE_CONFIG's, else the first of CONFIG_FILES in `cwd`, else none. */
export function findServerConfig(cwd: string, env: Record<string, string | undefined>): string | undefined {
  const named = env.MEDIAGATE_CONFIG;
  if (named) {
    const file = resolve(cwd, named);
    if (!existsSync(file)) throw new BootError(`MEDIAGATE_CONFIG: no such file ${file}`);
    return file;
  }
  return CONFIG_FILES.map((name) => resolve(cwd, name)).find((file) => existsSync(file));
}

export async function loadServerConfig(options: LoadServerConfigOptions): Promise<LoadedServerConfig> {
  const cwd = options.cwd ?? process.cwd();
  const file = findServerConfig(cwd, options.env ?? process.env);
  if (!file) return { file: undefined, plugins: [...options.defaults] };
  const shown = relative(cwd, file).startsWith("..") ? file : relative(cwd, file) || basename(file);
  const fail = (message: string) => new BootError(`${shown}: ${message}`);

  let config: unknown;
  try {
    config = file.endsWith(".json")
      ? JSON.parse(readFileSync(file, "utf8"))
      : ((await importModule(pathToFileURL(file).href)) as { default?: unknown }).default;
  } catch (err) {
    throw fail(`cannot be read: ${oneLine(err)}`);
  }
  if (typeof config !== "object" || config === null || Array.isArray(config))
    throw fail("its default export must be an object: defineServerConfig({ plugins, disable })");
  const { plugins: entries, disable = [] } = config as ServerConfig;
  if (entries !== undefined && !Array.isArray(entries)) throw fail("`plugins` must be an array");
  if (!Array.isArray(disable) || disable.some((d) => typeof d !== "string"))
    throw fail("`disable` must be an array of plugin names");

  const plugins: PluginDeclaration[] = [];
  for (const entry of entries ?? [DEFAULT_PLUGINS_ENTRY]) {
    if (entry === DEFAULT_PLUGINS_ENTRY) plugins.push(...options.defaults);
    else if (typeof entry === "string") plugins.push(...(await loadPlugin(entry, file, fail)));
    else if (isDeclaration(entry)) plugins.push(entry);
    else throw fail(`\`plugins\` has an entry that is neither a plugin nor a package name or path`);
  }
  const names = new Set(plugins.map((p) => p.name));
  const unknown = disable.filter((name) => !names.has(name));
  if (unknown.length > 0)
    throw fail(`disable names ${unknown.map((n) => `"${n}"`).join(", ")}, which is not among its plugins`);
  const kept = plugins.filter((p) => !disable.includes(p.name));
  // A disabled provider that a kept plugin requires: named both ways here (the registry would name only the
  // capability and the plugin requiring it).
  for (const gone of plugins.filter((p) => disable.includes(p.name)))
    for (const capability of Object.keys(gone.provides ?? {})) {
      if (kept.some((p) => capability in (p.provides ?? {}))) continue;
      const needing = kept.find((p) => p.requires?.includes(capability as never));
      if (needing)
        throw fail(
          `disable names "${gone.name}", which provides "${capability}" that plugin "${needing.name}" requires (disable both)`,
        );
    }
  return { file, plugins: kept };
}

/** The declaration(s) a package or path exports: its default export, else its `plugin` export. */
async function loadPlugin(
  specifier: string,
  configFile: string,
  fail: (message: string) => BootError,
): Promise<PluginDeclaration[]> {
  let module: { default?: unknown; plugin?: unknown };
  try {
    module = await importModule(resolvePlugin(specifier, configFile));
  } catch (err) {
    throw fail(`plugin "${specifier}" failed to load: ${oneLine(err)}`);
  }
  const exported = module.default ?? module.plugin;
  const list = Array.isArray(exported) ? exported : [exported];
  if (list.length === 0 || !list.every(isDeclaration))
    throw fail(`plugin "${specifier}" exports no plugin (a default or \`plugin\` export made with definePlugin)`);
  return list;
}

/** A path from the config file's folder, or a package as Node finds it from there. */
function resolvePlugin(specifier: string, configFile: string): string {
  if (specifier.startsWith(".") || isAbsolute(specifier))
    return pathToFileURL(resolve(dirname(configFile), specifier)).href;
  try {
    return pathToFileURL(createRequire(configFile).resolve(specifier)).href;
  } catch (err) {
    // A package exporting only an `import` condition is not `require`-resolvable: read its package.json.
    const entry =
      (err as { code?: string }).code === "ERR_PACKAGE_PATH_NOT_EXPORTED"
        ? importEntry(specifier, dirname(configFile))
        : undefined;
    if (!entry) throw err;
    return pathToFileURL(entry).href;
  }
}

/** The file a package's root `import` (or `node`, `default`) export names, found in a node_modules above `dir`. */
function importEntry(name: string, dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const folder = join(at, "node_modules", name);
    if (existsSync(join(folder, "package.json"))) {
      const { exports } = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as { exports?: unknown };
      let target = (exports as Record<string, unknown> | undefined)?.["."] ?? exports;
      while (target && typeof target === "object" && !Array.isArray(target)) {
        const conditions = target as Record<string, unknown>;
        target = conditions.import ?? conditions.node ?? conditions.default;
      }
      return typeof target === "string" ? join(folder, target) : undefined;
    }
    if (dirname(at) === at) return undefined;
  }
}

/** The query that marks an import for ESM_HOOKS. */
const AS_ESM = "mediagate-esm";

/**
 * Node's module hooks, registered after tsx's, so they see what tsx resolved: a file URL carrying AS_ESM is an
 * ES module (in the format tsx, or Node's own type stripping, takes for TypeScript), and so is every `.ts`
 * file of the project (not of node_modules) that such a module imports and that would be CommonJS, which
 * carries the mark on (an ES module stays as it is: one instance, shared with the server). Only the
 * ESM half of tsx may be registered (`mediagate start`), so a CommonJS .ts file would not load at all. The
 * URL is rebuilt from the path: tsx marks a CommonJS file it will pre-parse with queries in it.
 */
const ESM_HOOKS = `const MARK = "${AS_ESM}";
const marked = (url) => typeof url === "string" && url.startsWith("file:") && new URL(url).searchParams.has(MARK);
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (!result.url.startsWith("file:")) return result;
  const path = new URL(result.url).pathname.split("%3F")[0];
  const own = /\\.tsx?$/.test(path) && !path.includes("/node_modules/");
  const commonJs = !result.format?.startsWith("module");
  if (!marked(result.url) && !(own && commonJs && marked(context.parentURL))) return result;
  const format = result.format?.endsWith("-typescript") ? "module-typescript" : "module";
  return { ...result, url: "file://" + path + "?" + MARK, format };
}`;

let esmHooksRegistered = false;

/**
 * import() of a config file or a plugin; a `.ts` file of the project (not of node_modules, where packages
 * declare their own type) is loaded as an ES module. Deno always does so and has no such hooks.
 */
function importModule(url: string): Promise<Record<string, unknown>> {
  const { pathname } = new URL(url);
  if ("Deno" in globalThis || !/\.tsx?$/.test(pathname) || pathname.includes("/node_modules/")) return import(url);
  if (!esmHooksRegistered) {
    register(`data:text/javascript,${encodeURIComponent(ESM_HOOKS)}`);
    esmHooksRegistered = true;
  }
  return import(`${url}?${AS_ESM}`);
}

function isDeclaration(value: unknown): value is PluginDeclaration {
  return typeof value === "object" && value !== null && typeof (value as { name?: unknown }).name === "string";
}

function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.trim();
}
