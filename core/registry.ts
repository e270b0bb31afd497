// Compiles plugin declarations into one frozen registry at boot: order, routes, costs, feature switches.
// Every mistake a plugin author can make in a declaration fails here, by name, before the server listens.

import { KERNEL_CAPABILITIES } from "../contracts/kernel.ts";
import type { Migration } from "../contracts/migration.ts";
import type { ConfigVariable } from "../lib/plugin-config.ts";
import { fieldNames } from "../transports/graphql/names.ts";
import { KERNEL_VARIABLES } from "./config.ts";
import type { OperationDeclaration, PluginDeclaration } from "./plugin.ts";
import { PLUGIN_API_VERSION, satisfiesApiRange } from "./plugin-version.ts";
import { mergeCosts } from "./pricing.ts";
import { RATE_LIMITS, type RateWindow } from "./rate-limits.ts";

export interface CompiledOperation {
  plugin: string;
  declaration: OperationDeclaration<any>;
  method: string;
  /** Spec notation, e.g. `/status/<job_id>`. */
  path: string;
  /** `METHOD path` in spec notation: the usage label and the default rate-limit row. */
  endpoint: string;
  rateLimit: string;
  /** The windows of that row. */
  rateWindows: readonly RateWindow[];
  /** The same path for the router, with `:name` parameters. */
  routerPath: string;
}

export interface Registry {
  plugins: readonly PluginDeclaration[];
  operations: readonly CompiledOperation[];
  costs: Readonly<Record<string, unknown>>;
  features: ReadonlySet<string>;
  /** Pause switches declared by the registered plugins. */
  pauses: ReadonlySet<string>;
  /** The spec's rate-limit table plus the rows plugins declare. */
  rateLimits: ReadonlyMap<string, readonly RateWindow[]>;
  migrations: readonly Migration[];
  /** Which plugin provides each capability. */
  providers: ReadonlyMap<string, PluginDeclaration>;
  /** The plugin an `overrides` entry displaced, by capability: the overriding factory may wrap it (`host.replaced`). */
  replaced: ReadonlyMap<string, PluginDeclaration>;
  /** The plugins contributing to each collection (`contributes`), in registry order. */
  contributors: ReadonlyMap<string, readonly PluginDeclaration[]>;
  /** Every variable the plugins declare (definePlugin `config`), by name, with the plugins declaring it. */
  configVariables: ReadonlyMap<string, { variable: ConfigVariable; plugins: readonly string[] }>;
}

export class BootError extends Error {}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The provider of each capability. One capability has one provider: a second one is a boot error naming
 * both, unless exactly one of them lists the capability in `overrides` (an adapter registered beside the
 * sandbox it replaces), which then provides it wherever it stands in the list.
 */
function providersOf(plugins: readonly PluginDeclaration[]) {
  const providerOf = new Map<string, PluginDeclaration>();
  const replaced = new Map<string, PluginDeclaration>();
  for (const p of plugins) {
    const provided = Object.keys(p.provides ?? {});
    for (const cap of p.overrides ?? [])
      if (!provided.includes(cap))
        throw new BootError(`plugin "${p.name}" overrides capability "${cap}" but does not provide it`);
    for (const cap of provided) {
      const other = providerOf.get(cap);
      if (!other) {
        providerOf.set(cap, p);
        continue;
      }
      const otherOverrides = (other.overrides as readonly string[] | undefined)?.includes(cap) ?? false;
      const pOverrides = (p.overrides as readonly string[] | undefined)?.includes(cap) ?? false;
      if (pOverrides && otherOverrides)
        throw new BootError(`capability "${cap}" is overridden by both "${other.name}" and "${p.name}"`);
      if (pOverrides) {
        providerOf.set(cap, p);
        replaced.set(cap, other);
      } else if (otherOverrides) replaced.set(cap, p);
      else
        throw new BootError(
          `capability "${cap}" is provided by both "${other.name}" and "${p.name}" (the one that replaces the other declares overrides: ["${cap}"])`,
        );
    }
  }
  return { providerOf, replaced };
}

