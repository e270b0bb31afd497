// The GraphQL schema, derived from the plugin declarations in the registry: every GET operation is a
// Query field, every POST, PATCH and DELETE a Mutation field, typed from the operation's input and output
// JSON Schema. Nothing here names a plugin or an endpoint; a new plugin appears in GraphQL by being
// registered.
//
// Resolvers call the same compiled invoker as the REST route (core/operations.ts): edge rule,
// authentication, usage count, rate limit, feature switch, validation with the spec's texts, handler.
// Each field's resolver, and the invoker inside it, is made once here, at build time.
import { GraphQLError, type GraphQLSchema } from "graphql";
import type { JobUpdate } from "../../core/jobs.ts";
import type { Invoke } from "../../core/operations.ts";
import type { CompiledOperation, Registry } from "../../core/registry.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { PARTNER_BASE } from "../rest/partner-api.ts";
import { type Builder, createBuilder } from "./builder.ts";
import { type Caller, type GraphqlContext, noteRateLimit } from "./context.ts";
import { statusError, toGraphqlError } from "./errors.ts";
import { type JsonSchema, JsonSchemaTypes, jsonSchemaOf } from "./json-schema-to-pothos.ts";
import { fieldNames, pascalCase, pathParams, rootOf } from "./names.ts";

/** REST's body cap when an operation declares none (transports/rest/partner-api.ts). */
export const DEFAULT_MAX_BODY = 1_000_000;

/** What resolvers need at run time; absent when the schema is only printed (scripts/generate-schema.ts). */
export interface SchemaRuntime {
  invoke(op: CompiledOperation): Invoke;
  /** The job's updates; a GraphQLError as the last item ends the stream with that error (a revoked key, shutdown). */
  jobUpdates(caller: Caller, jobId: string): Promise<AsyncIterable<JobUpdate | GraphQLError>>;
  onInternal(where: string, error: unknown): void;
}

type Args = Record<string, unknown>;

/** How an operation's input arrives: as one argument per query property, or as one `input` argument. */
type InputPlan = { kind: "none" } | { kind: "flat"; names: string[] } | { kind: "object" };

const plain = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

function rawInput(op: CompiledOperation, plan: InputPlan, args: Args): Record<string, unknown> {
  if (plan.kind === "none") return {};
  if (plan.kind === "flat") {
    // REST query values are strings, so GET/DELETE inputs see strings here too and validate the same way.
    const out: Record<string, unknown> = {};
    for (const name of plan.names) {
      const v = args[name];
      if (v === undefined || v === null) continue;
      out[name] = typeof v === "object" ? plain(v) : String(v);
    }
    return out;
  }
  const value = args.input ?? {};
  if (typeof value !== "object" || Array.isArray(value)) throw new ApiError(400, KERNEL_ERRORS.bodyNotJson);
  const body = plain(value) as Record<string, unknown>;
  // REST refuses an oversized body before parsing it; the same cap holds for the same input here.
  const max = op.declaration.maxBodyBytes ?? DEFAULT_MAX_BODY;
  if (JSON.stringify(body).length > max)
    throw new ApiError(413, op.declaration.bodyTooLarge ?? KERNEL_ERRORS.bodyTooLarge);
  return body;
}

/** A handler's own Response (media, downloads): JSON passes through; a file has no place in a GraphQL body. */
async function fromResponse(op: CompiledOperation, response: Response): Promise<unknown> {
  if ((response.headers.get("content-type") ?? "").includes("json")) return response.json();
  await response.body?.cancel().catch(() => {});
  return Promise.reject(
    statusError(
      406,
      `${op.endpoint} answers with a file; download it through the REST API at ${PARTNER_BASE}${op.path}`,
    ),
  );
}

const REQUEST_ID = {
  request_id: { type: "String", nullable: false, description: "The request's id, as in every REST success body." },
};

