// The config file under Deno (issue 38 item 2): `deno task start` in this repository with MEDIAGATE_CONFIG
// naming a mediagate.config.ts outside it, which imports "mediagate" (deno.json's import map), spreads
// defaultPlugins, adds the example plugin by its path and disables an area. The example's route answers over
// REST and GraphQL, the disabled area's route is a 404, and SIGTERM ends the task with exit 0.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { ROOT, spawnMain, stopsCleanly } from "../helpers/main-process.ts";
import { freePort } from "../helpers/server.ts";

const DENO = join(ROOT, "node_modules", ".bin", "deno");
const EXAMPLE = join(ROOT, "examples", "text-stats-plugin", "index.ts");
const TOKEN = "adm_denoConfigTest7Qw2Er4Ty6Ui8Op0As2Df4Gh";

const dirs: string[] = [];
test.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

test("deno task start serves the plugins of a mediagate.config.ts that MEDIAGATE_CONFIG names", async () => {
  assert.ok(existsSync(DENO), "deno is a dev dependency (node_modules/.bin/deno)");
  const project = mkdtempSync(join(tmpdir(), "mediagate-deno-config-"));
  dirs.push(project);
  writeFileSync(
    join(project, "mediagate.config.ts"),
    `import { defaultPlugins, defineServerConfig } from "mediagate";

export default defineServerConfig({
  plugins: [...defaultPlugins, ${JSON.stringify(EXAMPLE)}],
  disable: ["social"],
});
`,
  );
  const port = await freePort();
  const server = spawnMain(
    {
      PORT: String(port),
      DATA_DIR: join(project, "data"),
      ADMIN_TOKEN: TOKEN,
      LOG_LEVEL: "warn",
      DENO_NO_UPDATE_CHECK: "1",
      MEDIAGATE_CONFIG: join(project, "mediagate.config.ts"),
    },
    [DENO, "task", "start"],
  );
  try {
    await server.waitFor("mediagate listening on", 180_000);
    const key = /svc_[A-Za-z0-9_-]+/.exec(server.output())?.[0];
    assert.ok(key, `no demo partner key printed:\n${server.output()}`);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": "deno-test/1" };
    const base = `http://127.0.0.1:${port}`;
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });

    const rest = await post("/api/v1/partner/text-stats", { text: "One two. Three!" });
    const body = await rest.json();
    assert.is(rest.status, 200, JSON.stringify(body));
    assert.equal(
      { characters: body.characters, words: body.words, sentences: body.sentences },
      { characters: 15, words: 3, sentences: 2 },
    );
    const gql = await post("/graphql", { query: 'mutation { textStats(input: { text: "Hi there." }) { words } }' });
    const gqlBody = await gql.json();
    assert.equal(gqlBody.data, { textStats: { words: 2 } }, JSON.stringify(gqlBody));
    const social = await post("/api/v1/partner/social-download", { url: "https://example.com/v/1" });
    assert.is(social.status, 404, "the disabled area's route");
    await social.body?.cancel();

    await stopsCleanly(server);
  } finally {
    await server.kill();
  }
});

test.run();
