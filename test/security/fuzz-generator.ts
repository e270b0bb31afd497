// Hostile requests generated from schema/openapi.json, for test/security/fuzz.test.ts (issue 14 item 17).
//
// Every operation of the partner API, and for each: every body field (nested objects and array items too)
// set to every hostile value below, on top of a baseline body that is otherwise valid (so a bad field is
// met where it is read, not short-circuited by a missing required one); whole bodies that are not an object
// (deep nesting, prototype keys at the top level, invalid UTF-8, truncated JSON); wrong content types;
// every query and path parameter set to hostile text; and, for operations that declare a multipart form,
// broken forms (missing or doubled parts, hostile file names, parameters that are not JSON).
//
// Cases are descriptors: a body is built only when the case runs (`build()`), so thousands of cases that
// each carry a megabyte string cost nothing until they are sent. The order and the sample are seeded, so a
// run is repeatable from its seed (printed by the test).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

export const PARTNER_PREFIX = "/api/v1/partner";

/** A request ready for `app.fetch` (the runner adds the key and the User-Agent). */
export interface FuzzRequest {
  method: string;
  /** Absolute path with its query string. */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface FuzzCase {
  /** Stable, readable label: `POST /generate-video body.duration = 9007199254740993`. */
  id: string;
  /** `METHOD /path` as the openapi document names it, without the partner prefix. */
  op: string;
  /** The kind of hostility, for stratified sampling and the summary. */
  cls: string;
  /**
   * Set when a success would be wrong as well: the rule that refuses this request (a NUL or an
   * ill-formed string is a 400, items 12-13; a body type the operation does not take is a 415, item 16).
   */
  mustRefuse?: string;
  build(): FuzzRequest;
}

/** What only a running kernel knows: real ids for path parameters and valid values for baseline bodies. */
export interface FuzzFixtures {
  /** Path parameter name → real ids of the fuzzing account (`job_id`, `id`, `download_id`, `idx`). */
  realIds: Record<string, string[]>;
  /** Ids of this account that belong to another kind of job (a video id where an image id is expected). */
  otherIds: string[];
  /** `METHOD /path` → fields merged over the schema's sample body (the values a valid request needs). */
  baselines: Record<string, Record<string, unknown>>;
  /** Bytes of a real file for multipart file parts (`audio`), with its name. */
  uploads: Record<string, { bytes: Uint8Array; filename: string; contentType: string }>;
}

// ---------------------------------------------------------------------------------------------------------
// Seeded randomness (mulberry32): the same seed gives the same sample and the same random ids.

export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: T[], rnd: () => number): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function randomHex(rnd: () => number, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += Math.floor(rnd() * 16).toString(16);
  return s;
}

// ---------------------------------------------------------------------------------------------------------
// Hostile values, as raw JSON text (so numbers JSON.stringify cannot write, like 9007199254740993 or 1e309,
// reach the server's parser as sent). Big ones are built on demand.

const DEPTH = 20_000;
const HUGE = 990_000; // just under the default 1,000,000-byte body cap, so the string is parsed, not refused

type Raw = string | (() => string);
interface Hostile {
  label: string;
  cls: string;
  raw: Raw;
}

const h = (cls: string, label: string, raw: Raw): Hostile => ({ cls, label, raw });
const str = (s: string) => JSON.stringify(s);
/** Values of `cls` whose label is their JSON text. */
const asIs = (cls: string, ...raws: string[]): Hostile[] => raws.map((raw) => h(cls, raw, raw));
const rawOf = (r: Raw) => (typeof r === "function" ? r() : r);

export const deepArray = (n = DEPTH) => "[".repeat(n) + "]".repeat(n);
export const deepObject = (n = DEPTH) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

