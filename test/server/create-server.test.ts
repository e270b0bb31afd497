// The public server API (server.ts, the package root): createServer over a plugin of a third party's own,
// answering in process through `fetch` (REST and GraphQL) and over HTTP once `listen` has started the
// servers; `close` shuts both down; a plugin that cannot boot rejects `ready`, `fetch` and `listen` with
// one BootError naming it, and `close` still ends.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { definePlugin } from "../../core/plugin.ts";
import { BootError, createServer, defaultPlugins, images, loadConfig, social } from "../../server.ts";
import { seedEmbeddedDataDir } from "../../testkit/pglite-template.ts";

const TOKEN = "adm_icoDc5nji480w8xsHo9l7F796diou6aQ52P3YfiE";
// The edge refuses requests without a user agent (core/edge.ts), as the spec asks.
const UA = "mediagate-tests/1.0";

import echoWords from "./fixtures/echo-words.ts";

const dirs: string[] = [];
/** A DATA_DIR of its own, seeded with the embedded database's files (no initdb). */
async function dataDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "mediagate-server-"));
  dirs.push(dir);
  await seedEmbeddedDataDir(dir);
  return dir;
}

const config = (dir: string) =>
  loadConfig({ DATA_DIR: dir, ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent", HOST: "127.0.0.1" });

const post = (url: string, key: string, body: unknown) =>
  new Request(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": UA },
    body: JSON.stringify(body),
  });

const t = suite("createServer");

t.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

t("the package root hands out the spec's areas, each also by name", () => {
  assert.ok(defaultPlugins.length > 10);
  assert.ok(defaultPlugins.includes(images));
  assert.ok(defaultPlugins.includes(social));
});

t("a plugin of one's own answers over fetch (REST and GraphQL) and over HTTP after listen", async () => {
  const server = createServer({ plugins: [echoWords], config: config(await dataDir()) });
  try {
    const { kernel } = await server.ready();
    const { apiKey } = await kernel.accounts.create({ name: "Third party", credits: 10 });

    const rest = await server.fetch(post("http://mediagate.test/api/v1/partner/echo-words", apiKey, { text: "a b c" }));
    assert.is(rest.status, 200);
    assert.is((await rest.json()).words, 3);

    const gql = await server.fetch(
      post("http://mediagate.test/graphql", apiKey, {
        query: 'mutation { echoWords(input: { text: "one two" }) { words } }',
      }),
    );
    assert.is(gql.status, 200);
    assert.equal((await gql.json()).data, { echoWords: { words: 2 } });

    const unknown = await server.fetch(
      new Request("http://mediagate.test/api/v1/partner/social-download", { method: "POST" }),
    );
    assert.is(unknown.status, 404, "an area not in the plugin list is not served");

    const { url, adminUrl, healthUrl } = await server.listen({ port: 0 });
    assert.ok(url, "the public API listens");
    assert.is(adminUrl, undefined);
    assert.is(healthUrl, undefined);
    const overHttp = await fetch(post(new URL("api/v1/partner/echo-words", url).href, apiKey, { text: "x" }));
    assert.is(overHttp.status, 200);
    assert.is((await overHttp.json()).words, 1);
    await server.close();
    const refused = await fetch(new URL("healthz", url)).then(
      () => "answered",
      () => "refused",
    );
    assert.is(refused, "refused", "closed: the port no longer answers");
  } finally {
    await server.close();
  }
});

t("a plugin that cannot boot rejects ready, fetch and listen with one line naming it", async () => {
  const needy = definePlugin({ name: "needy", requires: ["image.generate"] });
  const server = createServer({ plugins: [needy], config: config(await dataDir()) });
  const err = await server.ready().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(err, BootError);
  assert.match((err as Error).message, /needy/);
  assert.match((err as Error).message, /image\.generate/);
  assert.not.match((err as Error).message, /\n/);
  for (const call of [() => server.fetch(new Request("http://mediagate.test/healthz")), () => server.listen()]) {
    const again = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.is(again, err);
  }
  await server.close();
});

t.run();
