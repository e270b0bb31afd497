// OpenAPI 3.1 document of the partner API, derived from the same registry the router is built from.
// Input schemas come from each schema's Standard JSON Schema export (`~standard.jsonSchema`), so the
// document does not depend on which validation library a plugin chose.
import type { Registry } from "../../core/registry.ts";
import { PARTNER_BASE } from "./partner-api.ts";

type JsonSchema = Record<string, any>;

function inputJsonSchema(schema: unknown): JsonSchema | undefined {
  const std = (schema as { "~standard"?: { jsonSchema?: { input(o: { target: string }): JsonSchema } } })?.["~standard"];
  if (!std?.jsonSchema) return undefined;
  const { $schema: _ignored, ...rest } = std.jsonSchema.input({ target: "draft-2020-12" });
  return rest;
}

const errorBody = { type: "object", properties: { error: { type: "string" } }, required: ["error"] };

export function buildOpenApi(registry: Registry, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of registry.operations) {
    const decl = op.declaration;
    const openapiPath = PARTNER_BASE + op.path.replace(/<([a-z_][a-z0-9_]*)>/gi, "{$1}");
    const parameters: unknown[] = [...op.path.matchAll(/<([a-z_][a-z0-9_]*)>/gi)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    if (decl.method === "POST" && decl.idempotency !== "own") {
      parameters.push({
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description: "Beyond the spec: the same key and request within 24 h answers the first response again (header Idempotent-Replayed: true) without a second charge; another request under the key is 409.",
        schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
      });
    }
    for (const [name, rule] of Object.entries(decl.requiredHeaders ?? {})) {
      parameters.push({ name, in: "header", required: true, schema: { type: "string", pattern: rule.pattern.source } });
    }
    const input = decl.input ? inputJsonSchema(decl.input) : undefined;
    let requestBody: unknown;
    if (decl.rawBody && (op.method === "POST" || op.method === "PATCH")) {
      // Bytes: each accepted media type, capped.
      const schema = { type: "string", contentMediaType: decl.rawBody.contentTypes[0], maxLength: decl.rawBody.maxBytes, description: `at most ${decl.rawBody.maxBytes} bytes` };
      requestBody = { required: true, content: Object.fromEntries(decl.rawBody.contentTypes.map((t) => [t, { schema: { ...schema, contentMediaType: t } }])) };
    } else if (input && (op.method === "POST" || op.method === "PATCH")) {
      const content: Record<string, unknown> = { "application/json": { schema: input } };
      if (decl.multipart) {
        // The multipart form: the same object as JSON text in one field and/or its properties as plain text
        // fields, and the file parts.
        const files = Object.fromEntries(decl.multipart.files.map((f) => [f, { type: "string", contentMediaType: "application/octet-stream" }]));
        const parameters = decl.multipart.parameters === undefined ? {} : { [decl.multipart.parameters]: { type: "string", contentMediaType: "application/json", description: "the JSON body's object, as text" } };
        const inputProps = (input.properties ?? {}) as Record<string, JsonSchema>;
        const fields = Object.fromEntries((decl.multipart.fields ?? []).map((f) => [f, { type: "string", ...(inputProps[f]?.description ? { description: inputProps[f].description } : {}) }]));
        content["multipart/form-data"] = { schema: { type: "object", properties: { ...parameters, ...fields, ...files }, required: [...decl.multipart.files] } };
      }
      requestBody = { required: true, content };
    } else if (input?.properties) {
      for (const [name, schema] of Object.entries(input.properties as Record<string, JsonSchema>)) {
        parameters.push({ name, in: "query", required: (input.required ?? []).includes(name), schema: Object.keys(schema).length ? schema : { type: "string" } });
      }
    }
    const windows = op.rateWindows.map((w) => `${w.limit}/${w.windowSeconds === 60 ? "min" : w.windowSeconds === 3600 ? "h" : `${w.windowSeconds}s`}`).join(" and ");
    paths[openapiPath] ??= {};
    paths[openapiPath]![op.method.toLowerCase()] = {
      operationId: `${op.plugin}:${op.endpoint}`,
      tags: [op.plugin],
      summary: decl.summary ?? op.endpoint,
      description: [`Rate limit: ${windows} per key.`, decl.inflight ? "Holds an in-flight job slot." : "", decl.feature ? `Feature switch: ${decl.feature}.` : ""].filter(Boolean).join(" "),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: {
        [String(decl.status ?? 200)]: { description: "Success; the body carries request_id", content: { "application/json": { schema: { type: "object", properties: { request_id: { type: "string" } }, required: ["request_id"] } } } },
        default: { description: "Error", content: { "application/json": { schema: errorBody } } },
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "mediagate Partner API", version },
    servers: [{ url: "/" }],
    components: { securitySchemes: { partnerKey: { type: "http", scheme: "bearer", description: "svc_partner_... key" } } },
    security: [{ partnerKey: [] }],
    paths,
  };
}
