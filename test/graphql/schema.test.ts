// The GraphQL schema is derived from the declarations: names from paths, arguments from path parameters
// and input JSON Schema, types from output JSON Schema. Checked on test plugins (the shapes a declaration
// can take) and on the registered plugins (the fields partners use).

import { buildSchema, type GraphQLEnumType, type GraphQLObjectType, getNamedType, printType } from "graphql";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { z } from "zod";
import { definePlugin, operation } from "../../core/plugin.ts";
import { compileRegistry } from "../../core/registry.ts";
import account from "../../plugins/account/index.ts";
import { plugins } from "../../plugins/index.ts";
import { graphqlText } from "../../scripts/generate-schema.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { buildGraphqlSchema } from "../../transports/graphql/schema.ts";
import { probe, ticker } from "./fixtures.ts";

const t = suite("GraphQL schema derivation");

const argsOf = (schema: ReturnType<typeof buildSchema>, root: "Query" | "Mutation", field: string) => {
  const type = root === "Query" ? schema.getQueryType() : schema.getMutationType();
  return type!.getFields()[field]!.args.map((a) => `${a.name}: ${a.type}`);
};

t("field names follow the paths; shared names say which by their path parameters", () => {
  const handle = async () => ({});
  const op = (method: "GET" | "POST" | "PATCH" | "DELETE", path: string) =>
    operation({ method, path, rateLimit: "any", handle });
  const registry = compileRegistry([
    definePlugin({
      name: "names",
      rateLimits: { any: [{ limit: 1, windowSeconds: 60 }] },
      operations: [
        op("GET", "/captions"),
        op("GET", "/captions/<job_id>"),
        op("GET", "/captions/<job_id>/chunks"),
        op("POST", "/captions"),
        op("POST", "/captions/uploads/<session_id>/part/<index>"),
        op("GET", "/omni/script-runner/<batch_id>"),
        op("POST", "/omni/characters"),
        op("DELETE", "/omni/characters/<id>"),
        op("PATCH", "/webhook"),
        op("GET", "/webhook"),
      ],
    }),
  ]);
  const schema = buildGraphqlSchema(registry, null);
  assert.equal(Object.keys(schema.getQueryType()!.getFields()).sort(), [
    "captions",
    "captionsByJobId",
    "captionsChunks",
    "omniScriptRunner",
    "webhook",
  ]);
  assert.equal(Object.keys(schema.getMutationType()!.getFields()).sort(), [
    "captions",
    "captionsUploadsPart",
    "deleteOmniCharacters",
    "omniCharacters",
    "updateWebhook",
  ]);
  assert.equal(argsOf(schema, "Mutation", "captionsUploadsPart"), ["index: String!", "session_id: String!"]);
  assert.equal(argsOf(schema, "Query", "captionsByJobId"), ["job_id: String!"]);
});

t("output JSON Schema becomes object types with the REST field names; free-form objects are JSON", () => {
  const schema = buildGraphqlSchema(compileRegistry([probe]), null);
  const result = schema.getType("ProbeResult") as GraphQLObjectType;
  const fields = Object.fromEntries(Object.values(result.getFields()).map((f) => [f.name, String(f.type)]));
  assert.equal(fields, {
    count: "Int!",
    extra: "JSON!",
    id: "String!",
    items: "[ProbeResultItemsItem!]!",
    kind: "ProbeResultKind!",
    nested: "ProbeResultNested!",
    note: "String",
    ratio: "Float",
    request_id: "String!",
    shape: "String!",
    tags: "[String!]!",
  });
  // A result's enum whose values GraphQL can spell is an enum; one it cannot (`16:9`) a String that lists them.
  assert.equal(
    (schema.getType("ProbeResultKind") as GraphQLEnumType)
      .getValues()
      .map((v) => [v.name, v.value])
      .sort(),
    [
      ["large", "large"],
      ["small", "small"],
    ],
  );
  assert.match(result.getFields().shape!.description!, /One of: "1:1", "16:9"/);
  assert.equal(argsOf(schema, "Query", "probe"), ["id: String!"]);
  assert.equal(argsOf(schema, "Query", "probeEcho"), ["times: String", "word: String!"]);
  assert.is(
    String(schema.getQueryType()!.getFields().probeFile!.type),
    "JSON",
    "no output schema: the REST body as JSON",
  );
  assert.is(getNamedType(schema.getMutationType()!.getFields().probeFail!.type).name, "JSON");
});

t("a deployment without GET operations still has a valid Query type", () => {
  const schema = buildGraphqlSchema(compileRegistry([ticker]), null);
  assert.ok(schema.getQueryType()!.getFields().noop);
  assert.equal(argsOf(schema, "Mutation", "tick"), ["input: TickInput"]);
  assert.match(printType(schema.getType("TickInput")!), /credits: Int\n\s+fail: Boolean/);
});

t("the registered plugins' fields, as partners call them", () => {
  const schema = buildSchema(graphqlText());
  const query = schema.getQueryType()!.getFields();
  for (const name of ["credits", "me", "usage", "transactions"]) assert.ok(query[name], name);
  if (plugins.some((p) => p.name === "images")) {
    assert.equal(argsOf(schema, "Mutation", "generateImage"), ["input: GenerateImageInput!"]);
    assert.equal(argsOf(schema, "Query", "imageStatus"), ["id: String!"]);
    assert.equal(
      argsOf(schema, "Query", "images").map((a) => a.split(":")[0]),
      ["limit", "offset"],
    );
    assert.ok((schema.getType("ImageStatusResult") as GraphQLObjectType).getFields().request_id);
  }
});

