// The logger: JSON lines on stderr through pino (one object per event, for a log shipper), or, when stderr is
// a terminal, the same events as readable lines. Secrets are never passed to it: the access log names the
// partner by id, never by key. Details after the message: a plain object becomes fields of the line, an Error
// its `err` (message and stack), anything else goes under `details`.
import process from "node:process";
import pino from "pino";
import type { LogLevel } from "./config.ts";

export interface Logger {
  debug(message: string, ...details: unknown[]): void;
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
  error(message: string, ...details: unknown[]): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
type Level = Exclude<LogLevel, "silent">;

export interface LoggerOptions {
  /** `json` (pino lines), `pretty` (readable lines), or `auto`: pretty when stderr is a terminal. */
  format?: "json" | "pretty" | "auto";
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype;

/** pino's merge object for a message's details. */
function fieldsOf(details: unknown[]): Record<string, unknown> | undefined {
  if (details.length === 0) return undefined;
  const fields: Record<string, unknown> = {};
  const rest: unknown[] = [];
  for (const d of details) {
    if (d instanceof Error) fields.err = d;
    else if (isPlainObject(d)) Object.assign(fields, d);
    else rest.push(d);
  }
  if (rest.length) fields.details = rest.length === 1 ? rest[0] : rest;
  return fields;
}

function prettyLogger(level: LogLevel): Logger {
  const at = (l: Level) => (message: string, ...details: unknown[]) => {
    if (ORDER[l] < ORDER[level]) return;
    console.error(`${new Date().toISOString()} ${l.toUpperCase()} ${message}`, ...details);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * Where pino's lines go: stderr, written in batches. A write to sonic-boom costs about 2 µs a line, which at
 * one access log line per request is a tenth of a fast request (me.bench); joined 64 at a time it is a
 * twentieth of that. Lines of info and debug wait at most 250 ms; a warning or an error flushes at once, with
 * what waited before it, so the lines that matter after a crash are out. At exit everything is flushed.
 */
function batchedStderr() {
  const destination = pino.destination({ dest: 2, sync: false });
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.join("");
    pending = [];
    destination.write(text);
  };
  setInterval(flush, 250).unref();
  process.once("exit", () => {
    flush();
    try {
      destination.flushSync();
    } catch {
      // stderr already closed: nothing more can be written
    }
  });
  return {
    stream: {
      write(line: string) {
        pending.push(line);
        if (pending.length >= 64) flush();
      },
    },
    flush,
  };
}

function jsonLogger(level: LogLevel): Logger {
  const out = batchedStderr();
  const log = pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } }, out.stream);
  const at = (l: Level) => (message: string, ...details: unknown[]) => {
    if (ORDER[l] < ORDER[level]) return;
    // One plain object (the access log's case): pino takes it as is, no copy.
    const fields = details.length === 1 && isPlainObject(details[0]) ? details[0] : fieldsOf(details);
    if (fields) log[l](fields, message);
    else log[l](message);
    if (ORDER[l] >= ORDER.warn) out.flush();
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  if (level === "silent") return prettyLogger(level); // prints nothing, opens nothing
  const format = options.format ?? "auto";
  const pretty = format === "pretty" || (format === "auto" && process.stderr.isTTY === true);
  return pretty ? prettyLogger(level) : jsonLogger(level);
}
