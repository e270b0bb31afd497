// Plugins from a config file (config-file.ts), set up as a third party would: a project folder with
// `mediagate` in its node_modules, a plugin of its own beside mediagate.config.ts and a plugin package. The
// loaded list boots with createServer: the path plugin's route answers, the disabled area's route is a 404
// and its GraphQL fields are absent. A missing plugin stops main.ts with one line naming it; MEDIAGATE_CONFIG
// names a JSON config, which spells the spread as "...defaultPlugins".
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { compileRegistry } from "../../core/registry.ts";
import { BootError, createServer, defaultPlugins, loadConfig, loadServerConfig } from "../../server.ts";
import { seedEmbeddedDataDir } from "../../testkit/pglite-template.ts";
import { fieldNames } from "../../transports/graphql/names.ts";
import { ROOT, spawnMain } from "../helpers/main-process.ts";
import { freePort } from "../helpers/server.ts";

const TOKEN = "adm_icoDc5nji480w8xsHo9l7F796diou6aQ52P3YfiE";
// The edge refuses requests without a user agent (core/edge.ts), as the spec asks.
const UA = "mediagate-tests/1.0";

/** The plugin file a third party would write (also createServer's test plugin). */
const ECHO_PLUGIN = readFileSync(join(import.meta.dirname, "fixtures", "echo-words.ts"), "utf8");

const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