const s = suite("GraphQL execution of derived fields");
let tk: TestKernel;
s.before.each(async () => {
  tk = await createTestKernel({
    plugins: [
      account,
      probe,
      definePlugin({
        name: "liar",
        rateLimits: { "GET /liar": [{ limit: 100, windowSeconds: 60 }] },
        operations: [
          operation({ method: "GET", path: "/liar", output: z.object({ must: z.string() }), handle: async () => ({}) }),
        ],
      }),
    ],
  });
});
s.after.each(async () => {
  await tk.close();
});

s("a typed body selects the REST body's fields", async () => {
  const p = await tk.partner();
  const g = await graphql(
    tk,
    '{ probe(id: "x1") { request_id id kind shape count ratio note tags nested { label flag } items { n } extra } }',
    undefined,
    { key: p.key },
  );
  assert.is(g.errors, undefined, JSON.stringify(g.errors));
  const r = await tk.request("GET", "/probe/x1", { key: p.key });
  const { request_id: _a, ...rest } = r.body;
  const { request_id, note, ...selected } = g.data.probe;
  assert.match(request_id, /^req_/);
  assert.is(note, null);
  assert.equal({ ...selected, nested: { label: selected.nested.label } }, rest);
  assert.is(selected.nested.flag, null);
});

s("GET inputs are arguments, validated with the REST texts", async () => {
  const p = await tk.partner();
  const g = await graphql(tk, '{ probeEcho(word: "ab", times: "2") }', undefined, { key: p.key });
  assert.equal(
    withoutId(g.data.probeEcho),
    withoutId((await tk.request("GET", "/probe-echo?word=ab&times=2", { key: p.key })).body),
  );
  const bad = await graphql(tk, '{ probeEcho(word: "a") }', undefined, { key: p.key });
  assert.is(bad.errors![0]!.message, "word is too short");
  assert.is(bad.errors![0]!.message, (await tk.request("GET", "/probe-echo?word=a", { key: p.key })).body.error);
});

s("internal errors are masked with the REST sentence and logged, never shown", async () => {
  const p = await tk.partner();
  const logged: unknown[] = [];
  const error = tk.kernel.log.error;
  tk.kernel.log.error = (...args: unknown[]) => void logged.push(args);
  try {
    const g = await graphql(tk, "mutation { probeFail }", undefined, { key: p.key });
    assert.is(g.errors![0]!.message, "Internal server error");
    assert.equal(g.errors![0]!.extensions, { code: "INTERNAL_SERVER_ERROR", status: 500 });
    assert.not.ok(JSON.stringify(g).includes("secret"));
    const liar = await graphql(tk, "{ liar { must } }", undefined, { key: p.key });
    assert.is(liar.errors![0]!.message, "Internal server error");
    assert.not.ok(JSON.stringify(liar).includes("non-nullable"));
    assert.ok(logged.length >= 2);
  } finally {
    tk.kernel.log.error = error;
  }
});

s("a handler's own Response: JSON passes through, a file points to REST", async () => {
  const p = await tk.partner();
  const g = await graphql(tk, "{ probeJsonResponse probeFile }", undefined, { key: p.key });
  assert.equal(g.data.probeJsonResponse, { hello: "world" });
  assert.is(g.data.probeFile, null);
  assert.is(g.errors![0]!.extensions!.status, 406);
  assert.match(g.errors![0]!.message, /\/api\/v1\/partner\/probe-file/);
});

s("GET /graphql runs queries from the query string; browsers get GraphiQL", async () => {
  const p = await tk.partner({ credits: 42 });
  const app = (await import("../../transports/http.ts")).createHttpApp(tk.kernel, { adminToken: "x" });
  const get = (url: string, headers: Record<string, string>) =>
    Promise.resolve(app.fetch(new Request(`http://t${url}`, { headers: { "user-agent": "tests/1.0", ...headers } })));
  const res = await get(`/graphql?query=${encodeURIComponent("{ me { credits_remaining } }")}`, {
    authorization: `Bearer ${p.key}`,
    accept: "application/json",
  });
  assert.is(res.status, 200);
  assert.is(((await res.json()) as any).data.me.credits_remaining, 42);
  const page = await get("/graphql", { accept: "text/html" });
  assert.is(page.status, 200);
  const html = await page.text();
  assert.match(html, /renderYogaGraphiQL/, "GraphiQL itself, inlined from @graphql-yoga/render-graphiql");
  assert.not.match(html, /unpkg\.com|jsdelivr|cdnjs/, "nothing loaded from a CDN: it works offline");
  const mutation = await get(`/graphql?query=${encodeURIComponent("mutation { probeFail }")}`, {
    authorization: `Bearer ${p.key}`,
    accept: "application/json",
  });
  assert.is(mutation.status, 405, "mutations only over POST");
});

const withoutId = ({ request_id: _r, ...rest }: Record<string, unknown>) => rest;

t.run();
s.run();
