// Configuration comes from the environment only (DESIGN "Configuration"). Parsed once at boot; a bad value
// stops the boot with the variable's name rather than surfacing later as odd behaviour.
import { resolve } from "node:path";
import process from "node:process";

export type Role = "all" | "api" | "worker";
export type MediaEngineChoice = "auto" | "native" | "wasm";
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  publicUrl: string;
  adminToken: string | undefined;
  role: Role;
  mediaEngine: MediaEngineChoice;
  sandboxLatencyMs: number;
  /** How often the retention sweeper looks for expired files (RETENTION_SWEEP_MS, default 10 minutes). */
  retentionSweepMs: number;
  webhookRetryDelays: number[];
  allowPrivateUrls: boolean;
  logLevel: LogLevel;
}

export class ConfigError extends Error {}

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

function flag(value: string | undefined): boolean {
  return value !== undefined && ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = nonNegativeInt("PORT", env.PORT, 3000);
  if (port > 65535) throw new ConfigError(`PORT must be at most 65535 (got ${port})`);
  const delays = (env.WEBHOOK_RETRY_DELAYS || "60,300,1800,7200,21600").split(",").map((s) => s.trim());
  for (const d of delays) {
    if (!/^\d+$/.test(d)) throw new ConfigError(`WEBHOOK_RETRY_DELAYS must be comma-separated seconds (got "${env.WEBHOOK_RETRY_DELAYS}")`);
  }
  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, "");
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute URL (got "${env.PUBLIC_URL}")`);
  }
  return {
    port,
    host: env.HOST || "127.0.0.1",
    dataDir: resolve(env.DATA_DIR || "./.data"),
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    publicUrl,
    adminToken: env.ADMIN_TOKEN || undefined,
    role: oneOf("ROLE", env.ROLE, ["all", "api", "worker"] as const, "all"),
    mediaEngine: oneOf("MEDIA_ENGINE", env.MEDIA_ENGINE, ["auto", "native", "wasm"] as const, "auto"),
    sandboxLatencyMs: nonNegativeInt("SANDBOX_LATENCY_MS", env.SANDBOX_LATENCY_MS, 2000),
    retentionSweepMs: nonNegativeInt("RETENTION_SWEEP_MS", env.RETENTION_SWEEP_MS, 600_000) || 600_000,
    webhookRetryDelays: delays.map(Number),
    allowPrivateUrls: flag(env.ALLOW_PRIVATE_URLS),
    logLevel: oneOf("LOG_LEVEL", env.LOG_LEVEL, ["debug", "info", "warn", "error", "silent"] as const, "info"),
  };
}
