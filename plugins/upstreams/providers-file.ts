// The providers file (issue 39 item 1): PROVIDERS_FILE names a JSON file that says which upstream services
// exist (`providers`) and, for each spec model id, which of them to try in order (`routes`). It is read and
// checked at boot, before any connection: a bad file stops the boot with one line naming the JSON path at
// fault. Keys never live in the file: `key_env` names the variable that holds one, read from the same
// environment at boot (a missing one is a boot error naming it).
import { readFileSync } from "node:fs";
import { ConfigError, defineConfig, type Environment, envVar } from "mediagate/plugin";
import { checkOutputPath, checkTemplate } from "./placeholders.ts";

/**
 * The spec's model ids a route may be given, by capability. One table here, not imported from the areas'
 * plugins (a plugin never imports another): test/upstreams/providers-file.test.ts checks it against the
 * images, video, omni and music plugins' own tables, so a model added there and not here fails a test.
 * `animation` is the video plugin's route for POST /animate (it has no model id of its own in the spec).
 */
export const SPEC_MODELS = {
  "image.generate": ["image-a-pro", "image-b-2", "image-b-2-5-flare", "image-b-2-5-sunburst"],
  "video.generate": [
    "alpha-v3-text-to-video",
    "alpha-v3-image-to-video",
    "alpha-v3-motion-control",
    "beta-2-direct",
    "beta-2-5",
    "gamma-3.1-quality",
    "gamma-3.1-fast",
    "animation",
  ],
  "omni.generate": ["omni", "omni-1.1"],
  "music.generate": ["V5_5", "V5"],
} as const;

export type GatewayCapability = keyof typeof SPEC_MODELS;

/** The capability a spec model id belongs to, or undefined for an id the spec does not sell. */
export function capabilityOf(model: string): GatewayCapability | undefined {
  for (const [cap, models] of Object.entries(SPEC_MODELS) as Array<[GatewayCapability, readonly string[]]>)
    if (models.includes(model)) return cap;
  return undefined;
}

export const PROVIDER_PROTOCOLS = ["fal", "replicate", "sandbox"] as const;
export type ProviderProtocol = (typeof PROVIDER_PROTOCOLS)[number];

/** Each service's public URL, the default `base_url`. */
export const DEFAULT_BASE_URLS = {
  fal: "https://queue.fal.run",
  replicate: "https://api.replicate.com/v1",
} as const;

/** The provider name a route may give without declaring it: today's sandbox of the capability. */
export const SANDBOX = "sandbox";

export interface ProviderEntry {
  name: string;
  protocol: ProviderProtocol;
  baseUrl: string;
  /** Names of variables, never their values. */
  keyEnv?: string;
  webhookSecretEnv?: string;
  jwksUrl?: string;
}

export interface RouteEntry {
  provider: string;
  /** The upstream's model id (absent for a sandbox route). */
  model?: string;
  input?: Record<string, unknown>;
  output?: string;
}

export interface ProvidersFile {
  providers: Readonly<Record<string, ProviderEntry>>;
  /** By spec model id, in the order they are tried. */
  routes: Readonly<Record<string, readonly RouteEntry[]>>;
}

/** The file with the secrets its providers name, read from the environment at boot. */
export interface ProvidersSetup extends ProvidersFile {
  secrets: Readonly<Record<string, { key: string; webhookSecret?: string }>>;
}

/** A mistake in the file at one JSON path. */
export class ProvidersFileError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

const VARIABLE = /^[A-Z_][A-Z0-9_]*$/;
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const UPSTREAM_MODEL = /^[\x21-\x7e]{1,200}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const key = (parent: string, name: string) =>
  /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name) ? `${parent}.${name}` : `${parent}[${JSON.stringify(name)}]`;
const shown = (v: unknown) => JSON.stringify(v)?.slice(0, 80) ?? String(v);

