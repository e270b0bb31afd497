// A plugin's request input in one declaration: the fields as the documents show them (the JSON Schema that
// schema/openapi.json and the GraphQL input types are built from) and the one ordered `check` that decides
// the spec's error text. The spec's rules depend on each other (a model decides the allowed ratios, one
// field decides whether another is required), so they are plain code run in order, not per-field schemas.
//
// Every documented field reaches `check` exactly as sent (absent, null, a wrong type alike): the parser never
// answers in a field's stead, so the first failing rule of the spec always has the word. Two things run
// first: the kernel's screen of hostile values (core/hostile-input.ts screenInput: control characters, unpaired
// surrogates, field names such as __proto__, nesting), so no `check` ever sees them, and
// `field.partnerJobId()`, convention 5's shared rule. A value a check quotes in its text goes through
// `shown`, never `String()`: a partner's object may carry any `toString`.
import { z } from "zod";
import { partnerJobIdField } from "./validation.ts";

/** What a field documents besides its `type`; passed through to the JSON Schema as written. */
export interface FieldDoc {
  description?: string;
  title?: string;
  enum?: readonly unknown[];
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  maxLength?: number;
  maxItems?: number;
  items?: Record<string, unknown>;
  properties?: Record<string, unknown>;
  required?: readonly string[];
  [keyword: string]: unknown;
}

/** A declared field: a schema whose output is what `check` receives under that name. */
export type InputField<Value = unknown> = z.ZodType<Value, unknown>;

const documented =
  (type: string) =>
  (doc: FieldDoc = {}) =>
    z
      .unknown()
      .optional()
      .meta({ type, ...doc });

/** Field kinds. The type is what the documents say; the value still reaches `check` unchecked. */
export const field = {
  string: documented("string"),
  integer: documented("integer"),
  number: documented("number"),
  boolean: documented("boolean"),
  array: documented("array"),
  object: documented("object"),
  /** Optional `partner_job_id` (convention 5), checked before `check` runs; `check` receives string or null. */
  partnerJobId: (options?: Parameters<typeof partnerJobIdField>[0]): InputField<string | null> =>
    partnerJobIdField(options).meta({ type: "string" }),
};

/**
 * A sent value as an error text may quote it ("Invalid image_url: <value>"): a string cut to `max`
 * characters, a number, boolean or null as written, an array or object by its kind. Never throws.
 */
export function shown(value: unknown, max = 200): string {
  if (typeof value === "string") return value.slice(0, max);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : typeof value;
}

/** Ends a check with the spec's text: the input's first (and only) issue. */
export type Fail = (message: string) => never;

/** A check's outcome where a handler, not the input schema, runs it (rules that need what only it knows). */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

class InputFailure {
  constructor(readonly message: string) {}
}

const fail: Fail = (message) => {
  throw new InputFailure(message);
};

/** Runs a check written against `fail` and returns its outcome as a value. */
export function checked<T>(run: (fail: Fail) => T): Checked<T> {
  try {
    return { ok: true, value: run(fail) };
  } catch (error) {
    if (error instanceof InputFailure) return { ok: false, message: error.message };
    throw error;
  }
}

type Fields = Record<string, InputField<any>>;

/** What `check` receives: every declared field by name, plus undeclared ones when the input is `loose`. */
export type RawInput<F extends Fields, Loose extends boolean = false> = z.output<
  z.ZodObject<F, Loose extends true ? z.core.$loose : z.core.$strip>
>;

export interface InputDeclaration<F extends Fields, Loose extends boolean, T> {
  fields: F;
  /** Required in the documents; the parser still lets a missing field through, so `check` words the 400. */
  required?: readonly (keyof F & string)[];
  /** Keep properties that are not declared (documented as `additionalProperties`) and pass them to `check`. */
  loose?: Loose;
  /** The spec's rules in the order a partner fixes them: the validated value, or `fail(text)`. */
  check?: (raw: RawInput<F, Loose>, fail: Fail) => T;
}

/**
 * The Standard Schema value of an operation's input (a zod schema): its JSON Schema is the declared fields,
 * its output what `check` returns (the raw fields when there is no check), its first issue the spec's text.
 */
export function defineInput<F extends Fields, Loose extends boolean = false, T = RawInput<F, Loose>>(
  declaration: InputDeclaration<F, Loose, T>,
): z.ZodType<T, unknown> {
  let shape: z.ZodObject = z.object(declaration.fields);
  if (declaration.loose) shape = shape.loose();
  if (declaration.required) shape = shape.meta({ required: [...declaration.required] });
  const check = declaration.check;
  if (!check) return shape as unknown as z.ZodType<T, unknown>;
  return shape.transform((raw, ctx) => {
    const outcome = checked((f) => check(raw as RawInput<F, Loose>, f));
    if (outcome.ok) return outcome.value;
    ctx.addIssue({ code: "custom", message: outcome.message });
    return z.NEVER;
  });
}
