// JSON Schema (draft 2020-12, as a Standard Schema value exports it) to Pothos types. Declarations stay
// library-neutral: a plugin may validate with zod, valibot or anything else that exports JSON Schema, and
// the GraphQL types follow from that export, as schema/openapi.json does.
//
// The mapping, chosen so a GraphQL body is the REST body with fields selected:
// - objects with properties are object (or input object) types; property names stay as in the spec
//   (snake_case), so `credits_remaining` is `credits_remaining` in both APIs;
// - objects without properties (records, `costs`), unions other than "X or null", tuples, and anything
//   whose property names GraphQL cannot spell, are the `JSON` scalar;
// - arrays are lists; string, integer, number, boolean are String, Int, Float, Boolean;
// - a string enum in a result is a GraphQL enum when every value can be spelled as one (`status`:
//   `pending | success | failed`), else a String whose description lists the values (`1:1`, `4K`). In
//   arguments and inputs enums stay String, so a wrong value gets the spec's error text from the same
//   validation as REST rather than GraphQL's own "value does not exist";
// - a field is nullable when it is not required or its type admits null.
// Type names come from a schema's `title` or `$defs` name when it has one, else from where the schema sits
// (`ImageStatusResult`, `ImagesResultImagesItem`); one name given to two different shapes is a boot error.
import { InputListRef, ListRef } from "@pothos/core";
import type { Builder } from "./builder.ts";
import { isGraphqlName, pascalCase } from "./names.ts";

export type JsonSchema = Record<string, any>;

/** The JSON Schema a Standard Schema value exports for one side, or undefined when it exports none. */
export function jsonSchemaOf(schema: unknown, side: "input" | "output"): JsonSchema | undefined {
  const std = (
    schema as
      | { "~standard"?: { jsonSchema?: Record<"input" | "output", (o: { target: string }) => JsonSchema> } }
      | undefined
  )?.["~standard"];
  if (!std?.jsonSchema) return undefined;
  try {
    return std.jsonSchema[side]({ target: "draft-2020-12" });
  } catch {
    return undefined; // a shape the library cannot express (a transform's output, say): typed as JSON
  }
}

/** A GraphQL type as Pothos takes it, and whether null may stand in its place. */
export interface Mapped {
  type: any;
  nullable: boolean;
  description?: string;
}

const JSON_TYPE = "JSON";

function deref(schema: JsonSchema, doc: JsonSchema): { schema: JsonSchema; defName?: string } {
  let defName: string | undefined;
  for (let i = 0; i < 32 && typeof schema?.$ref === "string"; i++) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    const target = m ? doc[m[1]!]?.[decodeURIComponent(m[2]!)] : schema.$ref === "#" ? doc : undefined;
    if (!target) return { schema: {}, defName };
    defName = m ? decodeURIComponent(m[2]!) : (doc.title as string | undefined);
    const { $ref: _ref, ...siblings } = schema;
    schema = { ...target, ...siblings };
  }
  return { schema: schema ?? {}, defName };
}

/** The schema without its "or null", and whether it had one; a union of several non-null shapes stays as it is. */
function withoutNull(raw: JsonSchema, doc: JsonSchema): { schema: JsonSchema; nullable: boolean; defName?: string } {
  const { schema, defName } = deref(raw, doc);
  let nullable = schema.nullable === true;
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t: string) => t !== "null");
    nullable ||= types.length < schema.type.length;
    if (types.length === 1) return { schema: { ...schema, type: types[0] }, nullable, defName };
    return { schema: types.length ? schema : {}, nullable, defName };
  }
  for (const key of ["anyOf", "oneOf"] as const) {
    if (!Array.isArray(schema[key])) continue;
    const branches = (schema[key] as JsonSchema[]).map((b) => deref(b, doc));
    const rest = branches.filter((b) => b.schema.type !== "null");
    nullable ||= rest.length < branches.length;
    if (rest.length === 1) {
      const { [key]: _union, ...siblings } = schema;
      const inner = withoutNull({ ...rest[0]!.schema, ...siblings }, doc);
      return { schema: inner.schema, nullable: nullable || inner.nullable, defName: rest[0]!.defName ?? defName };
    }
  }
  return { schema, nullable, defName };
}

function describe(schema: JsonSchema): string | undefined {
  const parts: string[] = [];
  if (typeof schema.description === "string" && schema.description.trim())
    parts.push(schema.description.trim().replace(/([^.!?])$/, "$1."));
  if (Array.isArray(schema.enum))
    parts.push(`One of: ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(", ")}.`);
  if (schema.default !== undefined) parts.push(`Default: ${JSON.stringify(schema.default)}.`);
  return parts.length ? parts.join(" ") : undefined;
}

