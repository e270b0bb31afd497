// The logger: JSON lines on stderr through pino (one object per event, for a log shipper), or, when stderr is
// a terminal, the same events as readable lines. Secrets are never passed to it: the access log names the
// partner by id, never by key. Details after the message: a plain object becomes fields of the line, an Error
// its `err` (message and stack), anything else goes under `details`.

import { Buffer } from "node:buffer";
import { writeSync } from "node:fs";
import process from "node:process";
import pino from "pino";
import type { LogLevel } from "./config.ts";

declare module "sonic-boom" {
  interface SonicBoom {
    /** With `contentMode: "buffer"` (batchedStderr below) a write takes bytes; sonic-boom's typings know only its string mode. */
    write(chunk: Uint8Array): boolean;
  }
}

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

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype;

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
  const at =
    (l: Level) =>
    (message: string, ...details: unknown[]) => {
      if (ORDER[l] < ORDER[level]) return;
      console.error(`${new Date().toISOString()} ${l.toUpperCase()} ${message}`, ...details);
    };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * Where the JSON lines go: stderr, written in batches. Each line is encoded at once into one buffer (kept as
 * strings until a batch is written, lines outlived the young generation and cost as much again in the
 * server), and the buffer goes out when it is nearly full: each write to sonic-boom is a trip through the
 * thread pool, which a profile of the server under load put at a quarter of what the HTTP manners cost when a
 * batch was 64 lines (me.bench); a batch is now several hundred. Lines of info and debug wait at most 250 ms;
 * a warning or an error flushes at once, with what waited before it, so the lines that matter after a crash
 * are out. At exit everything is flushed.
 */
const BATCH_BYTES = 256 * 1024;
/** A batch goes out once this much of it is used: with room left, a line rarely has to wait for a flush. */
const FLUSH_AT = BATCH_BYTES - 32 * 1024;

function batchedStderr() {
  const destination = pino.destination({ dest: 2, sync: false, contentMode: "buffer", maxWrite: BATCH_BYTES });
  let buffer = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  const flush = () => {
    if (used === 0) return;
    // A copy: the buffer is written into again while sonic-boom's write is under way.
    destination.write(Buffer.from(buffer.subarray(0, used)));
    used = 0;
  };
  setInterval(flush, 250).unref();
  // At exit the batch is written synchronously. (flush() would start an asynchronous write that the exiting
  // process may never finish: on a loaded machine the last lines of a short-lived process were lost.) What
  // sonic-boom still holds goes first, so the lines keep their order.
  process.once("exit", () => {
    try {
      destination.flushSync();
      let rest = buffer.subarray(0, used);
      used = 0;
      for (let tries = 0; rest.length > 0 && tries < 1000; tries++) {
        try {
          rest = rest.subarray(writeSync(2, rest));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err; // a full non-blocking pipe: again
        }
      }
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
        if (used >= FLUSH_AT) flush();
      },
    },
    /**
     * The access log line of `entry` written into the batch byte by byte, no string made: the same bytes as
     * `accessLine`, for the line of every request (a profile of the server under load put building the line
     * as a string and encoding it at most of what the access log cost). False, nothing written, when a field
     * is not plain text (accessLine then escapes it).
     */
    access(entry: AccessEntry): boolean {
      const client = entry.client_request_id;
      const partner = entry.partner_id;
      // One byte a character: plain text is ASCII, and anything else is refused below.
      const most =
        ACCESS_FIXED_BYTES +
        entry.request_id.length +
        (client?.length ?? 0) +
        (partner?.length ?? 0) +
        entry.method.length +
        entry.route.length +
        48;
      if (used + most > buffer.length) {
        flush();
        if (most > buffer.length) return false;
      }
      const b = buffer;
      let at = putAscii(b, used, '{"level":"info","time":"');
      at = putTime(b, at);
      at = putAscii(b, at, pidPart);
      at = putPlain(b, at, entry.request_id);
      if (at >= 0 && client !== undefined) at = putPlain(b, putAscii(b, at, ',"client_request_id":'), client);
      if (at < 0) return false;
      at = putAscii(b, at, ',"partner_id":');
      at = partner === null ? putAscii(b, at, "null") : putPlain(b, at, partner);
      if (at >= 0) at = putPlain(b, putAscii(b, at, ',"method":'), entry.method);
      if (at >= 0) at = putPlain(b, putAscii(b, at, ',"route":'), entry.route);
      if (at < 0) return false;
      if (!Number.isFinite(entry.status) || !Number.isFinite(entry.duration_ms)) return false;
      at = putAscii(b, at, ',"status":');
      at = putNumber(b, at, entry.status);
      at = putAscii(b, at, ',"duration_ms":');
      at = putNumber(b, at, entry.duration_ms);
      used = putAscii(b, at, ',"msg":"request"}\n');
      if (used >= FLUSH_AT) flush();
      return true;
    },
    flush,
  };
}

