import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildSchema } from "graphql";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { adminOpenApiText, graphqlText, openApiText, writeClientTypes } from "../scripts/generate-schema.ts";

const t = suite("generated schema artifacts");

const committed = (name: string) => readFileSync(resolve(import.meta.dirname!, "../schema", name), "utf8");

t("schema/openapi.json is current (run `npm run schema` after changing a declaration)", () => {
  assert.fixture(committed("openapi.json"), openApiText(), "schema/openapi.json is stale: run `npm run schema`");
});

t("schema/admin-openapi.json is current (run `npm run schema` after changing an admin route)", () => {
  assert.fixture(
    committed("admin-openapi.json"),
    adminOpenApiText(),
    "schema/admin-openapi.json is stale: run `npm run schema`",
  );
});

t("the example clients' generated types are current (openapi.d.ts, graphql-env.d.ts)", () => {
  const dir = mkdtempSync(join(tmpdir(), "client-types-"));
  try {
    writeClientTypes(dir);
    for (const name of ["openapi.d.ts", "graphql-env.d.ts"]) {
      const fresh = readFileSync(join(dir, name), "utf8");
      const kept = readFileSync(resolve(import.meta.dirname!, "../examples/partner-client", name), "utf8");
      assert.fixture(kept, fresh, `examples/partner-client/${name} is stale: run \`npm run schema\``);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t("schema/schema.graphql is current (run `npm run schema` after changing a declaration)", () => {
  assert.fixture(committed("schema.graphql"), graphqlText(), "schema/schema.graphql is stale: run `npm run schema`");
});

t("every registered operation is in the document", () => {
  const doc = JSON.parse(openApiText());
  for (const path of [
    "/api/v1/partner/me",
    "/api/v1/partner/credits",
    "/api/v1/partner/usage",
    "/api/v1/partner/transactions",
  ])
    assert.ok(doc.paths[path]?.get, path);
  const tx = doc.paths["/api/v1/partner/transactions"].get.parameters
    .filter((p: any) => p.in === "query")
    .map((p: any) => p.name);
  assert.equal(tx, ["limit", "offset"]);
});

t("every registered operation is a GraphQL field, and the job subscription is there", () => {
  const schema = buildSchema(graphqlText());
  const query = schema.getQueryType()!.getFields();
  for (const name of ["credits", "me", "usage", "transactions"]) assert.ok(query[name], `Query.${name}`);
  assert.equal(
    query.transactions!.args.map((a) => a.name),
    ["limit", "offset"],
  );
  const jobUpdates = schema.getSubscriptionType()!.getFields().jobUpdates!;
  assert.equal(
    jobUpdates.args.map((a) => `${a.name}: ${a.type}`),
    ["id: String!"],
  );
  assert.is(String(jobUpdates.type), "JobUpdate!");
});

t.run();
