// OpenAPI 3.1 documents, derived from the declarations the routers are built from: the partner API from the
// registry (input and output schemas come from each schema's Standard JSON Schema export,
// `~standard.jsonSchema`, so the document does not depend on which validation library a plugin chose), the
// admin API from its route table. Served at /openapi.json and /openapi/admin.json, rendered at /docs, and
// committed as schema/openapi.json and schema/admin-openapi.json (a test fails when they are stale).

import type { CompiledOperation, Registry } from "../../core/registry.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { fieldNames, pascalCase } from "../graphql/names.ts";
import { PARTNER_BASE } from "./partner-api.ts";

type JsonSchema = Record<string, any>;
type Components = { schemas: Record<string, JsonSchema> };

/** A schema's JSON Schema (draft 2020-12) for one side, without `$schema`; undefined when it has none. */
export function jsonSchemaOf(schema: unknown, side: "input" | "output" = "input"): JsonSchema | undefined {
  const std = (
    schema as { "~standard"?: { jsonSchema?: Record<"input" | "output", (o: { target: string }) => JsonSchema> } }
  )?.["~standard"];
  if (!std?.jsonSchema) return undefined;
  try {
    const { $schema: _ignored, ...rest } = std.jsonSchema[side]({ target: "draft-2020-12" });
    return rest;
  } catch {
    return undefined; // a shape the library cannot express (a transform's output): documented as an object
  }
}

/**
 * A schema with its own `$defs` moved to components/schemas (prefixed, so two operations' `Style` stay apart)
 * and its references rewritten: inside an OpenAPI document `#` is the document, not the schema.
 */
function hoist(schema: JsonSchema, prefix: string, components: Components): JsonSchema {
  const defs: Record<string, JsonSchema> = { ...(schema.$defs ?? {}), ...(schema.definitions ?? {}) };
  const { $defs: _d, definitions: _e, ...root } = schema;
  const target = (name: string) => `#/components/schemas/${prefix}${pascalCase(name)}`;
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!node || typeof node !== "object") return node;
    const out: JsonSchema = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const m = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(v);
        out[k] = m ? target(decodeURIComponent(m[1]!)) : v === "#" ? target("Self") : v;
      } else out[k] = rewrite(v);
    }
    return out;
  };
  const rewritten = rewrite(root) as JsonSchema;
  for (const [name, def] of Object.entries(defs))
    components.schemas[`${prefix}${pascalCase(name)}`] = rewrite(def) as JsonSchema;
  if (JSON.stringify(rewritten).includes(`"${target("Self")}"`)) components.schemas[`${prefix}Self`] = rewritten;
  return rewritten;
}

const header = (description: string, schema: JsonSchema = { type: "string" }) => ({ description, schema });

/** Headers every answer may carry, and the ones of a limited, cached or replayed answer. */
const HEADERS = {
  "X-Request-Id": header(
    "The request's id (the body's `request_id`), or the client's own X-Request-Id of 8-128 characters from `A-Z a-z 0-9 . _ : -`, echoed.",
  ),
  RateLimit: header("IETF draft RateLimit: the remaining requests and the seconds until the window resets."),
  "RateLimit-Policy": header("IETF draft RateLimit-Policy: the window this route is counted in."),
  "Retry-After": header("Seconds to wait before retrying (at least 10).", { type: "integer", minimum: 10 }),
  ETag: header("A weak validator of the body without its request_id; send it back in If-None-Match for a 304."),
  "Idempotent-Replayed": header("`true` when this is the stored first answer to the same Idempotency-Key.", {
    type: "string",
    enum: ["true"],
  }),
} as const;

const ERROR_SCHEMA = {
  type: "object",
  properties: {
    error: { type: "string", description: "The specification's text, word for word." },
    request_id: { type: "string", description: "The request's id (also in X-Request-Id); quote it to support." },
  },
  required: ["error"],
  additionalProperties: true,
  description:
    "Some errors carry more fields (credits_remaining on a 402, missing on an unfinished upload, quota on a daily limit).",
};

const errorResponse = (description: string, example: string, headers: Record<string, unknown> = {}) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }, ...headers },
  content: {
    "application/json": {
      schema: { $ref: "#/components/schemas/Error" },
      example: { error: example, request_id: "req_0123456789abcdef01234567" },
    },
  },
});

