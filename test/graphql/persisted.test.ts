// Persisted operations (transports/graphql/persisted.ts): a published manifest of documents a client refers
// to by id; with GRAPHQL_PERSISTED_ONLY=on an allow-list, over HTTP and over WebSocket alike.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "graphql-ws";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import WebSocket from "ws";
import account from "../../plugins/account/index.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { PERSISTED_ERRORS } from "../../transports/graphql/persisted.ts";
import { serveHttp } from "../../transports/http.ts";

const ME = "query Me { me { name credits_remaining } }";
const hex = (text: string) => createHash("sha256").update(text).digest("hex");
const dir = mkdtempSync(join(tmpdir(), "persisted-"));
const manifest = join(dir, "persisted-operations.json");
writeFileSync(manifest, JSON.stringify({ [`sha256:${hex(ME)}`]: ME }));

/** POST /graphql with a body of our own (documentId is not a field graphql() of the test kit sends). */
async function post(tk: TestKernel, key: string, body: Record<string, unknown>) {
  const res = await tk.fetch(
    new Request("http://mediagate.test/graphql", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": "persisted-test/1" },
      body: JSON.stringify(body),
    }),
  );
  return {
    status: res.status,
    body: (await res.json()) as {
      data?: any;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    },
  };
}

class AgentWebSocket extends WebSocket {
  constructor(url: string | URL, protocols?: string | string[]) {
    super(url, protocols, { headers: { "user-agent": "persisted-test/1" } });
  }
}

const t = suite("persisted operations");
let only: TestKernel;
let open: TestKernel;
t.before(async () => {
  only = await createTestKernel({
    plugins: [account],
    env: { GRAPHQL_PERSISTED_OPERATIONS: manifest, GRAPHQL_PERSISTED_ONLY: "on" },
  });
  open = await createTestKernel({ plugins: [account], env: { GRAPHQL_PERSISTED_OPERATIONS: manifest } });
});
t.after(async () => {
  await only.close();
  await open.close();
});

t("allow-list mode over HTTP: ids run their published document; any text, or an unknown id, is refused", async () => {
  const p = await only.partner({ name: "Acme", credits: 7 });
  const byId = await post(only, p.key, { documentId: `sha256:${hex(ME)}` });
  assert.equal(byId.body.data, { me: { name: "Acme", credits_remaining: 7 } });
  const apollo = await post(only, p.key, { extensions: { persistedQuery: { version: 1, sha256Hash: hex(ME) } } });
  assert.equal(apollo.body.data, { me: { name: "Acme", credits_remaining: 7 } });
  const text = await post(only, p.key, { query: ME });
  assert.is(text.status, 403);
  assert.is(text.body.errors![0]!.message, PERSISTED_ERRORS.only);
  assert.is(text.body.data, undefined, "nothing ran");
  const viaGet = await only.fetch(
    new Request(`http://mediagate.test/graphql?documentId=${encodeURIComponent(`sha256:${hex(ME)}`)}`, {
      headers: { authorization: `Bearer ${p.key}`, accept: "application/json", "user-agent": "persisted-test/1" },
    }),
  );
  assert.equal(
    ((await viaGet.json()) as any).data,
    { me: { name: "Acme", credits_remaining: 7 } },
    "documentId in a GET's query string",
  );
  const unknown = await post(only, p.key, { documentId: "sha256:0000" });
  assert.is(unknown.status, 404);
  assert.is(unknown.body.errors![0]!.message, PERSISTED_ERRORS.notFound);
  const usage = await only.request("GET", "/usage", { key: p.key });
  assert.is(
    usage.body.per_endpoint.find((e: any) => e.endpoint === "GET /me").calls,
    3,
    "two ids over POST, one over GET; the refused ones ran nothing",
  );
});

t("allow-list mode over WebSocket: the same rule", async () => {
  const p = await only.partner({ name: "Socket", credits: 3 });
  const server = await serveHttp(only.kernel, { adminToken: only.adminToken, port: 0, hostname: "127.0.0.1" });
  const client = createClient({
    url: new URL("/graphql", server.url).toString().replace(/^http/, "ws"),
    webSocketImpl: AgentWebSocket,
    connectionParams: { authorization: `Bearer ${p.key}` },
    retryAttempts: 0,
  });
  const first = async (payload: Record<string, unknown>) => {
    for await (const r of client.iterate(payload as never) as AsyncIterable<any>) return r;
    return undefined;
  };
  try {
    const byId = await first({ query: "", documentId: `sha256:${hex(ME)}` });
    assert.equal(byId.data, { me: { name: "Socket", credits_remaining: 3 } });
    const text = await first({ query: ME }).catch((errors: unknown) => ({ errors }));
    assert.is((text as any).errors[0].message, PERSISTED_ERRORS.only, JSON.stringify(text));
  } finally {
    await client.dispose();
    await server.close();
  }
});

t(
  "without GRAPHQL_PERSISTED_ONLY both work; ONLY without a manifest, or a broken manifest, stops the boot",
  async () => {
    const p = await open.partner({ name: "Open", credits: 1 });
    assert.equal((await post(open, p.key, { documentId: `sha256:${hex(ME)}` })).body.data, {
      me: { name: "Open", credits_remaining: 1 },
    });
    assert.equal((await graphql(open, "{ me { name } }", undefined, { key: p.key })).data, { me: { name: "Open" } });
    // Apollo's retry after a miss: an unknown hash with its text runs the text when the list is not exclusive.
    const retry = await post(open, p.key, {
      query: "{ me { name } }",
      extensions: { persistedQuery: { version: 1, sha256Hash: "ab".repeat(32) } },
    });
    assert.equal(retry.body.data, { me: { name: "Open" } });
    for (const env of [
      { GRAPHQL_PERSISTED_ONLY: "on" },
      { GRAPHQL_PERSISTED_OPERATIONS: join(dir, "missing.json") },
    ] as Array<Record<string, string>>) {
      const broken = join(dir, "broken.json");
      writeFileSync(broken, "[1, 2]");
      for (const e of [env, { GRAPHQL_PERSISTED_OPERATIONS: broken }]) {
        const err = await createTestKernel({ plugins: [account], env: e }).then(
          async (tk) => (await tk.close(), undefined),
          (error: unknown) => error as Error,
        );
        assert.ok(err, JSON.stringify(e));
        assert.match(err!.message, /GRAPHQL_PERSISTED_(ONLY|OPERATIONS)/);
      }
    }
  },
);

t.run();
