// Writes schema/openapi.json from the registered plugins: `npm run schema`. CI checks the committed file is
// current (test/schema.test.ts), so a declaration change without a regenerated schema fails the build.
import { writeFileSync } from "node:fs";
import process from "node:process";
import { resolve } from "node:path";
import { compileRegistry } from "../core/registry.ts";
import { plugins } from "../plugins/index.ts";
import { buildOpenApi } from "../transports/rest/openapi.ts";
import pkg from "../package.json" with { type: "json" };

export function openApiText(): string {
  return JSON.stringify(buildOpenApi(compileRegistry(plugins), pkg.version), null, 2) + "\n";
}

if (process.argv[1]?.endsWith("generate-schema.ts")) {
  writeFileSync(resolve(import.meta.dirname!, "../schema/openapi.json"), openApiText());
  console.log("wrote schema/openapi.json");
}