/** Shared error answers, referred to by each operation that can give them. */
const ERROR_RESPONSES = {
  BadRequest: errorResponse(
    "The input was refused (the first issue's text); nothing was charged or stored.",
    "limit must be a positive integer",
  ),
  Unauthorized: errorResponse("Missing, unknown or revoked key.", KERNEL_ERRORS.invalidApiKey, {
    "WWW-Authenticate": header('`Bearer realm="partner API"`'),
  }),
  PaymentRequired: errorResponse(
    "The balance does not cover the price; the body says credits_remaining.",
    KERNEL_ERRORS.insufficientCredits(8),
  ),
  Forbidden: errorResponse(
    "A deactivated key, a feature switch that is off, or (HTML, not JSON) a generic User-Agent refused at the edge.",
    KERNEL_ERRORS.featureDisabled("captions"),
  ),
  NotFound: errorResponse("No such resource for this account.", KERNEL_ERRORS.notFound),
  MethodNotAllowed: errorResponse(
    "The path exists, not with this method; Allow lists the methods.",
    KERNEL_ERRORS.methodNotAllowed,
    { Allow: header("The methods this path serves.") },
  ),
  Conflict: errorResponse(
    "The Idempotency-Key was used with another request, or the resource is in a state that refuses this.",
    "This Idempotency-Key was already used with a different request.",
  ),
  PayloadTooLarge: errorResponse(
    "The body is above the operation's cap; it was not read further.",
    KERNEL_ERRORS.bodyTooLarge,
  ),
  UnsupportedMediaType: errorResponse(
    "The body's Content-Type is not one the operation reads.",
    KERNEL_ERRORS.bodyNotJson,
  ),
  TooManyRequests: errorResponse(
    "A rate limit or the in-flight job cap; wait Retry-After seconds.",
    KERNEL_ERRORS.rateLimited,
    { "Retry-After": { $ref: "#/components/headers/Retry-After" } },
  ),
  InternalError: errorResponse(
    "An unexpected failure; the text is fixed and anything charged is refunded.",
    KERNEL_ERRORS.internal,
  ),
  ServiceUnavailable: errorResponse(
    "Temporarily unavailable: the database or Redis out of reach for a moment (this text, with Retry-After), or the operation's own case (paused, busy, not configured). Nothing was charged.",
    KERNEL_ERRORS.serviceUnavailable,
    { "Retry-After": { $ref: "#/components/headers/Retry-After" } },
  ),
  InsufficientStorage: errorResponse(
    "The server's storage is full; the text says when nothing was charged.",
    KERNEL_ERRORS.storageFullNothingCharged,
  ),
} as const;

// Written out in each operation rather than as $ref: readers of the document (clients, the fuzzer) find a
// header parameter where the operation lists them.
const IDEMPOTENCY_KEY = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Beyond the spec: the same key and request within 24 h answers the first response again (header Idempotent-Replayed: true) without a second charge; another request under the key is 409.",
  schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
};
const IF_NONE_MATCH = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "An ETag of an earlier answer: 304 while the answer is unchanged.",
  schema: { type: "string" },
};

/** `generateImage`, `getImageStatus`, `deleteOmniCharacter`: the GraphQL field name, GETs prefixed with `get`. */
function operationIds(operations: readonly CompiledOperation[]): Map<CompiledOperation, string> {
  const names = fieldNames(operations);
  const ids = new Map<CompiledOperation, string>();
  const taken = new Set<string>();
  for (const op of operations) {
    const field = names.get(op)!;
    const id = op.method === "GET" ? `get${pascalCase(field)}` : field;
    if (taken.has(id)) throw new Error(`OpenAPI: two operations would both be ${id} (${op.endpoint})`);
    taken.add(id);
    ids.set(op, id);
  }
  return ids;
}

function successBody(output: JsonSchema | undefined, prefix: string, components: Components): JsonSchema {
  const requestId = { type: "string", description: "The request's id." };
  if (output?.type !== "object") {
    return {
      type: "object",
      properties: { request_id: requestId },
      required: ["request_id"],
      additionalProperties: true,
      ...(output ? {} : { description: "Not described by the operation's declaration." }),
    };
  }
  const hoisted = hoist(output, prefix, components);
  return {
    ...hoisted,
    properties: { request_id: requestId, ...hoisted.properties },
    required: ["request_id", ...(hoisted.required ?? [])],
  };
}