/** Orders plugins by declaration order, moving a plugin after the providers of what it requires. */
function order(plugins: readonly PluginDeclaration[], providerOf: ReadonlyMap<string, PluginDeclaration>) {
  const ordered: PluginDeclaration[] = [];
  const state = new Map<PluginDeclaration, "visiting" | "done">();
  const visit = (p: PluginDeclaration, chain: string[]) => {
    if (state.get(p) === "done") return;
    if (state.get(p) === "visiting")
      throw new BootError(`plugins require each other in a cycle: ${[...chain, p.name].join(" -> ")}`);
    state.set(p, "visiting");
    for (const cap of p.requires ?? []) {
      if ((KERNEL_CAPABILITIES as readonly string[]).includes(cap)) continue;
      const provider = providerOf.get(cap);
      if (!provider)
        throw new BootError(`plugin "${p.name}" requires capability "${cap}", which no registered plugin provides`);
      if (provider !== p) visit(provider, [...chain, p.name]);
    }
    state.set(p, "done");
    ordered.push(p);
  };
  for (const p of plugins) visit(p, []);
  return ordered;
}

/**
 * The boot checks (docs/plugins.md "Boot checks"): each mistake below stops the boot with one line naming
 * the plugins involved and what they both claim, before any connection is opened. In order: the plugin API
 * range each plugin declares (`apiVersion`; none declared is accepted), one plugin listed twice or two
 * plugins with one name, capabilities (one provider unless one `overrides`), routes, rate-limit rows,
 * GraphQL field names, migrations, costs, collections and configuration variables. Job kinds are the
 * plugin's own (`<plugin>/<kind>`, queue `<plugin>.<kind>`), so two plugins may each have a kind "render".
 */