export const HOSTILE_VALUES: readonly Hostile[] = [
  // Wrong types
  ...asIs("type", "null", "true", "false", "0", "1.5", '""', '"fuzz"', '"10"'),
  ...asIs("type", "[]", "{}", '["a"]', '[{"a":1}]', '{"a":1}'),
  // Text the database or a formatter chokes on
  h("nul", "NUL", str("\u0000")),
  h("nul", "a NUL b", str("a\u0000b")),
  h("nul", "NUL-led URL", str("\u0000https://example.com/a.png")),
  h("control", "BEL and ESC", str("\u0007\u001b[2J\u001b]0;x\u0007")),
  h("control", "RTL override", str("abc\u202edcba")),
  h("surrogate", "lone high surrogate", '"\\ud800"'),
  h("surrogate", "lone low surrogate", '"\\udfff"'),
  h("surrogate", "surrogate inside text", '"a\\ud800b"'),
  h("surrogate", "reversed pair", '"\\udc00\\ud800"'),
  h("text", "path traversal", str("../../../../etc/passwd")),
  h("text", "file URL", str("file:///etc/passwd")),
  h("text", "loopback URL", str("https://127.0.0.1/x.png")),
  h("text", "IPv6 loopback URL", str("http://[::1]:80/x")),
  h("text", "javascript URL", str("javascript:alert(1)")),
  h("text", "data URL", str("data:image/png;base64,AAAA")),
  h("text", "percent NUL", str("%00")),
  h("text", "whitespace", str(" \t\r\n ")),
  // Numbers
  ...asIs("number", "9007199254740993", "-9007199254740993", "1e308", "-1e308"),
  h("number", "1e309 (Infinity)", "1e309"),
  ...asIs("number", "5e-324", "-1", "-0", "2147483648", "1e21", "99999999999999999999999999999"),
  // Size and depth
  h("huge", "1 MB string", () => str("A".repeat(HUGE))),
  h("huge", "1 MB of multibyte text", () => str("\u00e9".repeat(HUGE / 2 - 8))),
  h("huge", "100k-item array", () => `[${Array(100_000).fill("1").join(",")}]`),
  h("deep", "array 20,000 deep", () => deepArray()),
  h("deep", "object 20,000 deep", () => deepObject()),
  // Prototype keys and objects that fake being strings or numbers
  h("proto", "__proto__ object", '{"__proto__":{"polluted":"yes","isAdmin":true}}'),
  h("proto", "constructor.prototype", '{"constructor":{"prototype":{"polluted":"yes"}}}'),
  ...asIs("proto", '"__proto__"', '"constructor"', '{"toString":1}', '{"toString":1,"valueOf":1}'),
  h("proto", '{"length":1e9}', '{"length":1000000000}'),
  ...asIs("proto", '["__proto__"]'),
];

/** Query and path parameter text (already URL-encoded where it says so). */
const PARAM_VALUES: ReadonlyArray<[cls: string, label: string, encoded: string | (() => string)]> = [
  ["param", "empty", ""],
  ["param", "-1", "-1"],
  ["param", "0", "0"],
  ["param", "1.5", "1.5"],
  ["param", "abc", "abc"],
  ["number", "9007199254740993", "9007199254740993"],
  ["number", "1e308", "1e308"],
  ["number", "1e309", "1e309"],
  ["number", "99999999999999999999999999999", "99999999999999999999999999999"],
  ["param", "NaN", "NaN"],
  ["param", "Infinity", "Infinity"],
  ["param", "0x10", "0x10"],
  ["nul", "%00", "%00"],
  ["nul", "a%00b", "a%00b"],
  ["surrogate", "invalid UTF-8 (encoded lone surrogate)", "%ED%A0%80"],
  ["surrogate", "%uD800", "%uD800"],
  ["param", "bare %", "%"],
  ["param", "%ZZ", "%ZZ"],
  ["param", "traversal", "..%2F..%2F..%2Fetc%2Fpasswd"],
  ["proto", "__proto__", "__proto__"],
  ["proto", "constructor", "constructor"],
  ["proto", "toString", "toString"],
  ["param", "far-future date", "%2B275760-09-13T00%3A00%3A00.001Z"],
  ["param", "month 13", "2026-13-45T25%3A61%3A61Z"],
  ["param", "year 0", "0000-00-00"],
  ["huge", "100 kB", () => "A".repeat(100_000)],
];

// ---------------------------------------------------------------------------------------------------------
// The openapi document

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minItems?: number;
  format?: string;
  contentMediaType?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

