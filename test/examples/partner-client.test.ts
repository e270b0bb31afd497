// The typed clients of examples/partner-client against a live server (a real port, the sandbox image
// provider; the test lives here, not beside them: it starts a kernel, which an example, held to the public
// plugin API, may not import): the REST client submits,
// polls and downloads; the GraphQL client submits, follows the job over the WebSocket subscription and reads
// the result. `typecheck()` is never run: `tsc` (npm test) checks that the generated types refuse a wrong
// field, path or property, through `@ts-expect-error` lines that fail the build if they stop being errors.
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { resolve } from "node:path";
import type { ResultOf } from "gql.tada";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { generateAndFollow, type ImageStatus } from "../../examples/partner-client/graphql-client.ts";
import { generateImage, partnerClient } from "../../examples/partner-client/rest-client.ts";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { type HttpServer, serveHttp } from "../../transports/http.ts";

const t = suite("typed clients against a live server");
let tk: TestKernel;
let server: HttpServer;
/** A port free now, so PUBLIC_URL (which media links are made from) can name it before the server listens. */
function freePort(): Promise<number> {
  return new Promise((done) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

t.before(async () => {
  const port = await freePort();
  tk = await createTestKernel({
    plugins: [account, imagesSandbox, images],
    start: true,
    env: { SANDBOX_LATENCY_MS: "300", PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
  server = await serveHttp(tk.kernel, { adminToken: tk.adminToken, port, hostname: "127.0.0.1" });
});
t.after(async () => {
  await server.close();
  await tk.close();
});

const PNG = [0x89, 0x50, 0x4e, 0x47];

t("REST (openapi-fetch + openapi-typescript): submit, follow, download", async () => {
  const { key } = await tk.partner({ credits: 100 });
  // Every 150 ms: image-status allows 60 a minute, so a loaded machine has 9 s before a poll is refused.
  const result = await generateImage(server.url, key, "a red kite over a beach", 150);
  assert.equal(result.seen.at(-1), "success");
  assert.ok(result.seen.includes("pending"), `followed from pending: ${result.seen}`);
  assert.equal([...result.bytes.slice(0, 4)], PNG, "the file is a PNG");
  const me = await partnerClient(server.url, key).GET("/api/v1/partner/me");
  assert.is(me.data?.credits_remaining, 100 - result.creditsUsed, "charged once, the submission's price");
});

t("GraphQL (gql.tada + graphql-ws): submit, follow the subscription to its end, read the result", async () => {
  const { key } = await tk.partner({ credits: 100 });
  const followed = await generateAndFollow(server.url, key, "a lighthouse in fog");
  assert.match(followed.submitted!.public_id!, /^svc-[0-9a-f]{8}$/);
  assert.ok(followed.updates.length >= 1);
  assert.ok(followed.updates.at(-1)!.terminal);
  assert.is(followed.status!.status, "success");
  assert.match(followed.status!.image_url!, /^http:\/\/127\.0\.0\.1:\d+\/media\//);
});

t("every GraphQL document of the example is valid against schema/schema.graphql (gql.tada check)", () => {
  const root = resolve(import.meta.dirname!, "../..");
  const out = spawnSync(
    resolve(root, "node_modules/.bin/gql.tada"),
    ["check", "-c", "examples/partner-client/tsconfig.json"],
    { cwd: root, encoding: "utf8" },
  );
  assert.is(out.status, 0, out.stdout + out.stderr);
});

// Compile-time checks only (never called).
export function typecheck(url: string, key: string): void {
  const client = partnerClient(url, key);
  // @ts-expect-error: no such field in the body of POST /generate-image
  void client.POST("/api/v1/partner/generate-image", { body: { promt: "typo" } });
  // @ts-expect-error: no such path
  void client.GET("/api/v1/partner/image-statuses");
  void client.GET("/api/v1/partner/transactions", { params: { query: { limit: 5 } } }).then((r) => {
    // @ts-expect-error: the ledger entry has no `cost`
    void r.data?.transactions[0]?.cost;
  });
  const status = {} as ResultOf<typeof ImageStatus>;
  // @ts-expect-error: `prompt` was not selected by the ImageStatus document
  void status.imageStatus?.prompt;
}

t.run();
