// Writes schema/openapi.json, schema/admin-openapi.json and schema/schema.graphql from the registered plugins: `npm run schema`. CI checks
// the committed files are current (test/schema.test.ts), so a declaration change without regenerated
// schemas fails the build. Both are derived from the same registry the server builds its routes from.
import { writeFileSync } from "node:fs";
import process from "node:process";
import { resolve } from "node:path";
import { lexicographicSortSchema, printSchema } from "graphql";
import { compileRegistry } from "../core/registry.ts";
import { plugins } from "../plugins/index.ts";
import { buildGraphqlSchema } from "../transports/graphql/schema.ts";
import { buildAdminOpenApi, buildOpenApi } from "../transports/rest/openapi.ts";
import { ADMIN_BASE, adminRouteDocs } from "../transports/admin/routes.ts";
import pkg from "../package.json" with { type: "json" };

export function openApiText(): string {
  return JSON.stringify(buildOpenApi(compileRegistry(plugins), pkg.version), null, 2) + "\n";
}

export function adminOpenApiText(): string {
  return JSON.stringify(buildAdminOpenApi(adminRouteDocs(compileRegistry(plugins)), ADMIN_BASE, pkg.version), null, 2) + "\n";
}

/** The GraphQL SDL, types and fields in lexicographic order so a diff shows only what a declaration changed. */
export function graphqlText(): string {
  return printSchema(lexicographicSortSchema(buildGraphqlSchema(compileRegistry(plugins), null))) + "\n";
}

if (process.argv[1]?.endsWith("generate-schema.ts")) {
  writeFileSync(resolve(import.meta.dirname!, "../schema/openapi.json"), openApiText());
  writeFileSync(resolve(import.meta.dirname!, "../schema/admin-openapi.json"), adminOpenApiText());
  writeFileSync(resolve(import.meta.dirname!, "../schema/schema.graphql"), graphqlText());
  console.log("wrote schema/openapi.json, schema/admin-openapi.json and schema/schema.graphql");
}
