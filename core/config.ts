// Configuration comes from the environment only (docs/configuration.md). Parsed once at boot; a bad value
// stops the boot with the variable's name rather than surfacing later as odd behaviour. Two kinds: the
// kernel's own settings (`Config`, read by loadConfig) and the variables each plugin declares for itself
// (`defineConfig`, read by the kernel at boot from the same environment).

import { resolve } from "node:path";
import process from "node:process";
import { defaultMediaConcurrency } from "../lib/media/pool.ts";
import { ConfigError, type Environment } from "../lib/plugin-config.ts";
import { BlobUrlError, parseBlobUrl } from "../storage/blob-url.ts";

/**
 * Every variable the kernel itself reads. loadConfig can read no other (its accessor is typed by this list),
 * so docs/configuration.md is checked against it (test/core/config-docs.test.ts).
 */
export const KERNEL_VARIABLES = [
  "PORT",
  "HOST",
  "DATA_DIR",
  "DATABASE_URL",
  "REDIS_URL",
  "BLOB_URL",
  "PUBLIC_URL",
  "ADMIN_TOKEN",
  "ROLE",
  "MEDIA_ENGINE",
  "RETENTION_SWEEP_MS",
  "LEASE_SECONDS",
  "WEBHOOK_RETRY_DELAYS",
  "ALLOW_PRIVATE_URLS",
  "LOG_LEVEL",
  "HEALTH_PORT",
  "ADMIN_PORT",
  "ADMIN_HOST",
  "NODE_ENV",
  "GRAPHQL_INTROSPECTION",
  "CORS_ORIGINS",
  "ACCESS_LOG",
  "GRAPHQL_PERSISTED_OPERATIONS",
  "GRAPHQL_PERSISTED_ONLY",
  "UPSTREAM_CALLBACK_SECRET",
  "MEDIA_CONCURRENCY",
  "HTTP_HEADERS_TIMEOUT_MS",
  "HTTP_BODY_TIMEOUT_MS",
  "HTTP_BODY_MIN_BYTES_PER_S",
  "HTTP_KEEP_ALIVE_TIMEOUT_MS",
  "HTTP_CONNECTIONS_PER_ADDRESS",
  "HTTP_CONNECTIONS_MAX",
  "GRAPHQL_SUBSCRIPTIONS_PER_KEY",
  "GRAPHQL_SUBSCRIPTIONS_PER_SOCKET",
  "MEDIA_CHILD_MEMORY_MB",
  "MEDIA_CHILD_CPU_SECONDS",
] as const;
export type KernelVariable = (typeof KERNEL_VARIABLES)[number];

