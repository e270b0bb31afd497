// JSON object bodies (and a multipart form's `parameters` field): bytes in, the object or the spec's 400 out.
// Large bodies are parsed off the event loop: from JSON_THREAD_BYTES on, decoding, the shape check and
// JSON.parse run in a worker thread of lib/threads.ts, and only the object comes back (structured-cloned).
// Smaller ones are parsed inline, where a thread's round trip would cost more than the parse. Either way the
// answer is the same object or the same 400 text.
//
// The shape check counts values as well as depth: past MAX_JSON_VALUES the body is refused before it is
// parsed. Without it a body within an area's byte cap (remove-metadata's 28 MB: 13 million `0,`) is parsed
// into millions of values that the thread's answer must rebuild on the event loop and the kernel's input
// screen then walks one by one (16 s of a stalled /healthz and 2.2 GB measured); with it, what comes back
// is small whatever the body's size, and a long text (an image's base64) is one value.

import { MAX_INPUT_DEPTH } from "../../core/hostile-input.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { inThread } from "../../lib/threads.ts";

/**
 * From this size on a body is parsed in a worker thread. JSON.parse reads about 30-60 MB/s of small values
 * on this machine's cores: 1 MB is 15-30 ms of the event loop, about a thread's round trip.
 */
export const JSON_THREAD_BYTES = 1_000_000;

/**
 * Array elements and object members a body may hold, all levels together. The largest body of the spec is a
 * caption edit: 4000 chunks of 3 fields, 16,001 values; three times that. The kernel's input screen walks
 * each value once (about a microsecond each), so this also bounds that walk to some 50 ms.
 */
export const MAX_JSON_VALUES = 50_000;

export type JsonShape = "ok" | "tooDeep" | "tooMany";

/**
 * Whether arrays and objects in a JSON text nest deeper than `maxDepth` or hold more than `maxValues`
 * elements and members, counted without parsing (strings are skipped whole), so a 20,000-deep or
 * 13-million-value body is refused before anything builds or walks it. Text that is not JSON passes here;
 * JSON.parse says so.
 */
export function jsonShape(text: string, maxDepth: number, maxValues: number = Infinity): JsonShape {
  let depth = 0;
  let values = 0;
  // Just after an opening bracket: the next thing that is not a closing one is the container's first value.
  let opened = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (opened && c !== 0x5d && c !== 0x7d && ++values > maxValues) return "tooMany";
    opened = false;
    if (c === 0x22) {
      // Jump to the closing quote: the next one not escaped by an odd run of backslashes.
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return "ok"; // unterminated: not JSON, JSON.parse says so
        let backslashes = 0;
        while (text.charCodeAt(j - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        j++;
      }
      i = j;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return "tooDeep";
      opened = true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === 0x2c) {
      if (++values > maxValues) return "tooMany";
    }
  }
  return "ok";
}

/** Whether a JSON text nests deeper than `max` (jsonShape without a count). */
export const jsonNestsDeeper = (text: string, max: number): boolean => jsonShape(text, max) === "tooDeep";

// Fatal: bytes that are not UTF-8 are not JSON (RFC 8259), rather than text with U+FFFD in their place.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

export type JsonObjectResult = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/**
 * A JSON object body as a result rather than a throw (what a worker thread answers: an ApiError would reach
 * the caller as a plain message). An empty body is `{}`; anything else that is not an object is the spec's
 * "Request body must be JSON"; a body past the depth or value cap is refused before it is parsed.
 */
export function jsonObjectResult(bytes: Uint8Array): JsonObjectResult {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { ok: false, error: KERNEL_ERRORS.bodyNotJson };
  }
  if (text.trim() === "") return { ok: true, value: {} };
  const shape = jsonShape(text, MAX_INPUT_DEPTH, MAX_JSON_VALUES);
  if (shape === "tooDeep") return { ok: false, error: KERNEL_ERRORS.tooDeep(MAX_INPUT_DEPTH) };
  if (shape === "tooMany") return { ok: false, error: KERNEL_ERRORS.tooManyValues(MAX_JSON_VALUES) };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: KERNEL_ERRORS.bodyNotJson };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return { ok: false, error: KERNEL_ERRORS.bodyNotJson };
  return { ok: true, value: value as Record<string, unknown> };
}

const unwrap = (result: JsonObjectResult): Record<string, unknown> => {
  if (!result.ok) throw new ApiError(400, result.error);
  return result.value;
};

/** The JSON object of `bytes` parsed here and now (small bodies, tests); throws the 400. */
export const parseJsonObject = (bytes: Uint8Array): Record<string, unknown> => unwrap(jsonObjectResult(bytes));

const SELF = new URL(import.meta.url);

/** The JSON object of `bytes`, parsed in a worker thread from JSON_THREAD_BYTES on; throws the 400. */
export async function readJsonObject(bytes: Uint8Array, signal?: AbortSignal): Promise<Record<string, unknown>> {
  if (bytes.byteLength < JSON_THREAD_BYTES) return parseJsonObject(bytes);
  return unwrap(await inThread<JsonObjectResult>(SELF, "jsonObjectResult", [bytes], signal));
}
