// The API describes itself: /openapi.json (the partner API), /openapi/admin.json (the admin API), and /docs,
// a human page rendering them with Swagger UI served from its npm package (swagger-ui-dist): no CDN, so the
// page works offline and on a network that blocks third-party hosts.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { H3 } from "h3";
import type { Kernel } from "../../core/kernel.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import pkg from "../../package.json" with { type: "json" };
import { ADMIN_BASE } from "../admin/routes.ts";
import { requestIdOf } from "../http-conventions.ts";
import { type AdminRouteDoc, buildAdminOpenApi, buildOpenApi } from "./openapi.ts";
import { json } from "./respond.ts";

const DOCS_PATH = "/docs";
/** The only files of the package the page needs; nothing else under node_modules is reachable. */
const ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
};

const assetDir = (): string => dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

// The page's own script is a file too (/docs/assets/init.js): the Content-Security-Policy below then needs
// no 'unsafe-inline' for scripts.
const INIT_JS = `window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    urls: [{ url: "/openapi.json", name: "Partner API" }, { url: "/openapi/admin.json", name: "Admin API" }],
    dom_id: "#docs",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout",
  });
});
`;

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mediagate API</title>
<link rel="stylesheet" href="${DOCS_PATH}/assets/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="${DOCS_PATH}/assets/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/assets/swagger-ui-standalone-preset.js"></script>
<script src="${DOCS_PATH}/assets/init.js"></script>
</body>
</html>
`;

// Swagger UI draws with inline styles and data: images; everything else comes from this origin.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

export function mountDocs(app: H3, kernel: Kernel, adminRoutes: readonly AdminRouteDoc[]): void {
  // Built once, on first ask: the registry is frozen at boot.
  let partnerDoc: string | undefined;
  let adminDoc: string | undefined;
  const document = (text: string) =>
    new Response(text, {
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "public, max-age=300" },
    });
  app.get("/openapi.json", () => document((partnerDoc ??= JSON.stringify(buildOpenApi(kernel.registry, pkg.version)))));
  app.get("/openapi/admin.json", () =>
    document((adminDoc ??= JSON.stringify(buildAdminOpenApi(adminRoutes, ADMIN_BASE, pkg.version)))),
  );
  const html = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
  };
  app.get(DOCS_PATH, () => new Response(PAGE, { headers: html }));
  app.get(`${DOCS_PATH}/assets/:file`, async (event) => {
    const file = event.context.params?.file ?? "";
    if (file === "init.js")
      return new Response(INIT_JS, {
        headers: { "content-type": "text/javascript; charset=utf-8", "x-content-type-options": "nosniff" },
      });
    if (!Object.hasOwn(ASSETS, file))
      return json(404, { error: KERNEL_ERRORS.notFound, request_id: requestIdOf(event) });
    const type = ASSETS[file]!;
    return new Response(await readFile(join(assetDir(), file)), {
      headers: { "content-type": type, "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
    });
  });
}