function scalarOf(schema: JsonSchema): string | undefined {
  const values: unknown[] | undefined = Array.isArray(schema.enum)
    ? schema.enum
    : "const" in schema
      ? [schema.const]
      : undefined;
  if (values) {
    if (values.every((v) => typeof v === "string")) return "String";
    if (values.every((v) => Number.isInteger(v))) return "Int";
    if (values.every((v) => typeof v === "number")) return "Float";
    if (values.every((v) => typeof v === "boolean")) return "Boolean";
    return JSON_TYPE;
  }
  switch (schema.type) {
    case "string":
      return "String";
    case "integer":
      return "Int";
    case "number":
      return "Float";
    case "boolean":
      return "Boolean";
    default:
      return undefined;
  }
}

/** A string enum's values when each is a GraphQL enum value name (not `true`, `false` or `null`), else undefined. */
function enumNames(schema: JsonSchema): string[] | undefined {
  const values: unknown[] | undefined = Array.isArray(schema.enum)
    ? schema.enum
    : "const" in schema
      ? [schema.const]
      : undefined;
  if (
    !values?.length ||
    !values.every(
      (v): v is string => typeof v === "string" && isGraphqlName(v) && v !== "true" && v !== "false" && v !== "null",
    )
  )
    return undefined;
  return values;
}

const isArray = (s: JsonSchema) => s.type === "array" || (s.type === undefined && s.items !== undefined);

/** Properties that can become GraphQL fields, or undefined when the object is free-form. */
function fieldsOf(s: JsonSchema): Record<string, JsonSchema> | undefined {
  const objectish = s.type === "object" || (s.type === undefined && s.properties !== undefined);
  if (!objectish || !s.properties || typeof s.properties !== "object") return undefined;
  const names = Object.keys(s.properties);
  if (!names.length || !names.every(isGraphqlName)) return undefined;
  return s.properties;
}

export interface ObjectExtras {
  /** Fields added to the object type that the schema does not declare (`request_id`). */
  outputFields?: Record<string, { type: string; nullable: boolean; description: string }>;
}

/** Builds GraphQL types from JSON Schema on one builder, reusing a named type for the same shape. */
export class JsonSchemaTypes {
  private readonly outputs = new Map<string, { ref: any; shape: string }>();
  private readonly inputs = new Map<string, { ref: any; shape: string }>();

  constructor(private readonly builder: Builder) {}

  private claim(
    table: Map<string, { ref: any; shape: string }>,
    name: string,
    schema: JsonSchema,
    create: () => any,
  ): { ref: any; fresh: boolean } {
    const shape = JSON.stringify(schema);
    const seen = table.get(name) ?? (table === this.outputs ? this.inputs : this.outputs).get(name);
    if (seen) {
      if (seen.shape === shape && table.get(name)) return { ref: seen.ref, fresh: false };
      throw new Error(`GraphQL: two different shapes are both named "${name}"; give one a distinct title`);
    }
    const ref = create();
    table.set(name, { ref, shape });
    return { ref, fresh: true };
  }

  private named(schema: JsonSchema, defName: string | undefined, fallback: string, suffix = ""): string {
    const given = typeof schema.title === "string" ? schema.title : defName;
    if (given) {
      const name = pascalCase(given);
      if (isGraphqlName(name)) return name.endsWith(suffix) ? name : name + suffix;
    }
    return fallback;
  }