export type Role = "all" | "api" | "worker";
export type MediaEngineChoice = "auto" | "native" | "wasm";
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** An S3-compatible bucket for media files (BLOB_URL, storage/blob-url.ts); unset: DATA_DIR/blobs. */
  blobUrl: string | undefined;
  publicUrl: string;
  adminToken: string | undefined;
  role: Role;
  mediaEngine: MediaEngineChoice;
  /** How often the retention sweeper looks for expired files (RETENTION_SWEEP_MS, default 10 minutes). */
  retentionSweepMs: number;
  /**
   * How long a process's lease on its work outlives its last heartbeat (LEASE_SECONDS, default 15, at least 2;
   * core/leases.ts): the time after a crash before another process finishes or refunds that work.
   */
  leaseSeconds: number;
  webhookRetryDelays: number[];
  allowPrivateUrls: boolean;
  logLevel: LogLevel;
  /**
   * A second port serving only /healthz and /readyz (HEALTH_PORT; unset: none). The probe of a ROLE=worker
   * process, which serves no HTTP API; in the other roles, probes kept off the public port.
   */
  healthPort: number | undefined;
  /**
   * The admin API on a port (and address) of its own, off the public one, which then answers its paths 404
   * (ADMIN_PORT, ADMIN_HOST; unset: the admin API is on PORT; ADMIN_HOST alone: on PORT of that address).
   */
  admin: { port: number; host: string } | undefined;
  /**
   * GraphQL schema introspection and the GraphiQL page (GRAPHQL_INTROSPECTION). Default: on in development,
   * off when NODE_ENV=production, where the schema is published as schema/schema.graphql instead.
   */
  graphqlIntrospection: boolean;
  /**
   * Browser origins allowed to call the partner API and GraphQL (CORS_ORIGINS, comma-separated, each
   * `scheme://host[:port]`). Default none: an API key belongs on a server; this is for frontend teams whose
   * own backend proxies the key and whose pages call through it.
   */
  corsOrigins: string[];
  /**
   * One log line per request at info level (ACCESS_LOG, default on). Off where a proxy in front already
   * writes one: it is the most expensive of the shared HTTP manners (me.bench).
   */
  accessLog: boolean;
  /** A JSON manifest of persisted GraphQL operations, `{ id: document }` (transports/graphql/persisted.ts). */
  graphqlPersistedOperations: string | undefined;
  /** Only the manifest's operations run (an allow-list), over HTTP and WebSocket. */
  graphqlPersistedOnly: boolean;
  /**
   * Turns on upstream callbacks (UPSTREAM_CALLBACK_SECRET, at least 32 characters): providers may call
   * `POST /upstream/<provider>/callback` to have a waiting job polled at once, signed with a key derived from
   * this secret per provider (core/upstream-waits.ts). Unset: the route answers 404 and jobs are only polled.
   */
  upstreamCallbackSecret: string | undefined;
  /**
   * Places in the process's media pool (MEDIA_CONCURRENCY, default the number of cores): CPU-heavy work of
   * every job kind (ffmpeg runs, resampling) takes one while it runs (lib/media/pool.ts).
   */
  mediaConcurrency: number;
  /** Caps on each media tool run (lib/media/native.ts ChildLimits): address space in MB, CPU seconds; 0 is none. */
  mediaChildLimits: { memoryMb: number; cpuSeconds: number };
  /** Time-outs and caps of connections and subscriptions (the HTTP_* and GRAPHQL_SUBSCRIPTIONS_* variables). */
  connections: ConnectionSettings;
}

/**
 * What one slow or greedy client may hold (transports/connection-limits.ts, transports/graphql/
 * subscription-limits.ts, where each default is reasoned). A cap of 0 is off.
 */
export interface ConnectionSettings {
  headersTimeoutMs: number;
  /** The window over which a request body must arrive at `bodyMinBytesPerS` at least. */
  bodyTimeoutMs: number;
  bodyMinBytesPerS: number;
  keepAliveTimeoutMs: number;
  perAddress: number;
  /** undefined: chosen from the process's file-descriptor limit at start. */
  max: number | undefined;
  subscriptionsPerKey: number;
  subscriptionsPerSocket: number;
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined || value === "") return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(`${name} must be one of ${allowed.join(", ")} (got "${value}")`);
}

function nonNegativeInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(`${name} must be a non-negative integer (got "${value}")`);
  return Number(value);
}

/**
 * A list of exact origins, as a browser sends them in `Origin` (no path, no trailing slash, no "*": a wildcard
 * would hand any page on the web a partner's authority once a key reached a browser).
 */
function origins(name: string, value: string | undefined): string[] {
  if (value === undefined || value.trim() === "") return [];
  return value.split(",").map((raw) => {
    const text = raw.trim();
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== text) {
      throw new ConfigError(`${name} must be comma-separated origins such as https://app.example.com (got "${text}")`);
    }
    return text;
  });
}

/** BLOB_URL as given, once it parses; its error never repeats the URL, which carries a secret. */
function checkedBlobUrl(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  try {
    parseBlobUrl(value.trim());
  } catch (err) {
    if (err instanceof BlobUrlError) throw new ConfigError(`BLOB_URL ${err.message}`);
    throw err;
  }
  return value.trim();
}

