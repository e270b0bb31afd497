// The input helper (lib/input.ts): one declaration yields the documented JSON Schema that OpenAPI and GraphQL
// read, and a check whose first failure is the input's one issue, with the spec's text.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { checked, defineInput, field } from "../../lib/input.ts";
import { type InferOutput, validate } from "../../lib/standard-schema.ts";
import { jsonSchemaOf } from "../../transports/graphql/json-schema-to-pothos.ts";

const t = suite("input helper: documented fields and one ordered check");

const seen: unknown[] = [];
const Greeting = defineInput({
  fields: {
    name: field.string({ maxLength: 20, description: "who to greet" }),
    times: field.integer({ minimum: 1, maximum: 3, default: 1 }),
    tags: field.array({ items: { type: "string" }, maxItems: 2 }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["name"],
  check(raw, fail) {
    seen.push(raw.name);
    if (typeof raw.name !== "string" || raw.name.trim() === "") return fail("name is required");
    const times = raw.times ?? 1;
    if (typeof times !== "number" || !Number.isInteger(times) || times < 1 || times > 3)
      return fail("times must be 1, 2 or 3");
    if (raw.name.length > 20) return fail("name is too long");
    return { greeting: `hello ${raw.name.trim()}`.repeat(times), partnerJobId: raw.partner_job_id };
  },
});

// The output type follows from `check` (not `any`); a wrong expectation here fails the typecheck.
type Exact<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const typed: Exact<InferOutput<typeof Greeting>, { greeting: string; partnerJobId: string | null }> = true;
void typed;

t("the documents: declared fields in order, each `type` first, the declared `required`", () => {
  const schema = (Greeting as any)["~standard"].jsonSchema.input({ target: "draft-2020-12" });
  assert.equal(schema, {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      name: { type: "string", maxLength: 20, description: "who to greet" },
      times: { type: "integer", minimum: 1, maximum: 3, default: 1 },
      tags: { type: "array", items: { type: "string" }, maxItems: 2 },
      partner_job_id: { type: "string" },
    },
    required: ["name"],
  });
  assert.equal(Object.keys(schema.properties.name), ["type", "maxLength", "description"]);
  // GraphQL reads the same export.
  assert.equal(jsonSchemaOf(Greeting, "input")?.required, ["name"]);
});

t("without `required` nothing is required; `loose` documents and keeps other properties", async () => {
  const Open = defineInput({
    fields: { a: field.number({ minimum: 0 }), b: field.object({ title: "B", properties: { c: { type: "string" } } }) },
    loose: true,
  });
  const schema = (Open as any)["~standard"].jsonSchema.input({ target: "draft-2020-12" });
  assert.is(schema.required, undefined);
  assert.equal(schema.additionalProperties, {});
  assert.equal(schema.properties.b, { type: "object", title: "B", properties: { c: { type: "string" } } });
  assert.equal(await validate(Open, { a: -1, request_id: "x" }), { ok: true, value: { a: -1, request_id: "x" } });
  const Closed = defineInput({ fields: { a: field.boolean() }, check: (raw) => ({ ...raw }) });
  assert.equal(await validate(Closed, { a: "yes", request_id: "x" }), { ok: true, value: { a: "yes" } });
});

t("the first failing rule is the one issue, with its text; later rules do not run", async () => {
  const result = await (Greeting as any)["~standard"].validate({ name: "x".repeat(30), times: 9 });
  assert.equal(
    result.issues.map((i: { message: string }) => i.message),
    ["times must be 1, 2 or 3"],
  );
  assert.equal(await validate(Greeting, { name: " Ann ", times: 2, partner_job_id: "job-1" }), {
    ok: true,
    value: { greeting: "hello Annhello Ann", partnerJobId: "job-1" },
  });
  assert.equal(await validate(Greeting, { name: "x".repeat(21) }), { ok: false, message: "name is too long" });
});

t("a required field that is missing reaches `check`, which words the 400", async () => {
  seen.length = 0;
  assert.equal(await validate(Greeting, {}), { ok: false, message: "name is required" });
  assert.equal(await validate(Greeting, { name: null }), { ok: false, message: "name is required" });
  assert.equal(seen, [undefined, null]);
});

t("partner_job_id (convention 5) is checked before `check`", async () => {
  assert.equal(await validate(Greeting, { partner_job_id: "not valid!" }), {
    ok: false,
    message: KERNEL_ERRORS.invalidPartnerJobId,
  });
  assert.equal(await validate(Greeting, { name: "a" }), {
    ok: true,
    value: { greeting: "hello a", partnerJobId: null },
  });
  const Music = defineInput({
    fields: { partner_job_id: field.partnerJobId({ music: true, message: "bad id" }) },
    check: (raw) => raw.partner_job_id,
  });
  assert.equal(await validate(Music, { partner_job_id: "a/b" }), { ok: false, message: "bad id" });
  assert.equal(await validate(Music, { partner_job_id: "a_b-1" }), { ok: true, value: "a_b-1" });
});

t("values reach `check` as sent: wrong types, NUL and ill-formed Unicode are not touched", async () => {
  const Echo = defineInput({ fields: { s: field.string(), n: field.integer() }, check: (raw) => [raw.s, raw.n] });
  for (const value of ["a\u0000b", "\ud800", "x\udfffy", 42, [1], { a: 1 }, null, false]) {
    assert.equal(await validate(Echo, { s: value, n: value }), { ok: true, value: [value, value] });
  }
});

t("a body that is not an object is an issue, not a throw; a bug in `check` is not a 400", async () => {
  for (const body of [null, [], "text", 5]) assert.is((await validate(Greeting, body)).ok, false);
  const Buggy = defineInput({ fields: {}, check: () => (null as unknown as { x: number }).x });
  try {
    await validate(Buggy, {});
    assert.unreachable("should have thrown");
  } catch (error) {
    assert.instance(error, TypeError);
  }
});

t("checked() runs a check a handler owns and returns its outcome", () => {
  assert.equal(
    // biome-ignore lint/correctness/noConstantCondition: the constant picks the failing branch while both branches keep their types
    checked((fail) => (1 > 0 ? fail("no") : 1)),
    { ok: false, message: "no" },
  );
  assert.equal(
    checked(() => 7),
    { ok: true, value: 7 },
  );
  assert.throws(() => checked(() => JSON.parse("{")), SyntaxError);
});

t.run();