/** A project folder: mediagate and zod installed (linked), echo/index.ts, and a plugin package importable only. */
function project(files: Record<string, string>): string {
  const dir = tempDir("mediagate-project-");
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(ROOT, join(dir, "node_modules", "mediagate"), "dir");
  symlinkSync(join(ROOT, "node_modules", "zod"), join(dir, "node_modules", "zod"), "dir");
  const pkg = join(dir, "node_modules", "mediagate-plugin-quiet");
  mkdirSync(pkg);
  writeFileSync(
    join(pkg, "package.json"),
    JSON.stringify({ name: "mediagate-plugin-quiet", type: "module", exports: { ".": { import: "./index.js" } } }),
  );
  writeFileSync(
    join(pkg, "index.js"),
    'import { definePlugin } from "mediagate/plugin";\nexport const plugin = definePlugin({ name: "quiet" });\n',
  );
  mkdirSync(join(dir, "echo"));
  writeFileSync(join(dir, "echo", "index.ts"), ECHO_PLUGIN);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const CONFIG_TS = `import { defaultPlugins, defineServerConfig } from "mediagate";

export default defineServerConfig({
  plugins: [...defaultPlugins, "./echo/index.ts", "mediagate-plugin-quiet"],
  disable: ["social"],
});
`;

const t = suite("config file");

t.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

t("no config file: the spec's areas, as today", async () => {
  const loaded = await loadServerConfig({ cwd: tempDir("mediagate-empty-"), env: {}, defaults: defaultPlugins });
  assert.is(loaded.file, undefined);
  assert.equal(loaded.plugins, defaultPlugins);
});

t("mediagate.config.ts: a path plugin answers, the disabled area is a 404 and absent from GraphQL", async () => {
  const dir = project({ "mediagate.config.ts": CONFIG_TS });
  const loaded = await loadServerConfig({ cwd: dir, env: {}, defaults: defaultPlugins });
  assert.is(loaded.file, join(dir, "mediagate.config.ts"));
  const names = loaded.plugins.map((p) => p.name);
  assert.equal(names, [...defaultPlugins.map((p) => p.name).filter((n) => n !== "social"), "echo-words", "quiet"]);

  const dataDir = join(dir, "data");
  await seedEmbeddedDataDir(dataDir);
  const server = createServer({
    plugins: loaded.plugins,
    config: loadConfig({ DATA_DIR: dataDir, ADMIN_TOKEN: TOKEN, LOG_LEVEL: "silent", SANDBOX_LATENCY_MS: "0" }),
  });
  try {
    const { kernel } = await server.ready();
    const { apiKey } = await kernel.accounts.create({ name: "Third party", credits: 10 });
    const call = (path: string, body: unknown) =>
      server.fetch(
        new Request(`http://mediagate.test${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "user-agent": UA },
          body: JSON.stringify(body),
        }),
      );

    const echo = await call("/api/v1/partner/echo-words", { text: "one two three" });
    assert.is(echo.status, 200);
    assert.is((await echo.json()).words, 3);
    const social = await call("/api/v1/partner/social-download", { url: "https://example.com/v/1" });
    assert.is(social.status, 404, "the disabled area's route");
    await social.body?.cancel();

    const schema = await call("/graphql", {
      query: "{ __schema { queryType { fields { name } } mutationType { fields { name } } } }",
    });
    assert.is(schema.status, 200);
    const { data } = await schema.json();
    const fields = [...data.__schema.queryType.fields, ...data.__schema.mutationType.fields].map(
      (f: { name: string }) => f.name,
    );
    assert.ok(fields.includes("echoWords"), "the path plugin's field");
    assert.ok(fields.length > 10, "the other areas' fields");
    // The disabled area's fields, as the full list names them (transports/graphql/names.ts).
    const socialFields = [...fieldNames(compileRegistry(defaultPlugins).operations)]
      .filter(([op]) => op.plugin === "social")
      .map(([, name]) => name);
    assert.ok(socialFields.length >= 3, "social has fields when enabled");
    assert.equal(
      fields.filter((f: string) => socialFields.includes(f)),
      [],
      "no field of the disabled area",
    );
  } finally {
    await server.close();
  }
});

t("MEDIAGATE_CONFIG names a JSON config, before the folder's own mediagate.config.ts", async () => {
  const dir = project({
    "mediagate.config.ts": CONFIG_TS,
    "custom.json": JSON.stringify({ plugins: ["./echo/index.ts", "...defaultPlugins"], disable: ["music"] }),
  });
  const loaded = await loadServerConfig({
    cwd: dir,
    env: { MEDIAGATE_CONFIG: "custom.json" },
    defaults: defaultPlugins,
  });
  assert.is(loaded.file, join(dir, "custom.json"));
  const names = loaded.plugins.map((p) => p.name);
  assert.equal(names, ["echo-words", ...defaultPlugins.map((p) => p.name).filter((n) => n !== "music")]);
});

t(
  "a project whose package.json has no type (npm init's): its .ts config and .ts plugin load as ES modules",
  async () => {
    // Under tsx such a project's .ts files are CommonJS; importing the config that way failed with "Cannot
    // require() ES Module ... in a cycle".
    const dir = project({
      "package.json": JSON.stringify({ name: "commonjs-project", version: "1.0.0", main: "index.js" }),
      "mediagate.config.ts": CONFIG_TS,
    });
    const loaded = await loadServerConfig({ cwd: dir, env: {}, defaults: defaultPlugins });
    assert.is(loaded.file, join(dir, "mediagate.config.ts"));
    assert.equal(
      loaded.plugins.slice(-2).map((p) => p.name),
      ["echo-words", "quiet"],
    );
    assert.is(loaded.plugins[0], defaultPlugins[0], "the config's mediagate is the server's own, not a second copy");
  },
);

t("a plugin that does not load, or a name disable does not know, is one line naming it", async () => {
  const dir = project({
    "mediagate.config.mjs": 'export default { plugins: ["./nope/index.ts"] };\n',
    "typo.json": JSON.stringify({ disable: ["socail"] }),
  });
  const missing = await loadServerConfig({ cwd: dir, env: {}, defaults: defaultPlugins }).catch((e: unknown) => e);
  assert.instance(missing, BootError);
  assert.match((missing as Error).message, /^mediagate\.config\.mjs: plugin "\.\/nope\/index\.ts" failed to load: /);
  assert.not.match((missing as Error).message, /\n/);

  const typo = await loadServerConfig({
    cwd: dir,
    env: { MEDIAGATE_CONFIG: "typo.json" },
    defaults: defaultPlugins,
  }).catch((e: unknown) => e);
  assert.instance(typo, BootError);
  assert.match((typo as Error).message, /^typo\.json: disable names "socail"/);

  writeFileSync(join(dir, "provider.json"), JSON.stringify({ disable: ["social-extractor"] }));
  const provider = await loadServerConfig({
    cwd: dir,
    env: { MEDIAGATE_CONFIG: "provider.json" },
    defaults: defaultPlugins,
  }).catch((e: unknown) => e);
  assert.instance(provider, BootError);
  assert.match(
    (provider as Error).message,
    /"social-extractor", which provides "social\.extract" that plugin "social" requires/,
  );
});

t("main.ts stops with that one line and exit 1", async () => {
  const dir = project({ "broken.config.ts": 'export default { plugins: ["mediagate-plugin-absent"] };\n' });
  const main = spawnMain({
    PORT: String(await freePort()),
    DATA_DIR: join(dir, "data"),
    ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: "warn",
    MEDIAGATE_CONFIG: join(dir, "broken.config.ts"),
  });
  const exit = await main.exit(60_000);
  if (!exit) await main.kill();
  const out = main.output();
  assert.is(exit?.code, 1, out);
  const lines = out.split("\n").filter((l) => l.trim());
  assert.is(lines.length, 1, out);
  assert.match(
    lines[0]!,
    /^mediagate cannot start: \S*broken\.config\.ts: plugin "mediagate-plugin-absent" failed to load: Cannot find (module|package)/,
  );
});

t.run();