function partnerOperation(op: CompiledOperation, operationId: string, components: Components): Record<string, unknown> {
  const decl = op.declaration;
  const prefix = pascalCase(operationId);
  const pathNames = [...op.path.matchAll(/<([a-z_][a-z0-9_]*)>/gi)].map((m) => m[1]!);
  const parameters: unknown[] = pathNames.map((name) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const idempotent = decl.method === "POST" && decl.idempotency !== "own";
  if (idempotent) parameters.push(IDEMPOTENCY_KEY);
  for (const [name, rule] of Object.entries(decl.requiredHeaders ?? {})) {
    parameters.push({ name, in: "header", required: true, schema: { type: "string", pattern: rule.pattern.source } });
  }
  if (op.method === "GET") parameters.push(IF_NONE_MATCH);
  const input = decl.input ? jsonSchemaOf(decl.input, "input") : undefined;
  const hasBody = op.method === "POST" || op.method === "PATCH" || op.method === "PUT";
  let requestBody: unknown;
  if (decl.rawBody && hasBody) {
    const schema = {
      type: "string",
      maxLength: decl.rawBody.maxBytes,
      description: `at most ${decl.rawBody.maxBytes} bytes`,
    };
    requestBody = {
      required: true,
      content: Object.fromEntries(
        decl.rawBody.contentTypes.map((t) => [t, { schema: { ...schema, contentMediaType: t } }]),
      ),
    };
  } else if (input && hasBody) {
    const body = hoist(input, `${prefix}Input`, components);
    const content: Record<string, unknown> = { "application/json": { schema: body } };
    if (decl.multipart) {
      // The multipart form: the same object as JSON text in one field and/or its properties as plain text
      // fields, and the file parts.
      const files = Object.fromEntries(
        decl.multipart.files.map((f) => [f, { type: "string", contentMediaType: "application/octet-stream" }]),
      );
      const parameters =
        decl.multipart.parameters === undefined
          ? {}
          : {
              [decl.multipart.parameters]: {
                type: "string",
                contentMediaType: "application/json",
                description: "the JSON body's object, as text",
              },
            };
      const inputProps = (body.properties ?? {}) as Record<string, JsonSchema>;
      const fields = Object.fromEntries(
        (decl.multipart.fields ?? []).map((f) => [
          f,
          { type: "string", ...(inputProps[f]?.description ? { description: inputProps[f].description } : {}) },
        ]),
      );
      content["multipart/form-data"] = {
        schema: {
          type: "object",
          properties: { ...parameters, ...fields, ...files },
          required: [...decl.multipart.files],
        },
      };
    }
    requestBody = { required: true, content };
  } else if (input?.properties) {
    const query = hoist(input, `${prefix}Query`, components);
    for (const [name, schema] of Object.entries(query.properties as Record<string, JsonSchema>)) {
      if (pathNames.includes(name)) continue;
      parameters.push({
        name,
        in: "query",
        required: (query.required ?? []).includes(name),
        schema: Object.keys(schema).length ? schema : { type: "string" },
      });
    }
  }

  const windows = op.rateWindows
    .map((w) => `${w.limit}/${w.windowSeconds === 60 ? "min" : w.windowSeconds === 3600 ? "h" : `${w.windowSeconds}s`}`)
    .join(" and ");
  const limited = op.rateWindows.length > 0;
  const successHeaders: Record<string, unknown> = { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" } };
  if (limited)
    Object.assign(successHeaders, {
      RateLimit: { $ref: "#/components/headers/RateLimit" },
      "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
    });
  if (op.method === "GET") successHeaders.ETag = { $ref: "#/components/headers/ETag" };
  if (idempotent) successHeaders["Idempotent-Replayed"] = { $ref: "#/components/headers/Idempotent-Replayed" };
  const output = decl.output ? jsonSchemaOf(decl.output, "output") : undefined;
  const success = String(decl.status ?? 200);
  const responses: Record<string, unknown> = {
    [success]: {
      description: decl.status === 202 ? "Accepted: the job runs; follow it by its id." : "Success.",
      headers: successHeaders,
      content: { "application/json": { schema: successBody(output, `${prefix}Result`, components) } },
    },
  };
  if (op.method === "GET")
    responses["304"] = {
      description: "Not modified since the ETag sent in If-None-Match; no body.",
      headers: { ETag: { $ref: "#/components/headers/ETag" } },
    };
  const ref = (name: keyof typeof ERROR_RESPONSES) => ({ $ref: `#/components/responses/${name}` });
  responses["400"] = ref("BadRequest");
  responses["401"] = ref("Unauthorized");
  if (decl.inflight || (hasBody && op.method === "POST")) responses["402"] = ref("PaymentRequired");
  responses["403"] = ref("Forbidden");
  if (pathNames.length > 0) responses["404"] = ref("NotFound");
  if (idempotent) responses["409"] = ref("Conflict");
  if (hasBody) responses["413"] = ref("PayloadTooLarge");
  if (hasBody && !decl.bodyNotJson) responses["415"] = ref("UnsupportedMediaType");
  responses["429"] = ref("TooManyRequests");
  responses["500"] = ref("InternalError");
  // Any operation can meet an outage (core/errors.ts outageError): the database or Redis out of reach, a full disk.
  responses["503"] = ref("ServiceUnavailable");
  if (op.method === "POST") responses["507"] = ref("InsufficientStorage");
  return {
    operationId,
    tags: [op.plugin],
    summary: decl.summary ?? op.endpoint,
    description: [
      `\`${op.endpoint}\`.`,
      limited ? `Rate limit: ${windows} per key.` : "",
      decl.inflight ? "Holds an in-flight job slot." : "",
      decl.feature ? `Feature switch: ${decl.feature}.` : "",
    ]
      .filter(Boolean)
      .join(" "),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

export function buildOpenApi(registry: Registry, version: string): Record<string, unknown> {
  const components: Components = { schemas: { Error: ERROR_SCHEMA } };
  const ids = operationIds(registry.operations);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of registry.operations) {
    const openapiPath = PARTNER_BASE + op.path.replace(/<([a-z_][a-z0-9_]*)>/gi, "{$1}");
    (paths[openapiPath] ??= {})[op.method.toLowerCase()] = partnerOperation(op, ids.get(op)!, components);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "mediagate Partner API",
      version,
      description:
        "Credit-metered AI media work. Every answer carries X-Request-Id; JSON above 1 KB is compressed for clients that accept br or gzip; a known path with a wrong method is 405 with Allow. The admin API is described in /openapi/admin.json.",
    },
    servers: [{ url: "/" }],
    tags: [...new Set(registry.operations.map((op) => op.plugin))].map((name) => ({ name })),
    ...secured("partnerKey", "The partner's `svc_partner_...` key.", components, paths),
  };
}

/** A document's components, its one bearer scheme and its paths, in the order both documents print them. */
function secured(
  scheme: string,
  description: string,
  components: Components,
  paths: Record<string, Record<string, unknown>>,
) {
  return {
    components: {
      securitySchemes: { [scheme]: { type: "http", scheme: "bearer", description } },
      schemas: Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b))),
      responses: ERROR_RESPONSES,
      headers: HEADERS,
    },
    security: [{ [scheme]: [] }],
    paths,
  };
}

