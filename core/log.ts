// A tiny leveled logger: one line per event on stderr. Secrets are never passed to it.
import type { LogLevel } from "./config.ts";

export interface Logger {
  debug(message: string, ...details: unknown[]): void;
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
  error(message: string, ...details: unknown[]): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(level: LogLevel): Logger {
  const at = (l: Exclude<LogLevel, "silent">) => (message: string, ...details: unknown[]) => {
    if (ORDER[l] < ORDER[level]) return;
    console.error(`${new Date().toISOString()} ${l.toUpperCase()} ${message}`, ...details);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