function onlyKeys(value: Record<string, unknown>, path: string, allowed: readonly string[]) {
  for (const k of Object.keys(value))
    if (!allowed.includes(k))
      throw new ProvidersFileError(key(path, k), `unknown field (expected one of ${allowed.join(", ")})`);
}

function httpUrl(value: unknown, path: string): string {
  if (typeof value !== "string") throw new ProvidersFileError(path, "must be a URL string");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ProvidersFileError(path, `${shown(value)} is not a URL`);
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password || url.search || url.hash)
    throw new ProvidersFileError(path, "must be an http(s) URL without credentials, query or fragment");
  return value.replace(/(?<!\/)\/+$/, "");
}

function variableName(value: unknown, path: string): string {
  if (typeof value !== "string" || !VARIABLE.test(value))
    throw new ProvidersFileError(path, "must name an environment variable (uppercase letters, digits, underscores)");
  return value;
}

function provider(name: string, value: unknown, path: string): ProviderEntry {
  if (!PROVIDER_NAME.test(name))
    throw new ProvidersFileError(path, "a provider name is lowercase letters, digits, dashes and underscores");
  if (name === SANDBOX && !(isObject(value) && value.protocol === SANDBOX))
    throw new ProvidersFileError(path, `"${SANDBOX}" is the sandbox's name; its protocol must be "${SANDBOX}"`);
  if (!isObject(value)) throw new ProvidersFileError(path, "must be an object");
  const protocol = value.protocol;
  if (!PROVIDER_PROTOCOLS.includes(protocol as ProviderProtocol))
    throw new ProvidersFileError(`${path}.protocol`, `must be one of ${PROVIDER_PROTOCOLS.join(", ")}`);
  if (protocol === "sandbox") {
    onlyKeys(value, path, ["protocol"]);
    return { name, protocol, baseUrl: "" };
  }
  const p = protocol as "fal" | "replicate";
  onlyKeys(value, path, ["protocol", "base_url", "key_env", ...(p === "fal" ? ["jwks_url"] : ["webhook_secret_env"])]);
  const entry: ProviderEntry = {
    name,
    protocol: p,
    baseUrl: value.base_url === undefined ? DEFAULT_BASE_URLS[p] : httpUrl(value.base_url, `${path}.base_url`),
    keyEnv: variableName(value.key_env, `${path}.key_env`),
  };
  if (value.webhook_secret_env !== undefined)
    entry.webhookSecretEnv = variableName(value.webhook_secret_env, `${path}.webhook_secret_env`);
  if (value.jwks_url !== undefined) entry.jwksUrl = httpUrl(value.jwks_url, `${path}.jwks_url`);
  return entry;
}

function route(value: unknown, path: string, providers: Record<string, ProviderEntry>): RouteEntry {
  if (!isObject(value)) throw new ProvidersFileError(path, "must be an object");
  onlyKeys(value, path, ["provider", "model", "input", "output"]);
  const name = value.provider;
  if (typeof name !== "string") throw new ProvidersFileError(`${path}.provider`, "must be a provider's name");
  const entry = providers[name];
  if (!entry && name !== SANDBOX)
    throw new ProvidersFileError(`${path}.provider`, `${shown(name)} is not a provider of this file`);
  if ((entry?.protocol ?? SANDBOX) === SANDBOX) {
    onlyKeys(value, path, ["provider"]);
    return { provider: name };
  }
  if (typeof value.model !== "string" || !UPSTREAM_MODEL.test(value.model))
    throw new ProvidersFileError(`${path}.model`, "must be the upstream's model id (printable ASCII, no spaces)");
  const out: RouteEntry = { provider: name, model: value.model };
  if (value.input !== undefined) {
    if (!isObject(value.input)) throw new ProvidersFileError(`${path}.input`, "must be a JSON object");
    const bad = checkTemplate(value.input, `${path}.input`);
    if (bad) throw new ProvidersFileError(bad.path, bad.problem);
    out.input = value.input;
  }
  if (value.output !== undefined) {
    if (typeof value.output !== "string" || !checkOutputPath(value.output))
      throw new ProvidersFileError(
        `${path}.output`,
        'must be a dotted path into the result, e.g. "data.images[0].url" or "output"',
      );
    out.output = value.output;
  }
  return out;
}