/** One admin route as the admin API declares it (transports/admin/routes.ts). */
export interface AdminRouteDoc {
  method: string;
  /** Router notation, `/partners/:partner_id`. */
  path: string;
  status: number;
  summary: string;
  body?: unknown;
}

export function buildAdminOpenApi(
  routes: readonly AdminRouteDoc[],
  base: string,
  version: string,
): Record<string, unknown> {
  const components: Components = { schemas: { Error: ERROR_SCHEMA } };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const openapiPath = base + route.path.replace(/:([a-z_][a-z0-9_]*)/gi, "{$1}");
    const params = [...route.path.matchAll(/:([a-z_][a-z0-9_]*)/gi)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const operationId = `${route.method.toLowerCase()}${pascalCase(route.path.replace(/:/g, "by-"))}`;
    const body = route.body ? jsonSchemaOf(route.body, "input") : undefined;
    const ref = (name: keyof typeof ERROR_RESPONSES) => ({ $ref: `#/components/responses/${name}` });
    (paths[openapiPath] ??= {})[route.method.toLowerCase()] = {
      operationId,
      summary: route.summary,
      ...(params.length ? { parameters: params } : {}),
      ...(body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: hoist(body, pascalCase(operationId), components) } },
            },
          }
        : {}),
      responses: {
        [String(route.status)]: {
          description: "Success.",
          headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" } },
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: { request_id: { type: "string" } },
                required: ["request_id"],
                additionalProperties: true,
              },
            },
          },
        },
        "400": ref("BadRequest"),
        "401": { ...ERROR_RESPONSES.Unauthorized, description: "Missing or wrong admin token." },
        ...(params.length ? { "404": ref("NotFound") } : {}),
        ...(body ? { "413": ref("PayloadTooLarge"), "415": ref("UnsupportedMediaType") } : {}),
        "500": ref("InternalError"),
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "mediagate Admin API",
      version,
      description: "Operators only: partners, keys, credits and pause switches. Never called from a browser (no CORS).",
    },
    servers: [{ url: "/" }],
    ...secured("adminToken", "The operator's ADMIN_TOKEN.", components, paths),
  };
}
