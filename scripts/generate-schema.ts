// Writes schema/openapi.json, schema/admin-openapi.json and schema/schema.graphql from the registered plugins: `npm run schema`. CI checks
// the committed files are current (test/schema.test.ts), so a declaration change without regenerated
// schemas fails the build. Both are derived from the same registry the server builds its routes from.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { lexicographicSortSchema, printSchema } from "graphql";
import { compileRegistry } from "../core/registry.ts";
import pkg from "../package.json" with { type: "json" };
import { plugins } from "../plugins/index.ts";
import { ADMIN_BASE, adminRouteDocs } from "../transports/admin/routes.ts";
import { buildGraphqlSchema } from "../transports/graphql/schema.ts";
import { buildAdminOpenApi, buildOpenApi } from "../transports/rest/openapi.ts";

export function openApiText(): string {
  return `${JSON.stringify(buildOpenApi(compileRegistry(plugins), pkg.version), null, 2)}\n`;
}

export function adminOpenApiText(): string {
  return `${JSON.stringify(buildAdminOpenApi(adminRouteDocs(compileRegistry(plugins)), ADMIN_BASE, pkg.version), null, 2)}\n`;
}

const root = resolve(import.meta.dirname!, "..");

/**
 * The typed clients' generated types (examples/partner-client): openapi-typescript over schema/openapi.json and
 * gql.tada's introspection over schema/schema.graphql, written to `dir` (the example's own folder, or a
 * test's temporary one to compare with what is committed).
 */
export function writeClientTypes(dir: string): void {
  const bin = (name: string) => resolve(root, "node_modules/.bin", name);
  execFileSync(bin("openapi-typescript"), [resolve(root, "schema/openapi.json"), "-o", resolve(dir, "openapi.d.ts")], {
    cwd: root,
    stdio: "pipe",
  });
  execFileSync(
    bin("gql.tada"),
    [
      "generate-output",
      "-c",
      resolve(root, "examples/partner-client/tsconfig.json"),
      "-o",
      resolve(dir, "graphql-env.d.ts"),
    ],
    { cwd: root, stdio: "pipe" },
  );
}

/** The GraphQL SDL, types and fields in lexicographic order so a diff shows only what a declaration changed. */
export function graphqlText(): string {
  return `${printSchema(lexicographicSortSchema(buildGraphqlSchema(compileRegistry(plugins), null)))}\n`;
}

if (process.argv[1]?.endsWith("generate-schema.ts")) {
  writeFileSync(resolve(import.meta.dirname!, "../schema/openapi.json"), openApiText());
  writeFileSync(resolve(import.meta.dirname!, "../schema/admin-openapi.json"), adminOpenApiText());
  writeFileSync(resolve(import.meta.dirname!, "../schema/schema.graphql"), graphqlText());
  writeClientTypes(resolve(root, "examples/partner-client"));
  console.log(
    "wrote schema/openapi.json, schema/admin-openapi.json, schema/schema.graphql and the example clients' types",
  );
}