function addOperation(
  builder: Builder,
  types: JsonSchemaTypes,
  op: CompiledOperation,
  name: string,
  runtime: SchemaRuntime | null,
): void {
  const decl = op.declaration;
  const root = rootOf(op);
  const params = pathParams(op.path);
  const P = pascalCase(name);

  const inputDoc = decl.input ? jsonSchemaOf(decl.input, "input") : undefined;
  const outputDoc = decl.output ? jsonSchemaOf(decl.output, "output") : undefined;
  const viaQuery = op.method === "GET" || op.method === "DELETE";
  const inputFields = inputDoc ? types.fields(inputDoc, inputDoc) : undefined;

  let plan: InputPlan = { kind: "none" };
  const argSpecs: Array<[string, { type: any; required: boolean; description?: string }]> = params.map((p) => [
    p,
    { type: "String", required: true, description: `The \`<${p}>\` of ${op.endpoint}.` },
  ]);
  if (decl.input) {
    if (viaQuery && inputFields) {
      const names = Object.keys(inputFields.props).filter((n) => !params.includes(n));
      for (const n of names) {
        const m = types.input(inputFields.props[n]!, inputDoc!, `${P}${pascalCase(n)}`);
        argSpecs.push([
          n,
          { type: m.type, required: !m.nullable && inputFields.required.has(n), description: m.description },
        ]);
      }
      plan = { kind: "flat", names };
    } else if (inputDoc && inputFields) {
      const m = types.input(inputDoc, inputDoc, `${P}Input`);
      argSpecs.push([
        "input",
        { type: m.type, required: inputFields.required.size > 0, description: "The REST request body." },
      ]);
      plan = { kind: "object" };
    } else if (!inputDoc?.properties || Object.keys(inputDoc.properties).length) {
      // Free-form, or a library that exports no JSON Schema: the body (or query) as one JSON object.
      argSpecs.push([
        "input",
        {
          type: "JSON",
          required: false,
          description: viaQuery ? "The REST query parameters, as an object." : "The REST request body.",
        },
      ]);
      plan = { kind: "object" };
    }
  }

  const output = outputDoc
    ? types.output(outputDoc, outputDoc, `${P}${root === "Query" ? "Result" : "Payload"}`, { outputFields: REQUEST_ID })
    : { type: "JSON", nullable: true, description: undefined };

  const invoke = runtime?.invoke(op);
  const onInternal = (error: unknown) => runtime?.onInternal(op.endpoint, error);
  const resolve = async (_root: unknown, args: Args, ctx: GraphqlContext) => {
    if (!invoke) throw new Error("this schema was built without a kernel; it can be printed, not executed");
    const caller = ctx.caller;
    const outcome = await invoke({
      onAuthenticated: caller.onAuthenticated,
      authorization: caller.authorization,
      userAgent: caller.userAgent,
      params: Object.fromEntries(params.map((p) => [p, String(args[p])])),
      request: caller.request,
      readInput: async () => rawInput(op, plan, args),
    });
    noteRateLimit(caller, outcome.headers);
    if (!outcome.ok) throw toGraphqlError(outcome.error, outcome.headers, onInternal);
    if ("response" in outcome) return fromResponse(op, outcome.response);
    return outcome.body;
  };

  const description = [decl.summary, `${op.method} ${PARTNER_BASE}${op.path}`].filter(Boolean).join("\n\n");
  const field = (t: any) =>
    t.field({
      type: output.type,
      // Nullable, so one failing field leaves the others of the same document their data.
      nullable: true,
      description,
      args: Object.fromEntries(
        argSpecs.map(([n, a]) => [n, t.arg({ type: a.type, required: a.required, description: a.description })]),
      ),
      resolve,
    });
  if (root === "Query") builder.queryField(name, field);
  else builder.mutationField(name, field);
}

function addJobUpdates(builder: Builder, runtime: SchemaRuntime | null): void {
  const JobUpdateRef = builder.objectRef<JobUpdate>("JobUpdate").implement({
    description: "A job's state and progress, as it changes.",
    fields: (t) => ({
      job_id: t.exposeString("job_id", { nullable: false }),
      plugin: t.exposeString("plugin", { nullable: false, description: "The product area that runs the job." }),
      kind: t.exposeString("kind", { nullable: false }),
      state: t.exposeString("state", { nullable: false, description: "In the words of the job's status endpoint." }),
      terminal: t.exposeBoolean("terminal", {
        nullable: false,
        description: "True on the last update: the job has ended.",
      }),
      progress: t.exposeInt("progress", { nullable: true, description: "0-100, when the job reports it." }),
      message: t.exposeString("message", { nullable: true }),
      error: t.exposeString("error", {
        nullable: true,
        description: "Why a failed job failed, as its status endpoint says.",
      }),
      updated_at: t.exposeString("updated_at", { nullable: false, description: "UTC, YYYY-MM-DD HH:MM:SS." }),
    }),
  });
  builder.subscriptionType({});
  builder.subscriptionField("jobUpdates", (t) =>
    t.field({
      type: JobUpdateRef,
      nullable: false,
      description:
        'The job\'s current state, then every change until it ends (the last update has `terminal: true`). A job of another account is "Not found", like a missing one.',
      args: { id: t.arg.string({ required: true, description: "The job's public id (svc-...)." }) },
      subscribe: async (_root, args, ctx) => {
        if (!runtime) throw new Error("this schema was built without a kernel; it can be printed, not executed");
        try {
          return await runtime.jobUpdates(ctx.caller, args.id);
        } catch (error) {
          throw toGraphqlError(error, {}, (e) => runtime.onInternal("subscription jobUpdates", e));
        }
      },
      resolve: (update: JobUpdate | GraphQLError) => {
        if (update instanceof GraphQLError) throw update;
        return update;
      },
    }),
  );
}

/** The schema of the registered plugins; with a runtime its resolvers run, without one it can be printed. */
export function buildGraphqlSchema(registry: Registry, runtime: SchemaRuntime | null): GraphQLSchema {
  const builder = createBuilder();
  const types = new JsonSchemaTypes(builder);
  const names = fieldNames(registry.operations);
  builder.queryType({});
  if (registry.operations.some((op) => rootOf(op) === "Mutation")) builder.mutationType({});
  if (!registry.operations.some((op) => rootOf(op) === "Query")) {
    // GraphQL requires a Query type with a field; a deployment may register only POST operations.
    builder.queryField("noop", (t) =>
      t.boolean({ nullable: true, description: "No registered plugin declares a GET operation.", resolve: () => null }),
    );
  }
  for (const op of registry.operations) addOperation(builder, types, op, names.get(op)!, runtime);
  addJobUpdates(builder, runtime);
  return builder.toSchema({ sortSchema: true });
}

export type { JsonSchema };
