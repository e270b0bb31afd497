// Declared plugin configuration (see below), on the SDK floor so that lib/ fragments such as lib/sandbox.ts
// declare variables without importing the kernel. core/config.ts reads the kernel's own settings.
import type { InferOutput, StandardSchemaV1 } from "./standard-schema.ts";

/** An environment: variable name to raw text (process.env, or a test's record). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** A bad value in the environment: the boot stops with the variable's name. */
export class ConfigError extends Error {}

// A plugin names the variables it reads, each with a Standard Schema that turns
// the raw text into its value and supplies the default; the kernel reads every registered plugin's variables
// at boot, before it opens a connection, and a bad value stops the boot by name as the kernel's own do. No file
// under plugins/ reads process.env (test/core/import-boundary.test.ts).

const VARIABLE_NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * One environment variable. Its schema gets the raw text, or undefined when the variable is unset or empty;
 * an issue's message completes the sentence "<NAME> ..." (say "must be a non-negative integer").
 */
export interface ConfigVariable<T = unknown> {
  readonly name: string;
  readonly schema: StandardSchemaV1<unknown, T>;
  /** What it sets and its default, for docs/configuration.md's list. */
  readonly description: string;
  /**
   * A second step after the schema, given the whole environment: for a value that names other variables (the
   * providers file's `key_env`), read at boot like the rest. Throws ConfigError with the whole line.
   */
  readonly resolve?: (value: any, env: Environment) => unknown;
}

/** Declares one variable (see ConfigVariable); the name is checked here, where the mistake is made. */
export function envVar<S extends StandardSchemaV1>(
  name: string,
  schema: S,
  description: string,
): ConfigVariable<InferOutput<S>>;
/** ...whose value is then resolved with the whole environment (ConfigVariable `resolve`). */
export function envVar<S extends StandardSchemaV1, R>(
  name: string,
  schema: S,
  description: string,
  options: { resolve(value: InferOutput<S>, env: Environment): R },
): ConfigVariable<R>;
export function envVar(
  name: string,
  schema: StandardSchemaV1,
  description: string,
  options?: { resolve(value: unknown, env: Environment): unknown },
): ConfigVariable {
  if (!VARIABLE_NAME.test(name))
    throw new Error(`config variable "${name}" must be uppercase letters, digits and underscores`);
  return Object.freeze({ name, schema, description, ...(options ? { resolve: options.resolve } : {}) });
}

export type ConfigVariables = Readonly<Record<string, ConfigVariable<any>>>;
export type ConfigValues<V extends ConfigVariables> = {
  readonly [K in keyof V]: V[K] extends ConfigVariable<infer T> ? T : never;
};

/** One plugin's declared variables as the kernel read them at boot, by variable name. */
export type PluginConfigValues = Readonly<Record<string, unknown>>;

/** What `ConfigDeclaration.of` reads: a context the kernel built for one plugin (handler, job runner, capability factory). */
export interface PluginConfigSource {
  readonly pluginConfig: PluginConfigValues;
}

/** A set of variables under the names a plugin's code uses for them; declared once, read typed through `of`. */
export interface ConfigDeclaration<V extends ConfigVariables = ConfigVariables> {
  readonly variables: V;
  /**
   * The values, typed by this declaration, from the context of a plugin that declares these variables
   * (`definePlugin({ config })`). A fragment (say `sandboxConfig`) reads from any plugin whose config includes it.
   */
  of(source: PluginConfigSource): ConfigValues<V>;
  /** The values an environment gives, read as the kernel reads them at boot; a bad one throws ConfigError. */
  read(env: Environment): ConfigValues<V>;
}

/**
 * Declares a plugin's configuration: `defineConfig({ extractor: envVar("SOCIAL_EXTRACTOR", schema, "...") })`.
 * Spread a shared fragment's `variables` in to include it (`{ ...sandboxConfig.variables, extractor }`).
 */
export function defineConfig<const V extends ConfigVariables>(variables: V): ConfigDeclaration<V> {
  const byName = new Map<string, ConfigVariable>();
  for (const v of Object.values(variables)) {
    const seen = byName.get(v.name);
    if (seen && seen.schema !== v.schema)
      throw new Error(`config variable ${v.name} is declared twice with different schemas`);
    byName.set(v.name, v);
  }
  const keyed = Object.entries(variables);
  const shape = (valueFor: (name: string) => unknown) =>
    Object.freeze(Object.fromEntries(keyed.map(([key, v]) => [key, valueFor(v.name)]))) as ConfigValues<V>;
  // One typed object per plugin: handlers call `of` per request.
  const typed = new WeakMap<PluginConfigValues, ConfigValues<V>>();
  return Object.freeze({
    variables: Object.freeze({ ...variables }),
    of(source: PluginConfigSource) {
      const values = source.pluginConfig;
      let out = typed.get(values);
      if (!out) {
        out = shape((name) => {
          if (!Object.hasOwn(values, name))
            throw new Error(
              `config variable ${name} is read by a plugin that does not declare it (definePlugin config)`,
            );
          return values[name];
        });
        typed.set(values, out);
      }
      return out;
    },
    read(env: Environment) {
      const values = readVariables(byName.values(), env);
      return shape((name) => values[name]);
    },
  });
}

/** Reads and checks variables from an environment, by name; the first bad one throws ConfigError naming it. */
export function readVariables(variables: Iterable<ConfigVariable>, env: Environment): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const v of variables) {
    const raw = env[v.name];
    const result = v.schema["~standard"].validate(raw === "" ? undefined : raw);
    if (result instanceof Promise)
      throw new ConfigError(
        `${v.name}: its schema validates asynchronously, and configuration is read synchronously at boot`,
      );
    if (result.issues)
      throw new ConfigError(
        `${v.name} ${result.issues[0]?.message ?? "is invalid"} (${raw ? `got "${raw}"` : "unset"})`,
      );
    values[v.name] = v.resolve ? v.resolve(result.value, env) : result.value;
  }
  return values;
}