interface OpenApiParameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: JsonSchema;
}

interface OpenApiOperation {
  operationId?: string;
  parameters?: OpenApiParameter[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

export function loadOpenApi(): OpenApiDocument {
  return JSON.parse(readFileSync(resolve(import.meta.dirname ?? "test/security", "../../schema/openapi.json"), "utf8"));
}

function typeOf(s: JsonSchema): string | undefined {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t) return t;
  const alt = s.anyOf ?? s.oneOf;
  return alt ? alt.map(typeOf).find((x) => x && x !== "null") : undefined;
}

/** A plausible valid value for a schema: its default, first enum value, or a neutral value of its type. */
function sampleOf(s: JsonSchema): unknown {
  if (s.default !== undefined) return s.default;
  if (s.enum?.length) return s.enum[0];
  switch (typeOf(s)) {
    case "string":
      return s.format === "uri" ? "https://fuzz.invalid/file" : "fuzz";
    case "integer":
    case "number":
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => sampleOf(s.items ?? {}));
    case "object": {
      const out: Record<string, unknown> = {};
      for (const name of s.required ?? []) out[name] = sampleOf(s.properties?.[name] ?? {});
      return out;
    }
    default:
      return "fuzz";
  }
}

type FieldPath = Array<string | number>;

/** Every field of a body schema as a path: top-level properties, their nested properties and first items. */
function fieldPaths(s: JsonSchema, prefix: FieldPath = [], depth = 0): FieldPath[] {
  const out: FieldPath[] = [];
  if (depth > 3) return out;
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    const here = [...prefix, name];
    out.push(here);
    const t = typeOf(prop);
    if (t === "object" && prop.properties) out.push(...fieldPaths(prop, here, depth + 1));
    if (t === "array" && prop.items) {
      out.push([...here, 0]);
      if (typeOf(prop.items) === "object") out.push(...fieldPaths(prop.items, [...here, 0], depth + 1));
    }
  }
  return out;
}