export function compileRegistry(input: readonly PluginDeclaration[]): Registry {
  for (const p of input)
    if (p.apiVersion !== undefined && !satisfiesApiRange(String(p.apiVersion)))
      throw new BootError(
        `plugin "${p.name}" was written for mediagate plugin API ${p.apiVersion}; this is ${PLUGIN_API_VERSION}`,
      );
  const byName = new Map<string, number>();
  input.forEach((p, i) => {
    const seen = byName.get(p.name);
    if (seen !== undefined)
      throw new BootError(
        input[seen] === p
          ? `plugin "${p.name}" is registered twice (entries ${seen + 1} and ${i + 1} of the plugin list)`
          : `two different plugins are named "${p.name}" (entries ${seen + 1} and ${i + 1} of the plugin list)`,
      );
    byName.set(p.name, i);
  });
  const { providerOf, replaced } = providersOf(input);
  const plugins = order(input, providerOf);
  // In registry order, as the kernel builds them; an overridden provider's factory is never called.
  const providers = new Map<string, PluginDeclaration>();
  for (const p of plugins)
    for (const cap of Object.keys(p.provides ?? {})) if (providerOf.get(cap) === p) providers.set(cap, p);

  // Routes before rate-limit rows: two plugins declaring one route (and so, often, one row of the same
  // name) are told so, not that a row is redeclared.
  const routes = new Map<string, string>();
  for (const p of plugins)
    for (const op of p.operations ?? []) {
      if (!op.path.startsWith("/")) throw new BootError(`plugin "${p.name}": path "${op.path}" must start with "/"`);
      const routerPath = op.path.replace(/<([a-z_][a-z0-9_]*)>/gi, ":$1");
      const routeKey = `${op.method} ${routerPath.replace(/:[a-z_][a-z0-9_]*/gi, ":")}`;
      const owner = routes.get(routeKey);
      if (owner) throw new BootError(`route ${op.method} ${op.path} is declared by "${owner}" and "${p.name}"`);
      routes.set(routeKey, p.name);
    }

  const rateLimits = new Map<string, readonly RateWindow[]>(Object.entries(RATE_LIMITS));
  const rateLimitOwners = new Map<string, string>();
  for (const p of plugins)
    for (const [name, windows] of Object.entries(p.rateLimits ?? {})) {
      const owner = rateLimitOwners.get(name);
      if (owner) throw new BootError(`rate limit "${name}" is declared by "${owner}" and "${p.name}"`);
      if (rateLimits.has(name))
        throw new BootError(`plugin "${p.name}" redeclares rate limit "${name}", which the spec's table already has`);
      if (!windows.length || windows.some((w) => !(w.limit > 0 && w.windowSeconds > 0)))
        throw new BootError(`plugin "${p.name}": rate limit "${name}" needs positive limits and windows`);
      rateLimits.set(name, windows);
      rateLimitOwners.set(name, p.name);
    }

  const operations: CompiledOperation[] = [];
  const features = new Set<string>();
  for (const p of plugins) {
    for (const f of p.features ?? []) features.add(f);
    for (const op of p.operations ?? []) {
      const endpoint = `${op.method} ${op.path}`;
      const routerPath = op.path.replace(/<([a-z_][a-z0-9_]*)>/gi, ":$1");
      const rateLimit = op.rateLimit ?? endpoint;
      const rateWindows = rateLimits.get(rateLimit);
      if (!rateWindows) {
        throw new BootError(
          `plugin "${p.name}": ${endpoint} names rate limit "${rateLimit}", which is neither a row of the spec's table nor declared by the plugin`,
        );
      }
      if (op.feature) features.add(op.feature);
      operations.push({
        plugin: p.name,
        declaration: op,
        method: op.method,
        path: op.path,
        endpoint,
        rateLimit,
        rateWindows,
        routerPath,
      });
    }
  }

  // The GraphQL root fields are derived from the routes (transports/graphql/names.ts): distinct routes may
  // still give one field name (`GET /a-b` and `GET /a/b` are both `aB`).
  try {
    fieldNames(operations);
  } catch (err) {
    throw new BootError((err as Error).message);
  }

  const migrations: Migration[] = [];
  for (const p of plugins)
    for (const m of p.migrations ?? []) {
      if (!m.name.startsWith(`${p.name}/`))
        throw new BootError(`plugin "${p.name}": migration "${m.name}" must be named "${p.name}/..."`);
      migrations.push(m);
    }

  let costs: Record<string, unknown>;
  try {
    costs = mergeCosts(
      plugins
        .filter((p) => p.costs)
        .map((p) => ({ plugin: p.name, costs: structuredClone(p.costs!) as Record<string, unknown> })),
    );
  } catch (err) {
    throw new BootError((err as Error).message);
  }

  // A collection is a name of its own: one that is also a capability would mean two things by one name.
  const contributors = new Map<string, PluginDeclaration[]>();
  for (const p of plugins)
    for (const name of Object.keys(p.contributes ?? {})) {
      if (providers.has(name) || (KERNEL_CAPABILITIES as readonly string[]).includes(name))
        throw new BootError(`plugin "${p.name}" contributes to "${name}", which is a capability, not a collection`);
      contributors.set(name, [...(contributors.get(name) ?? []), p]);
    }

  // One variable has one meaning: plugins that read it share one declaration (a fragment such as
  // sandboxConfig), so they cannot disagree on its default or its checks.
  const configVariables = new Map<string, { variable: ConfigVariable; plugins: string[] }>();
  for (const p of plugins)
    for (const v of Object.values(p.config?.variables ?? {})) {
      if ((KERNEL_VARIABLES as readonly string[]).includes(v.name))
        throw new BootError(`plugin "${p.name}" declares ${v.name}, which the kernel reads itself`);
      const seen = configVariables.get(v.name);
      if (!seen) configVariables.set(v.name, { variable: v, plugins: [p.name] });
      else if (seen.variable.schema !== v.schema)
        throw new BootError(
          `plugins "${seen.plugins[0]}" and "${p.name}" both declare ${v.name}, with different schemas (share one declaration)`,
        );
      else if (!seen.plugins.includes(p.name)) seen.plugins.push(p.name);
    }

  // Shallow freezes for what holds plugin values: schema libraries cache lazily on their own objects.
  return Object.freeze({
    plugins: Object.freeze(plugins),
    operations: Object.freeze(operations.map((o) => Object.freeze(o))),
    costs: deepFreeze(costs),
    features,
    pauses: new Set(plugins.flatMap((p) => p.pauses ?? [])),
    rateLimits,
    migrations: Object.freeze(migrations),
    providers,
    replaced,
    contributors,
    configVariables,
  });
}
