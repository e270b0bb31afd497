// The logger: JSON lines on stderr through pino (one object per event, for a log shipper), or, when stderr is
// a terminal, the same events as readable lines. Secrets are never passed to it: the access log names the
// partner by id, never by key. Details after the message: a plain object becomes fields of the line, an Error
// its `err` (message and stack), anything else goes under `details`.
import process from "node:process";
import { Buffer } from "node:buffer";
import pino from "pino";
import type { LogLevel } from "./config.ts";

export interface Logger {
  debug(message: string, ...details: unknown[]): void;
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
  error(message: string, ...details: unknown[]): void;
  /**
   * The access log line of one request, at info: the same line as `info("request", entry)`, written by a
   * logger that has a faster way (the JSON logger's fixed template). Optional: without it the caller uses info.
   */
  access?(entry: AccessEntry): void;
}

/** One request as the access log records it (transports/http.ts): never a key, never a query string. */
export interface AccessEntry {
  request_id: string;
  /** The client's own X-Request-Id when it differs from ours (the id their support request will quote). */
  client_request_id?: string;
  /** Once the key was accepted. */
  partner_id: string | null;
  method: string;
  /** The route pattern, not the path: ids stay out of it. */
  route: string;
  status: number;
  duration_ms: number;
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
 * Where the JSON lines go: stderr, written in batches. A write to sonic-boom costs about 2 µs a line, which at
 * one access log line per request is a tenth of a fast request (me.bench). So each line is encoded at once into
 * one buffer (kept as strings until a batch is written, lines outlived the young generation and cost as much
 * again in the server), and the buffer goes out every 64 lines. Lines of info and debug wait at most 250 ms; a
 * warning or an error flushes at once, with what waited before it, so the lines that matter after a crash are
 * out. At exit everything is flushed.
 */
function batchedStderr() {
  const destination = pino.destination({ dest: 2, sync: false, contentMode: "buffer" });
  let buffer = Buffer.allocUnsafe(64 * 1024);
  let used = 0;
  let lines = 0;
  const flush = () => {
    if (used === 0) return;
    // A copy: the buffer is written into again while sonic-boom's write is under way. (Its types know only
    // its string mode.)
    (destination.write as unknown as (chunk: Uint8Array) => boolean).call(destination, Buffer.from(buffer.subarray(0, used)));
    used = 0;
    lines = 0;
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
        // At most 3 bytes a UTF-16 unit: room is made before the line is encoded.
        const most = line.length * 3;
        if (used + most > buffer.length) {
          flush();
          if (most > buffer.length) buffer = Buffer.allocUnsafe(most);
        }
        used += buffer.write(line, used, "utf8");
        if (++lines >= 64) flush();
      },
    },
    flush,
  };
}

/** Printable ASCII without `"` and `\`: written between quotes as it is. */
const PLAIN_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const quoted = (text: string): string => (PLAIN_TEXT.test(text) ? `"${text}"` : JSON.stringify(text));

/** The ISO time of the current millisecond, made once per millisecond however many lines it has. */
let isoAt = 0;
let iso = "";
function isoNow(): string {
  const now = Date.now();
  if (now !== isoAt) {
    isoAt = now;
    iso = new Date(now).toISOString();
  }
  return iso;
}

/** `,"key":` for a field name, made once per name (the access log writes the same seven names on every request). */
const keyParts = new Map<string, string>();
function keyPart(key: string): string {
  let part = keyParts.get(key);
  if (part === undefined) {
    part = `,${quoted(key)}:`;
    // Keys are the code's own names, a bounded set; a caller that made keys up would not grow this without end.
    if (keyParts.size < 1000) keyParts.set(key, part);
  }
  return part;
}

/**
 * pino's line for one object of flat fields (strings, finite numbers, booleans, null), written directly: the
 * same keys in the same order (level, time, pid, the fields, msg). The access log line is such an object, one
 * per request, and pino's general path cost 5-6 µs of it (me.bench), a twentieth of a fast request. Anything
 * else (an error, a nested object) returns undefined and goes through pino.
 */
function flatLine(level: Level, message: string, fields: Record<string, unknown>): string | undefined {
  let line = `{"level":"${level}","time":"${isoNow()}","pid":${process.pid}`;
  for (const key in fields) {
    const value = fields[key];
    let text: string;
    if (typeof value === "string") text = quoted(value);
    else if (typeof value === "number" && Number.isFinite(value)) text = String(value);
    else if (typeof value === "boolean" || value === null) text = String(value);
    else if (value === undefined) continue;
    else return undefined;
    line += keyPart(key) + text;
  }
  return `${line},"msg":${quoted(message)}}\n`;
}

/**
 * The access log line, written from a fixed template: flatLine's walk over the fields (a loop, a type test and
 * a name lookup for each) was half of the line's 2 µs, and there is one line per request (me.bench). The same
 * keys in the same order as `info("request", entry)` would write; the test compares the two.
 */
function accessLine(entry: AccessEntry): string {
  const client = entry.client_request_id === undefined ? "" : `,"client_request_id":${quoted(entry.client_request_id)}`;
  const partner = entry.partner_id === null ? "null" : quoted(entry.partner_id);
  return `{"level":"info","time":"${isoNow()}","pid":${process.pid},"request_id":${quoted(entry.request_id)}${client},"partner_id":${partner},"method":${quoted(entry.method)},"route":${quoted(entry.route)},"status":${entry.status},"duration_ms":${entry.duration_ms},"msg":"request"}\n`;
}

function jsonLogger(level: LogLevel): Logger {
  const out = batchedStderr();
  const log = pino({ level, base: { pid: process.pid }, timestamp: () => `,"time":"${isoNow()}"`, formatters: { level: (label) => ({ level: label }) } }, out.stream);
  const at = (l: Level) => (message: string, ...details: unknown[]) => {
    if (ORDER[l] < ORDER[level]) return;
    // One plain object (the access log's case): written directly when its fields are flat, else pino takes it
    // as is, no copy.
    const single = details.length === 1 && isPlainObject(details[0]) ? details[0] : undefined;
    const line = single ? flatLine(l, message, single) : undefined;
    if (line !== undefined) out.stream.write(line);
    else {
      const fields = single ?? fieldsOf(details);
      if (fields) log[l](fields, message);
      else log[l](message);
    }
    if (ORDER[l] >= ORDER.warn) out.flush();
  };
  const logs = ORDER.info >= ORDER[level];
  const access = (entry: AccessEntry) => {
    if (logs) out.stream.write(accessLine(entry));
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), access };
}

export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  if (level === "silent") return prettyLogger(level); // prints nothing, opens nothing
  const format = options.format ?? "auto";
  const pretty = format === "pretty" || (format === "auto" && process.stderr.isTTY === true);
  return pretty ? prettyLogger(level) : jsonLogger(level);
}