const label = (path: FieldPath) =>
  path
    .map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`))
    .join("")
    .slice(1);

/** `base` with `path` set to a marker string, so the marker's JSON can be replaced by raw JSON text. */
const MARKER = "__fuzz_slot_5e1f__";
function withMarker(base: Record<string, unknown>, path: FieldPath, schema: JsonSchema): Record<string, unknown> {
  const root: any = structuredClone(base);
  let node = root;
  let s: JsonSchema | undefined = schema;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    s = typeof key === "number" ? s?.items : s?.properties?.[key];
    if (node[key] === undefined || node[key] === null || typeof node[key] !== "object") {
      node[key] = typeof path[i + 1] === "number" ? [] : s ? structuredClone(sampleOf(s)) : {};
      if (typeof node[key] !== "object" || node[key] === null) node[key] = typeof path[i + 1] === "number" ? [] : {};
    }
    node = node[key];
  }
  node[path[path.length - 1]!] = MARKER;
  return root;
}

function bodyWith(base: Record<string, unknown>, path: FieldPath, schema: JsonSchema, raw: string): string {
  return JSON.stringify(withMarker(base, path, schema)).replace(JSON.stringify(MARKER), () => raw);
}

// ---------------------------------------------------------------------------------------------------------
// Multipart forms, written by hand so a part can carry what FormData would refuse or fix (NUL in a name,
// no file name, a broken boundary).

export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  data: string | Uint8Array;
}

export function multipartBody(parts: Part[], boundary = "fuzzboundary5e1f"): { body: Uint8Array; contentType: string } {
  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += "\r\n";
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(
      enc.encode(`${head}\r\n`),
      typeof p.data === "string" ? enc.encode(p.data) : p.data,
      enc.encode("\r\n"),
    );
  }
  chunks.push(enc.encode(`--${boundary}--\r\n`));
  const body = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.byteLength;
  }
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

// ---------------------------------------------------------------------------------------------------------
// Generation

const JSON_TYPE = "application/json";
const REFUSE_NUL = "a NUL is refused with a 400 (issue 14 item 12)";
const REFUSE_SURROGATE = "ill-formed Unicode is refused with a 400 (issue 14 item 13)";
const REFUSE_TYPE = "only application/json and the declared multipart form are accepted: 415 (issue 14 item 16)";
const refusalOf = (v: Hostile) => (v.cls === "nul" ? REFUSE_NUL : v.cls === "surrogate" ? REFUSE_SURROGATE : undefined);

export function generateCases(doc: OpenApiDocument, fx: FuzzFixtures, seed: number): FuzzCase[] {
  const rnd = seededRandom(seed ^ 0x9e3779b9);
  const cases: FuzzCase[] = [];
  let idem = 0;
  const freshKey = () => `fuzz-${seed.toString(16)}-${(idem++).toString(36).padStart(6, "0")}`;

  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [methodLower, spec] of Object.entries(methods)) {
      const method = methodLower.toUpperCase();
      if (!["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method)) continue;
      const short = template.startsWith(PARTNER_PREFIX) ? template.slice(PARTNER_PREFIX.length) : template;
      const op = `${method} ${short}`;
      const params = spec.parameters ?? [];
      const pathParams = params.filter((p) => p.in === "path");
      const queryParams = params.filter((p) => p.in === "query");
      const idemHeader = params.find((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");

      // A valid value for each path parameter: a real id of the account when there is one.
      const validPathValue = (name: string) =>
        fx.realIds[name]?.[0] ?? (name === "idx" ? "0" : `fuzz_${randomHex(rnd, 12)}`);
      const fillPath = (over: Record<string, string> = {}) =>
        template.replace(/\{([^}]+)\}/g, (_, name: string) =>
          name in over ? over[name]! : encodeURIComponent(validPathValue(name)),
        );
      const headersFor = (extra: Record<string, string> = {}) => {
        const headers: Record<string, string> = {};
        if (idemHeader) headers["idempotency-key"] = freshKey();
        return { ...headers, ...extra };
      };
      const push = (cls: string, what: string, build: () => FuzzRequest, mustRefuse?: string) =>
        cases.push({ id: `${op} ${what}`, op, cls, build, ...(mustRefuse ? { mustRefuse } : {}) });

      // Path parameters: real ids (of this kind and of another), a random id, hostile text.
      for (const p of pathParams) {
        const values: Array<[string, string, string]> = [];
        for (const id of fx.realIds[p.name] ?? []) values.push(["path", `real ${p.name}`, encodeURIComponent(id)]);
        for (const id of fx.otherIds.slice(0, 2))
          values.push(["path", "another kind's real id", encodeURIComponent(id)]);
        values.push(["path", "random id", `job_${randomHex(rnd, 8)}`], ["path", "random hex", randomHex(rnd, 32)]);
        for (const [cls, lbl, enc] of PARAM_VALUES) values.push([cls, lbl, typeof enc === "function" ? enc() : enc]);
        for (const [cls, lbl, enc] of values) {
          push(
            cls,
            `path ${p.name} = ${lbl}`,
            () => ({ method, path: fillPath({ [p.name]: enc }), headers: headersFor() }),
            cls === "nul" ? REFUSE_NUL : undefined,
          );
        }
      }

      // Query parameters: each one hostile, the others absent; repeated and prototype names.
      for (const q of queryParams) {
        for (const [cls, lbl, enc] of PARAM_VALUES) {
          const text = () => (typeof enc === "function" ? enc() : enc);
          push(
            cls,
            `query ${q.name} = ${lbl}`,
            () => ({ method, path: `${fillPath()}?${q.name}=${text()}`, headers: headersFor() }),
            cls === "nul" ? REFUSE_NUL : undefined,
          );
        }
        push("param", `query ${q.name} repeated`, () => ({
          method,
          path: `${fillPath()}?${q.name}=1&${q.name}=-1&${q.name}=abc`,
          headers: headersFor(),
        }));
        push("param", `query ${q.name}[] bracket form`, () => ({
          method,
          path: `${fillPath()}?${q.name}[]=1&${q.name}[a]=2`,
          headers: headersFor(),
        }));
      }
      if (method === "GET") {
        push("proto", "query __proto__ and constructor names", () => ({
          method,
          path: `${fillPath()}?__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__=1`,
          headers: headersFor(),
        }));
      }

      // Header parameters (the Idempotency-Key): missing, malformed, oversized. Values a Request cannot
      // carry (NUL, line breaks) never reach a server over HTTP either, so they are left out.
      if (idemHeader) {
        const values: Array<[string, string | undefined]> = [
          ["missing", undefined],
          ["empty", ""],
          ["too short", "abc"],
          ["101 characters", "a".repeat(101)],
          ["spaces", "a b c d e f g h"],
          ["traversal", "../../../etc/passwd"],
          ["latin-1", "\u00ff".repeat(12)],
          ["10 kB", "k".repeat(10_000)],
          ["__proto__", "__proto__"],
        ];
        for (const [lbl, value] of values) {
          push("header", `header ${idemHeader.name} = ${lbl}`, () => {
            const baseline = JSON.stringify(baselineOf(op, spec.requestBody?.content[JSON_TYPE]?.schema ?? {}, fx));
            const headers: Record<string, string> = { "content-type": JSON_TYPE };
            if (value !== undefined) headers[idemHeader.name] = value;
            return { method, path: fillPath(), headers, body: baseline };
          });
        }
      }

      const content = spec.requestBody?.content ?? {};
      const jsonSchema = content[JSON_TYPE]?.schema;
      const formSchema = content["multipart/form-data"]?.schema;
      if (!jsonSchema && !formSchema) continue;
      const schema = jsonSchema ?? {};
      const base = () => baselineOf(op, schema, fx);
      const jsonReq = (body: string | Uint8Array, contentType: string | null = JSON_TYPE): FuzzRequest => ({
        method,
        path: fillPath(),
        headers: headersFor(contentType === null ? {} : { "content-type": contentType }),
        body: contentType === null && typeof body === "string" ? new TextEncoder().encode(body) : body,
      });

      if (jsonSchema) {
        // Every field, every hostile value.
        for (const path of fieldPaths(jsonSchema)) {
          for (const v of HOSTILE_VALUES) {
            push(
              v.cls,
              `body.${label(path)} = ${v.label}`,
              () => jsonReq(bodyWith(base(), path, jsonSchema, rawOf(v.raw))),
              refusalOf(v),
            );
          }
        }
        // Fields the schema does not have, and prototype keys at the top level.
        const extra: Array<[string, string, () => string]> = [
          [
            "proto",
            "top-level __proto__",
            () => JSON.stringify(base()).replace(/^\{/, '{"__proto__":{"polluted":"yes","credits":0},'),
          ],
          [
            "proto",
            "top-level constructor.prototype",
            () => JSON.stringify(base()).replace(/^\{/, '{"constructor":{"prototype":{"polluted":"yes"}},'),
          ],
          [
            "proto",
            "top-level toString/valueOf/hasOwnProperty",
            () => JSON.stringify(base()).replace(/^\{/, '{"toString":1,"valueOf":1,"hasOwnProperty":1,'),
          ],
          ["type", "unknown field", () => JSON.stringify({ ...base(), fuzz_unknown: { deep: [1, 2, 3] } })],
          [
            "type",
            "duplicate keys, hostile last",
            () => {
              const b = base();
              const first = Object.keys(b)[0] ?? "x";
              return JSON.stringify(b).replace(
                /\}$/,
                `${Object.keys(b).length ? "," : ""}${JSON.stringify(first)}:"\\u0000\\ud800"}`,
              );
            },
          ],
          [
            "huge",
            "10,000 unknown fields",
            () =>
              JSON.stringify({
                ...base(),
                ...Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, i])),
              }),
          ],
        ];
        for (const [cls, lbl, text] of extra) push(cls, `body ${lbl}`, () => jsonReq(text()));

        // Bodies that are not an object, or not JSON at all.
        const wholes: Array<[string, string, () => string | Uint8Array]> = [
          ["body", "empty", () => ""],
          ["body", "null", () => "null"],
          ["body", "array", () => "[]"],
          ["body", "array of the baseline", () => JSON.stringify([base()])],
          ["body", "number", () => "9007199254740993"],
          ["body", "string", () => '"\\u0000"'],
          ["body", "truncated", () => JSON.stringify(base()).slice(0, -1)],
          ["body", "trailing garbage", () => `${JSON.stringify(base())}}}`],
          ["body", "BOM then JSON", () => `\ufeff${JSON.stringify(base())}`],
          ["deep", "array 20,000 deep", () => deepArray()],
          ["deep", "object 20,000 deep", () => deepObject()],
          [
            "deep",
            "baseline with a 20,000-deep extra field",
            () => JSON.stringify(base()).replace(/^\{/, `{"deep":${deepArray()},`),
          ],
          ["huge", "2 MB body", () => JSON.stringify({ ...base(), pad: "A".repeat(2_000_000) })],
          ["surrogate", "invalid UTF-8 in a string", () => invalidUtf8Body(base())],
          [
            "nul",
            "raw NUL bytes in JSON",
            () => new TextEncoder().encode(JSON.stringify(base()).replace(/^\{/, '{"a\u0000":"\u0000",')),
          ],
        ];
        for (const [cls, lbl, body] of wholes)
          push(cls, `whole body ${lbl}`, () => jsonReq(body()), cls === "nul" ? REFUSE_NUL : undefined);
      }

      // Content types: a valid body under a type the operation does not take (and none at all).
      // [label, Content-Type, body, whether the rule refuses it (item 16: only JSON and the declared form)]
      const types: Array<[string, string | null, () => string, boolean?]> = [
        ["no content type", null, () => JSON.stringify(base()), true],
        ["text/plain", "text/plain", () => JSON.stringify(base()), true],
        ["text/plain;charset=UTF-8", "text/plain;charset=UTF-8", () => JSON.stringify(base()), true],
        ["form-urlencoded (JSON text)", "application/x-www-form-urlencoded", () => JSON.stringify(base()), true],
        [
          "form-urlencoded (form)",
          "application/x-www-form-urlencoded",
          () => new URLSearchParams(flatStrings(base())).toString(),
          true,
        ],
        [
          "application/xml",
          "application/xml",
          () => `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>`,
          true,
        ],
        ["multipart without boundary", "multipart/form-data", () => JSON.stringify(base()), true],
        ["application/json-patch+json", "application/json-patch+json", () => JSON.stringify(base())],
        ["application/jsonx", "application/jsonx", () => JSON.stringify(base()), true],
        ["application/json; charset=utf-16", "application/json; charset=utf-16", () => JSON.stringify(base())],
        ["empty type", "", () => JSON.stringify(base()), true],
        ["garbage type", "\u00e9/\u00e9; ;;=", () => JSON.stringify(base()), true],
      ];
      for (const [lbl, type, body, refused] of types)
        push("content-type", `content-type ${lbl}`, () => jsonReq(body(), type), refused ? REFUSE_TYPE : undefined);

      if (formSchema) {
        const fileFields = Object.keys(formSchema.properties ?? {}).filter((n) => {
          const type = formSchema.properties![n]!.contentMediaType;
          return type !== undefined && type !== "application/json";
        });
        const paramField = Object.keys(formSchema.properties ?? {}).find(
          (n) => formSchema.properties![n]!.contentMediaType === "application/json",
        );
        const fileParts = (): Part[] =>
          fileFields.map((name) => {
            const f = fx.uploads[name] ?? {
              bytes: new TextEncoder().encode("fuzz"),
              filename: `${name}.bin`,
              contentType: "application/octet-stream",
            };
            return { name, filename: f.filename, contentType: f.contentType, data: f.bytes };
          });
        const paramPart = (text: string | Uint8Array): Part[] => (paramField ? [{ name: paramField, data: text }] : []);
        const formReq = (parts: Part[], boundary?: string): FuzzRequest => {
          const { body, contentType } = multipartBody(parts, boundary);
          return { method, path: fillPath(), headers: headersFor({ "content-type": contentType }), body };
        };
        const formBase = () => {
          const b = base();
          delete b.source; // the JSON form's owned source; a form carries the file instead
          return b;
        };

        // Every field of the parameters object, every hostile value, beside a real file.
        if (paramField && jsonSchema) {
          for (const path of fieldPaths(jsonSchema)) {
            if (path[0] === "source") continue;
            for (const v of HOSTILE_VALUES) {
              push(
                v.cls,
                `multipart ${paramField}.${label(path)} = ${v.label}`,
                () => formReq([...paramPart(bodyWith(formBase(), path, jsonSchema, rawOf(v.raw))), ...fileParts()]),
                refusalOf(v),
              );
            }
          }
          const paramTexts: Array<[string, string, () => string | Uint8Array]> = [
            ["body", "not JSON", () => "{"],
            ["body", "empty", () => ""],
            ["body", "null", () => "null"],
            ["body", "array", () => "[]"],
            ["deep", "array 20,000 deep", () => deepArray()],
            ["deep", "object 20,000 deep", () => deepObject()],
            ["huge", "1 MB", () => JSON.stringify({ prompt: "A".repeat(HUGE) })],
            ["nul", "NUL", () => '{"prompt":"\\u0000"}'],
            ["surrogate", "invalid UTF-8", () => invalidUtf8Body({ prompt: "x" })],
            [
              "proto",
              "__proto__",
              () => '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}',
            ],
          ];
          for (const [cls, lbl, text] of paramTexts)
            push(
              cls,
              `multipart ${paramField} = ${lbl}`,
              () => formReq([...paramPart(text()), ...fileParts()]),
              cls === "nul" ? REFUSE_NUL : undefined,
            );
        }

        // The file parts themselves.
        const params = () => paramPart(JSON.stringify(formBase()));
        const firstFile = fileFields[0];
        if (firstFile) {
          const real = () => fileParts().find((p) => p.name === firstFile)!;
          const others = () => fileParts().filter((p) => p.name !== firstFile);
          /** The parts with the real file changed by `change`. */
          const withFile = (change: Partial<Part>) => () => [...params(), { ...real(), ...change }, ...others()];
          const variants: Array<[string, string, () => Part[]]> = [
            ["multipart", "baseline", () => [...params(), real(), ...others()]],
            ["multipart", "file missing", () => [...params(), ...others()]],
            [
              "multipart",
              "file as a text field",
              () => [...params(), { name: firstFile, data: "not a file" }, ...others()],
            ],
            ["multipart", "empty file", withFile({ data: new Uint8Array() })],
            ["multipart", "1 MB of zeros", withFile({ data: new Uint8Array(1_000_000) })],
            [
              "multipart",
              "random bytes",
              () => [...params(), { ...real(), data: randomBytesSeeded(rnd, 64_000) }, ...others()],
            ],
            ["multipart", "file twice", () => [...params(), real(), real(), ...others()]],
            ["multipart", "file name empty", withFile({ filename: "" })],
            ["multipart", "file name without extension", withFile({ filename: "audio" })],
            ["multipart", "file name traversal", withFile({ filename: "../../../../etc/passwd.mp3" })],
            // A file name is not a stored text field (only its extension is read): no "must refuse" here.
            ["multipart", "file name with NUL", withFile({ filename: "a\u0000.mp3" })],
            // (TextEncoder writes the lone surrogate as U+FFFD: ill-formed only in spirit, so not "must refuse")
            ["surrogate", "file name with a lone surrogate", withFile({ filename: "a\ud800.mp3" })],
            ["huge", "file name 10 kB", withFile({ filename: `${"a".repeat(10_000)}.mp3` })],
            ["proto", "file name __proto__", withFile({ filename: "__proto__" })],
            [
              "proto",
              "part named __proto__",
              () => [...params(), { name: "__proto__", data: '{"polluted":"yes"}' }, real(), ...others()],
            ],
            [
              "multipart",
              "parameters as a file",
              () => [
                {
                  name: paramField ?? "parameters",
                  filename: "p.json",
                  contentType: JSON_TYPE,
                  data: JSON.stringify(formBase()),
                },
                real(),
                ...others(),
              ],
            ],
            [
              "multipart",
              "parameters twice",
              () => [...params(), ...paramPart('{"prompt":"\\u0000"}'), real(), ...others()],
            ],
            ["multipart", "wrong declared type", withFile({ contentType: "text/html" })],
          ];
          for (const [cls, lbl, parts] of variants)
            push(cls, `multipart ${lbl}`, () => formReq(parts()), cls === "nul" ? REFUSE_NUL : undefined);
          push("multipart", "multipart boundary mismatch", () => {
            const { body } = multipartBody([...params(), real()], "one");
            return {
              method,
              path: fillPath(),
              headers: headersFor({ "content-type": "multipart/form-data; boundary=two" }),
              body,
            };
          });
          push("multipart", "multipart truncated", () => {
            const { body, contentType } = multipartBody([...params(), real()]);
            return {
              method,
              path: fillPath(),
              headers: headersFor({ "content-type": contentType }),
              body: body.slice(0, Math.floor(body.length / 2)),
            };
          });
          push("multipart", "multipart garbage", () => ({
            method,
            path: fillPath(),
            headers: headersFor({ "content-type": "multipart/form-data; boundary=x" }),
            body: "--x\r\nnot a form",
          }));
          push("huge", "multipart 10,000 parts", () =>
            formReq([...params(), real(), ...Array.from({ length: 10_000 }, (_, i) => ({ name: `p${i}`, data: "x" }))]),
          );
        }
      }
    }
  }
  return cases;
}

function baselineOf(op: string, schema: JsonSchema, fx: FuzzFixtures): Record<string, unknown> {
  const sample = sampleOf({ ...schema, type: "object" }) as Record<string, unknown>;
  return { ...sample, ...structuredClone(fx.baselines[op] ?? {}) };
}

/** The baseline body as bytes, its first string value replaced by an ill-formed UTF-8 sequence. */
function invalidUtf8Body(base: Record<string, unknown>): Uint8Array {
  const key = Object.keys(base).find((k) => typeof base[k] === "string") ?? "fuzz";
  const text = JSON.stringify({ ...base, [key]: MARKER });
  const [before, after] = text.split(JSON.stringify(MARKER)) as [string, string];
  const enc = new TextEncoder();
  const bad = Uint8Array.of(0x22, 0xed, 0xa0, 0x80, 0xc0, 0xaf, 0xff, 0x22); // "<lone surrogate><overlong /><0xFF>"
  const a = enc.encode(before);
  const b = enc.encode(after);
  const out = new Uint8Array(a.length + bad.length + b.length);
  out.set(a);
  out.set(bad, a.length);
  out.set(b, a.length + bad.length);
  return out;
}

function flatStrings(o: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

function randomBytesSeeded(rnd: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

/**
 * A bounded, repeatable sample that still reaches every operation and every kind of hostility: cases are
 * grouped by operation, each operation's cases interleaved by kind (each kind shuffled), and the operations
 * taken in turn until `n` cases are chosen.
 */
export function sampleCases(cases: readonly FuzzCase[], n: number, seed: number): FuzzCase[] {
  if (n >= cases.length) return cases.slice();
  const rnd = seededRandom(seed);
  const byOp = new Map<string, Map<string, FuzzCase[]>>();
  for (const c of cases) {
    const classes = byOp.get(c.op) ?? new Map<string, FuzzCase[]>();
    byOp.set(c.op, classes);
    classes.set(c.cls, [...(classes.get(c.cls) ?? []), c]);
  }
  const queues = shuffle([...byOp.values()], rnd).map((classes) => {
    const lanes = shuffle([...classes.values()], rnd).map((l) => shuffle(l, rnd));
    const out: FuzzCase[] = [];
    for (let i = 0; lanes.some((l) => i < l.length); i++) for (const l of lanes) if (i < l.length) out.push(l[i]!);
    return out;
  });
  const picked: FuzzCase[] = [];
  for (let i = 0; picked.length < n; i++) {
    for (const q of queues) if (i < q.length && picked.length < n) picked.push(q[i]!);
  }
  return picked;
}
