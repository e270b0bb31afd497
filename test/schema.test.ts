import { suite } from "uvu";
import * as assert from "uvu/assert";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { openApiText } from "../scripts/generate-schema.ts";

const t = suite("generated schema artifacts");

t("schema/openapi.json is current (run `npm run schema` after changing a declaration)", () => {
  const committed = readFileSync(resolve(import.meta.dirname!, "../schema/openapi.json"), "utf8");
  assert.fixture(committed, openApiText());
});

t("every registered operation is in the document", () => {
  const doc = JSON.parse(openApiText());
  for (const path of ["/api/v1/partner/me", "/api/v1/partner/credits", "/api/v1/partner/usage", "/api/v1/partner/transactions"]) assert.ok(doc.paths[path]?.get, path);
  const tx = doc.paths["/api/v1/partner/transactions"].get.parameters.map((p: any) => p.name);
  assert.equal(tx, ["limit", "offset"]);
});

t.run();