/** The file's text, checked; throws ProvidersFileError naming the JSON path at fault. */
export function parseProvidersFile(text: string): ProvidersFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ProvidersFileError("$", `is not JSON (${(err as Error).message})`);
  }
  if (!isObject(json)) throw new ProvidersFileError("$", "must be a JSON object");
  onlyKeys(json, "$", ["providers", "routes"]);
  const rawProviders = json.providers ?? {};
  if (!isObject(rawProviders)) throw new ProvidersFileError("providers", "must be an object");
  const providers: Record<string, ProviderEntry> = {};
  for (const [name, value] of Object.entries(rawProviders))
    providers[name] = provider(name, value, key("providers", name));
  if (!isObject(json.routes)) throw new ProvidersFileError("routes", "must be an object of spec model ids");
  const routes: Record<string, RouteEntry[]> = {};
  for (const [model, list] of Object.entries(json.routes)) {
    const path = key("routes", model);
    if (!capabilityOf(model))
      throw new ProvidersFileError(path, `${shown(model)} is not a model id of the spec (${allModels()})`);
    if (!Array.isArray(list) || list.length === 0)
      throw new ProvidersFileError(path, "must be a non-empty list of routes");
    routes[model] = list.map((r, i) => route(r, `${path}[${i}]`, providers));
  }
  return { providers, routes };
}

const allModels = () => Object.values(SPEC_MODELS).flat().join(", ");

/** Reads the file a path names (PROVIDERS_FILE): its text, checked. */
export function readProvidersFile(path: string): ProvidersFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ProvidersFileError("$", `cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  return parseProvidersFile(text);
}

/** The secrets the file's providers name, from the environment: a missing one throws ConfigError naming it. */
export function providersSetup(file: ProvidersFile, env: Environment): ProvidersSetup {
  const secrets: Record<string, { key: string; webhookSecret?: string }> = {};
  for (const p of Object.values(file.providers)) {
    if (p.protocol === SANDBOX || !p.keyEnv) continue;
    const path = key("providers", p.name);
    const value = env[p.keyEnv];
    if (!value) throw new ConfigError(`PROVIDERS_FILE: ${path}.key_env: ${p.keyEnv} is not set`);
    const webhookSecret = p.webhookSecretEnv ? env[p.webhookSecretEnv] : undefined;
    if (p.webhookSecretEnv && !webhookSecret)
      throw new ConfigError(`PROVIDERS_FILE: ${path}.webhook_secret_env: ${p.webhookSecretEnv} is not set`);
    secrets[p.name] = { key: value, ...(webhookSecret ? { webhookSecret } : {}) };
  }
  return { ...file, secrets };
}

/** PROVIDERS_FILE as a Standard Schema: undefined (unset) or the checked file. */
const providersFileSchema = {
  "~standard": {
    version: 1 as const,
    vendor: "mediagate",
    validate(raw: unknown) {
      if (raw === undefined) return { value: undefined };
      if (typeof raw !== "string") return { issues: [{ message: "must be a path" }] };
      try {
        return { value: readProvidersFile(raw) };
      } catch (err) {
        if (err instanceof ProvidersFileError) return { issues: [{ message: `at ${err.message}` }] };
        throw err;
      }
    },
    types: undefined as unknown as { input: string | undefined; output: ProvidersFile | undefined },
  },
};

export const upstreamsConfig = defineConfig({
  file: envVar(
    "PROVIDERS_FILE",
    providersFileSchema,
    "path of the providers file (docs/upstreams.md): which upstream services serve which spec model; unset: every model runs on the sandboxes",
    { resolve: (file: ProvidersFile | undefined, env) => (file ? providersSetup(file, env) : undefined) },
  ),
});