/** The access line's fixed text, with the time and the two numbers, counted generously (see `access`). */
const ACCESS_FIXED_BYTES = 256;
const pidPart = `","pid":${process.pid},"request_id":`;

/** Copies text known to be ASCII (the line's own fixed text, a number) into `into` at `at`; the new end. */
function putAscii(into: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) into[at++] = text.charCodeAt(i);
  return at;
}

/**
 * Plain text is printable ASCII without `"` and `\`: written between quotes as it is. Told by a loop over its
 * characters rather than a regular expression: the access log tests four short strings a request, and the
 * call into the regular expression engine was most of what that cost (a profile of the server under load).
 */
const plainChar = (c: number): boolean => c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c;

function plain(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!plainChar(text.charCodeAt(i))) return false;
  return true;
}

/** `"text"` into `into` at `at` when the text is plain: the new end; else -1. */
function putPlain(into: Buffer, at: number, text: string): number {
  into[at++] = 0x22;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!plainChar(c)) return -1;
    into[at++] = c;
  }
  into[at++] = 0x22;
  return at;
}
const quoted = (text: string): string => (plain(text) ? `"${text}"` : JSON.stringify(text));

/**
 * A finite number into `into` at `at`, the same characters as String(n): a whole number or one of tenths
 * (a status, a duration rounded to 0.1 ms: the access log's two numbers) digit by digit, anything else
 * through String. The new end.
 */
function putNumber(into: Buffer, at: number, n: number): number {
  const tenths = Math.round(n * 10);
  // tenths / 10 === n: n is the double nearest to that decimal, whose shortest form String gives is the
  // decimal itself (fewer than 16 digits).
  if (!(tenths >= 0 && tenths < 2 ** 31 && tenths / 10 === n)) return putAscii(into, at, String(n));
  const whole = (tenths / 10) | 0;
  let end = at;
  for (let rest = whole; ; rest = (rest / 10) | 0) {
    end++;
    if (rest < 10) break;
  }
  for (let i = end, rest = whole; i > at; rest = (rest / 10) | 0) into[--i] = 0x30 + (rest % 10);
  const tenth = tenths % 10;
  if (tenth === 0) return end;
  into[end] = 0x2e;
  into[end + 1] = 0x30 + tenth;
  return end + 2;
}

/**
 * The ISO time of the current millisecond: the date and time to the second made once a second, the
 * milliseconds from a table (toISOString once a millisecond was a twentieth of the access log line's cost).
 */
const MILLIS = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, "0")}Z`);
let secondAt = -1;
let secondPrefix = "";
function isoNow(): string {
  const ms = prefixNow();
  return secondPrefix + MILLIS[ms]!;
}

/** Makes secondPrefix the current second's; the current millisecond. */
function prefixNow(): number {
  const now = Date.now();
  const ms = now % 1000;
  const second = now - ms;
  if (second !== secondAt) {
    secondAt = second;
    // "2026-11-27T17:40:05." of "2026-11-27T17:40:05.000Z"
    secondPrefix = new Date(second).toISOString().slice(0, -4);
  }
  return ms;
}

/** isoNow's characters into `into` at `at` (no string joined for them); the new end. */
function putTime(into: Buffer, at: number): number {
  const ms = prefixNow();
  return putAscii(into, putAscii(into, at, secondPrefix), MILLIS[ms]!);
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

/** A number as JSON writes it: null when it is not finite. */
const finite = (n: number): string => (Number.isFinite(n) ? String(n) : "null");

/**
 * The access log line as a string, from a fixed template (flatLine's walk over the fields, a type test and a
 * name lookup for each, was half of the line's cost): the same keys in the same order as `info("request",
 * entry)` would write; the test compares the two. Used when a field needs escaping; otherwise the batch's
 * `access` writes the same bytes without making a string.
 */
function accessLine(entry: AccessEntry): string {
  const client = entry.client_request_id === undefined ? "" : `,"client_request_id":${quoted(entry.client_request_id)}`;
  const partner = entry.partner_id === null ? "null" : quoted(entry.partner_id);
  return `{"level":"info","time":"${isoNow()}","pid":${process.pid},"request_id":${quoted(entry.request_id)}${client},"partner_id":${partner},"method":${quoted(entry.method)},"route":${quoted(entry.route)},"status":${finite(entry.status)},"duration_ms":${finite(entry.duration_ms)},"msg":"request"}\n`;
}

function jsonLogger(level: LogLevel): Logger {
  const out = batchedStderr();
  const log = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: () => `,"time":"${isoNow()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    out.stream,
  );
  const at =
    (l: Level) =>
    (message: string, ...details: unknown[]) => {
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
    if (logs && !out.access(entry)) out.stream.write(accessLine(entry));
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), access };
}

export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  if (level === "silent") return prettyLogger(level); // prints nothing, opens nothing
  const format = options.format ?? "auto";
  const pretty = format === "pretty" || (format === "auto" && process.stderr.isTTY === true);
  return pretty ? prettyLogger(level) : jsonLogger(level);
}