  /** An output type for `schema`, found in `doc`; `name` is used when the schema names no type itself. */
  output(raw: JsonSchema, doc: JsonSchema, name: string, extras: ObjectExtras = {}): Mapped {
    const { schema, nullable, defName } = withoutNull(raw, doc);
    const description = describe(schema);
    const values = enumNames(schema);
    if (values) {
      const typeName = this.named(schema, defName, name);
      const { ref } = this.claim(this.outputs, typeName, { enum: values }, () =>
        this.builder.enumType(typeName, { values: Object.fromEntries(values.map((v) => [v, { value: v }])) }),
      );
      return {
        type: ref,
        nullable,
        description: typeof schema.description === "string" ? schema.description : undefined,
      };
    }
    const plain = plainOrFields(
      schema,
      { nullable, description },
      (items) => this.output(items, doc, `${name}Item`),
      (item) => new ListRef(item.type, item.nullable),
    );
    if ("mapped" in plain) return plain.mapped;
    const { props } = plain;

    const typeName = this.named(schema, defName, name);
    const { ref, fresh } = this.claim(this.outputs, typeName, { schema, extras }, () =>
      this.builder.objectRef<Record<string, unknown>>(typeName),
    );
    if (fresh) {
      // Mapped now, not in the fields thunk, so a bad declaration fails while the schema is built.
      const fields = mapFields(schema, props, (prop, key) => this.output(prop, doc, `${typeName}${pascalCase(key)}`));
      ref.implement({
        description: typeof schema.description === "string" ? schema.description : undefined,
        fields: (t: any) => {
          const out: Record<string, unknown> = {};
          for (const [key, extra] of Object.entries(extras.outputFields ?? {})) {
            if (!(key in props))
              out[key] = t.field({
                type: extra.type,
                nullable: extra.nullable,
                description: extra.description,
                resolve: (parent: any) => parent[key],
              });
          }
          for (const [key, m] of fields) {
            out[key] = t.field({
              type: m.type,
              nullable: m.nullable,
              description: m.description,
              resolve: (parent: any) => parent[key] ?? null,
            });
          }
          return out;
        },
      });
    }
    return { type: ref, nullable, description };
  }

  /** Properties that can be arguments or input fields, or undefined when the schema is free-form. */
  fields(raw: JsonSchema, doc: JsonSchema): { props: Record<string, JsonSchema>; required: Set<string> } | undefined {
    const { schema } = withoutNull(raw, doc);
    const props = fieldsOf(schema);
    if (!props) return undefined;
    return { props, required: requiredOf(schema) };
  }

  /** An input type for `schema`; `Mapped.nullable` false means the argument or field is required. */
  input(raw: JsonSchema, doc: JsonSchema, name: string): Mapped {
    const { schema, nullable, defName } = withoutNull(raw, doc);
    const description = describe(schema);
    const plain = plainOrFields(
      schema,
      { nullable, description },
      (items) => this.input(items, doc, `${name}Item`),
      (item) => new InputListRef(item.type, !item.nullable),
    );
    if ("mapped" in plain) return plain.mapped;
    const { props } = plain;

    const typeName = this.named(schema, defName, name, "Input");
    const { ref, fresh } = this.claim(this.inputs, typeName, schema, () =>
      this.builder.inputRef<Record<string, unknown>>(typeName),
    );
    if (fresh) {
      const fields = mapFields(schema, props, (prop, key) => this.input(prop, doc, `${typeName}${pascalCase(key)}`));
      ref.implement({
        description: typeof schema.description === "string" ? schema.description : undefined,
        fields: (t: any) =>
          Object.fromEntries(
            fields.map(([key, m]) => [
              key,
              t.field({ type: m.type, required: !m.nullable, description: m.description }),
            ]),
          ),
      });
    }
    return { type: ref, nullable, description };
  }
}

/**
 * What maps alike to an output and to an input type: a scalar, a list (its items mapped by `item`, free-form
 * JSON items, nullable, when it declares no one schema for them; `list` makes the direction's list type), or
 * free-form JSON; else the properties of an object schema, for the caller's named type.
 */
function plainOrFields(
  schema: JsonSchema,
  outer: Omit<Mapped, "type">,
  item: (items: JsonSchema) => Mapped,
  list: (item: Mapped) => unknown,
): { mapped: Mapped } | { props: Record<string, JsonSchema> } {
  const scalar = scalarOf(schema);
  if (scalar) return { mapped: { type: scalar, ...outer } };
  if (isArray(schema)) {
    const one = schema.items && typeof schema.items === "object" && !Array.isArray(schema.items);
    const items = one ? item(schema.items) : { type: JSON_TYPE, nullable: true };
    return { mapped: { type: list(items), ...outer } };
  }
  const props = fieldsOf(schema);
  return props ? { props } : { mapped: { type: JSON_TYPE, ...outer } };
}

/** The properties a schema requires. */
function requiredOf(schema: JsonSchema): Set<string> {
  return new Set<string>(Array.isArray(schema.required) ? schema.required : []);
}

/** Each property mapped, nullable also when the schema does not require it. */
function mapFields(
  schema: JsonSchema,
  props: Record<string, JsonSchema>,
  map: (prop: JsonSchema, key: string) => Mapped,
) {
  const required = requiredOf(schema);
  return Object.entries(props).map(([key, prop]) => {
    const m = map(prop, key);
    return [key, { ...m, nullable: m.nullable || !required.has(key) }] as const;
  });
}