const TRUE_WORDS = ["1", "true", "yes", "on"];
const FALSE_WORDS = ["0", "false", "no", "off"];

/**
 * A boolean variable, strictly: a word that is neither on nor off ("maybe", "ture") stops the boot rather
 * than reading as off, which would silently leave a switch the operator meant to turn on turned off.
 */
export function flag(name: string, value: string | undefined, fallback = false): boolean {
  if (value === undefined || value.trim() === "") return fallback;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (FALSE_WORDS.includes(word)) return false;
  throw new ConfigError(`${name} must be one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(", ")} (got "${value}")`);
}

// The environment each Config was read from, so the kernel reads the plugins' variables from the same one
// (a test's loadConfig({...}) record, or process.env) without the kernel's Config carrying it to plugins.
const loadedFrom = new WeakMap<Config, Environment>();

/** The environment `config` was loaded from (undefined for a Config not made by loadConfig). */
export function environmentOf(config: Config): Environment | undefined {
  return loadedFrom.get(config);
}

export function loadConfig(source: Environment = process.env): Config {
  const env: { readonly [K in KernelVariable]?: string } = source;
  const port = nonNegativeInt("PORT", env.PORT, 3000);
  if (port > 65535) throw new ConfigError(`PORT must be at most 65535 (got ${port})`);
  const delays = (env.WEBHOOK_RETRY_DELAYS || "60,300,1800,7200,21600").split(",").map((s) => s.trim());
  for (const d of delays) {
    if (!/^\d+$/.test(d))
      throw new ConfigError(`WEBHOOK_RETRY_DELAYS must be comma-separated seconds (got "${env.WEBHOOK_RETRY_DELAYS}")`);
  }
  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/(?<!\/)\/+$/, "");
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute URL (got "${env.PUBLIC_URL}")`);
  }
  const config: Config = {
    port,
    host: env.HOST || "127.0.0.1",
    dataDir: resolve(env.DATA_DIR || "./.data"),
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    blobUrl: checkedBlobUrl(env.BLOB_URL),
    publicUrl,
    adminToken: env.ADMIN_TOKEN || undefined,
    role: oneOf("ROLE", env.ROLE, ["all", "api", "worker"] as const, "all"),
    mediaEngine: oneOf("MEDIA_ENGINE", env.MEDIA_ENGINE, ["auto", "native", "wasm"] as const, "auto"),
    retentionSweepMs: nonNegativeInt("RETENTION_SWEEP_MS", env.RETENTION_SWEEP_MS, 600_000) || 600_000,
    leaseSeconds: Math.max(2, nonNegativeInt("LEASE_SECONDS", env.LEASE_SECONDS, 15)),
    webhookRetryDelays: delays.map(Number),
    allowPrivateUrls: flag("ALLOW_PRIVATE_URLS", env.ALLOW_PRIVATE_URLS),
    logLevel: oneOf("LOG_LEVEL", env.LOG_LEVEL, ["debug", "info", "warn", "error", "silent"] as const, "info"),
    healthPort: env.HEALTH_PORT ? nonNegativeInt("HEALTH_PORT", env.HEALTH_PORT, 0) : undefined,
    admin:
      env.ADMIN_PORT || env.ADMIN_HOST
        ? {
            port: env.ADMIN_PORT ? nonNegativeInt("ADMIN_PORT", env.ADMIN_PORT, 0) : port,
            host: env.ADMIN_HOST || env.HOST || "127.0.0.1",
          }
        : undefined,
    // "Development" is any NODE_ENV but production, unset included: `npm start` on a laptop gets GraphiQL.
    graphqlIntrospection: flag("GRAPHQL_INTROSPECTION", env.GRAPHQL_INTROSPECTION, env.NODE_ENV !== "production"),
    corsOrigins: origins("CORS_ORIGINS", env.CORS_ORIGINS),
    accessLog: flag("ACCESS_LOG", env.ACCESS_LOG, true),
    graphqlPersistedOperations: env.GRAPHQL_PERSISTED_OPERATIONS
      ? resolve(env.GRAPHQL_PERSISTED_OPERATIONS)
      : undefined,
    graphqlPersistedOnly: flag("GRAPHQL_PERSISTED_ONLY", env.GRAPHQL_PERSISTED_ONLY),
    upstreamCallbackSecret: env.UPSTREAM_CALLBACK_SECRET || undefined,
    mediaConcurrency: nonNegativeInt("MEDIA_CONCURRENCY", env.MEDIA_CONCURRENCY, defaultMediaConcurrency()),
    mediaChildLimits: {
      memoryMb: nonNegativeInt("MEDIA_CHILD_MEMORY_MB", env.MEDIA_CHILD_MEMORY_MB, 4096),
      cpuSeconds: nonNegativeInt("MEDIA_CHILD_CPU_SECONDS", env.MEDIA_CHILD_CPU_SECONDS, 3600),
    },
    connections: {
      headersTimeoutMs: nonNegativeInt("HTTP_HEADERS_TIMEOUT_MS", env.HTTP_HEADERS_TIMEOUT_MS, 10_000),
      bodyTimeoutMs: nonNegativeInt("HTTP_BODY_TIMEOUT_MS", env.HTTP_BODY_TIMEOUT_MS, 10_000),
      bodyMinBytesPerS: nonNegativeInt("HTTP_BODY_MIN_BYTES_PER_S", env.HTTP_BODY_MIN_BYTES_PER_S, 1024),
      keepAliveTimeoutMs: nonNegativeInt("HTTP_KEEP_ALIVE_TIMEOUT_MS", env.HTTP_KEEP_ALIVE_TIMEOUT_MS, 5_000),
      perAddress: nonNegativeInt("HTTP_CONNECTIONS_PER_ADDRESS", env.HTTP_CONNECTIONS_PER_ADDRESS, 256),
      max: env.HTTP_CONNECTIONS_MAX ? nonNegativeInt("HTTP_CONNECTIONS_MAX", env.HTTP_CONNECTIONS_MAX, 0) : undefined,
      subscriptionsPerKey: nonNegativeInt("GRAPHQL_SUBSCRIPTIONS_PER_KEY", env.GRAPHQL_SUBSCRIPTIONS_PER_KEY, 200),
      subscriptionsPerSocket: nonNegativeInt(
        "GRAPHQL_SUBSCRIPTIONS_PER_SOCKET",
        env.GRAPHQL_SUBSCRIPTIONS_PER_SOCKET,
        100,
      ),
    },
  };
  if (config.mediaConcurrency < 1) throw new ConfigError("MEDIA_CONCURRENCY must be at least 1");
  if (config.upstreamCallbackSecret !== undefined && config.upstreamCallbackSecret.length < 32) {
    throw new ConfigError("UPSTREAM_CALLBACK_SECRET must be at least 32 characters");
  }
  if (config.healthPort !== undefined) {
    if (config.healthPort < 1 || config.healthPort > 65535)
      throw new ConfigError(`HEALTH_PORT must be between 1 and 65535 (got ${config.healthPort})`);
    if (config.healthPort === port && config.role !== "worker")
      throw new ConfigError(`HEALTH_PORT must differ from PORT (both ${port})`);
  }
  if (config.admin) {
    const { port: adminPort, host: adminHost } = config.admin;
    if (adminPort < 1 || adminPort > 65535)
      throw new ConfigError(`ADMIN_PORT must be between 1 and 65535 (got ${adminPort})`);
    if (adminPort === port && adminHost === config.host)
      throw new ConfigError(
        `ADMIN_PORT and ADMIN_HOST must not both be PORT and HOST (${adminHost}:${port}): the admin API would not be apart`,
      );
    if (adminPort === config.healthPort)
      throw new ConfigError(`ADMIN_PORT must differ from HEALTH_PORT (both ${adminPort})`);
  }
  loadedFrom.set(config, source);
  return config;
}
