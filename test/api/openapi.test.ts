// The API describes itself (docs/api.md "API documents"): /openapi.json and /openapi/admin.json are the committed
// schema files, valid OpenAPI 3.1 by an independent validator, every reference resolving, with readable
// operationIds, every status an operation can answer, and the error shape; /docs renders them from files this
// server serves (no CDN), and nothing else of node_modules is reachable through it.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { plugins } from "../../plugins/index.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";

const t = suite("OpenAPI documents and the docs page");
let tk: TestKernel;
t.before(async () => {
  tk = await createTestKernel({ plugins });
});
t.after(async () => {
  await tk.close();
});

const committed = (name: string) =>
  JSON.parse(readFileSync(resolve(import.meta.dirname!, "../../schema", name), "utf8"));

const get = (path: string) =>
  tk.fetch(new Request(`http://mediagate.test${path}`, { headers: { "user-agent": "docs-test/1" } }));

async function served(path: string): Promise<any> {
  const res = await get(path);
  assert.is(res.status, 200, path);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return res.json();
}

/** Every `$ref` of the document, and whether it points at something in it. */
function danglingRefs(doc: any): string[] {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (!node || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") {
        const target = v.startsWith("#/")
          ? v
              .slice(2)
              .split("/")
              .reduce<any>((at, seg) => at?.[decodeURIComponent(seg.replace(/~1/g, "/").replace(/~0/g, "~"))], doc)
          : undefined;
        if (target === undefined) out.push(v);
      } else walk(v);
    }
  };
  walk(doc);
  return out;
}

for (const [path, file] of [
  ["/openapi.json", "openapi.json"],
  ["/openapi/admin.json", "admin-openapi.json"],
] as const) {
  t(`${path} is schema/${file}, a valid OpenAPI 3.1 document whose references all resolve`, async () => {
    const doc = await served(path);
    assert.equal(doc, committed(file));
    const result = await new Validator().validate(doc);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2)?.slice(0, 2000));
    assert.equal(danglingRefs(doc), []);
  });
}

t("operationIds read like calls, and each operation lists what it can answer", async () => {
  const doc = await served("/openapi.json");
  const ids: string[] = [];
  for (const methods of Object.values<any>(doc.paths))
    for (const op of Object.values<any>(methods)) ids.push(op.operationId);
  assert.is(new Set(ids).size, ids.length, "unique");
  for (const id of ids) assert.match(id, /^[a-z][A-Za-z0-9]*$/, id);
  for (const id of [
    "generateImage",
    "getImageStatus",
    "getCredits",
    "getTransactions",
    "socialDownload",
    "deleteOmniVoices",
    "extendMusic",
  ])
    assert.ok(ids.includes(id), id);

  const generate = doc.paths["/api/v1/partner/generate-image"].post;
  assert.equal(
    Object.keys(generate.responses),
    ["202", "400", "401", "402", "403", "409", "413", "415", "429", "500", "503", "507"].filter(
      (s) => s in generate.responses,
    ),
  );
  // 503 and 507: an outage (the database or Redis out of reach, a full disk), which any operation can meet.
  for (const status of ["400", "401", "402", "429", "500", "503", "507"]) assert.ok(generate.responses[status], status);
  assert.ok(generate.parameters.some((p: any) => p.name === "Idempotency-Key" && p.in === "header"));
  const success = generate.responses[Object.keys(generate.responses)[0]!];
  assert.ok(success.content["application/json"].schema.properties.request_id);
  assert.ok(
    success.content["application/json"].schema.properties.generation_ids,
    "the declared output, not just request_id",
  );
  assert.ok(success.headers["X-Request-Id"] && success.headers.RateLimit && success.headers["Idempotent-Replayed"]);

  const status = doc.paths["/api/v1/partner/image-status/{id}"].get;
  assert.ok(status.responses["304"] && status.responses["404"]);
  assert.ok(status.parameters.some((p: any) => p.name === "If-None-Match"));
  const error = doc.components.schemas.Error;
  assert.equal(error.required, ["error"]);
  assert.ok(error.properties.request_id);
  assert.equal(
    doc.components.responses.TooManyRequests.content["application/json"].example.error,
    "Rate limit exceeded. Wait at least 10 seconds, then retry.",
  );
  assert.equal(doc.components.securitySchemes.partnerKey, {
    type: "http",
    scheme: "bearer",
    description: "The partner's `svc_partner_...` key.",
  });
});

t("the admin document lists every admin route with its body schema", async () => {
  const doc = await served("/openapi/admin.json");
  const routes = Object.entries<any>(doc.paths).flatMap(([p, ms]) =>
    Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`),
  );
  for (const r of [
    "POST /api/v1/admin/partners",
    "GET /api/v1/admin/partners/{partner_id}",
    "PATCH /api/v1/admin/partners/{partner_id}",
    "POST /api/v1/admin/partners/{partner_id}/credits",
    "GET /api/v1/admin/pauses",
    "PUT /api/v1/admin/pauses/{name}",
    "POST /api/v1/admin/partners/{partner_id}/rotate-key",
  ]) {
    assert.ok(routes.includes(r), r);
  }
  const credits =
    doc.paths["/api/v1/admin/partners/{partner_id}/credits"].post.requestBody.content["application/json"].schema;
  assert.equal(credits.properties.type.enum, ["purchase", "adjustment"]);
});

t("/docs: a page whose scripts and styles all come from this server, served from the npm package", async () => {
  const page = await get("/docs");
  assert.is(page.status, 200);
  assert.match(page.headers.get("content-type")!, /^text\/html/);
  assert.match(page.headers.get("content-security-policy")!, /script-src 'self'/);
  const html = await page.text();
  assert.not.match(html, /https?:\/\//, "no third-party host");
  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(assets.length >= 3, assets.join(" "));
  for (const asset of assets) {
    const res = await get(asset);
    assert.is(res.status, 200, asset);
    const body = await res.text();
    assert.ok(body.length > 0, asset);
    if (asset.endsWith("init.js")) assert.match(body, /\/openapi\.json/);
    if (asset.endsWith("swagger-ui-bundle.js")) assert.ok(body.length > 100_000, "the real bundle");
  }
  for (const probe of [
    "package.json",
    "constructor",
    "__proto__",
    "..%2Fpackage.json",
    "index.html",
    "swagger-ui.js.map",
  ]) {
    const res = await get(`/docs/assets/${probe}`);
    assert.is(res.status, 404, probe);
  }
});

t.run();
