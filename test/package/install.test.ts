// A stranger's project, end to end (issue 38 items 3 and 7, on Node): `npm pack` this checkout and the example
// plugin package (examples/text-stats-plugin), install both tarballs into a fresh temporary project whose
// package.json is what `npm init` writes (no "type": its .ts files are CommonJS to tsx) (`npm install --prefer-offline --ignore-scripts`, so npm's cache serves what it can), scaffold a plugin there
// with `npx mediagate new-plugin`, list it and the example (by its package name) in mediagate.config.ts beside
// the spec's areas, start the server with the installed `mediagate start`, and call both plugins over REST and
// GraphQL and a spec route beside them; SIGTERM ends it with exit 0.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { spawnMain, stopsCleanly } from "../helpers/main-process.ts";
import { ROOT } from "../helpers/process-group.ts";
import { freePort } from "../helpers/server.ts";

const TOKEN = "adm_installTestqH4mZ2w8rV6yN0pL3sK7tX1cF5g";
const dirs: string[] = [];
test.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `command` in `cwd` to its end; throws with its output unless it exits 0. */
function run(command: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" },
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b));
    child.stderr.on("data", (b: Buffer) => (out += b));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command.join(" ")} exited ${code}:\n${out}`)),
    );
  });
}

const EXAMPLE = join(ROOT, "examples", "text-stats-plugin");

/** `npm pack` of `folder` into `destination`; the tarball's file name. */
async function pack(folder: string, destination: string): Promise<string> {
  const out = await run(["npm", "pack", "--silent", "--ignore-scripts", "--pack-destination", destination], folder);
  return out.trim().split("\n").pop()!;
}

test("pack mediagate and the example, install both into a fresh project, scaffold, configure, start, call", async () => {
  const project = mkdtempSync(join(tmpdir(), "mediagate-stranger-"));
  dirs.push(project);
  const [tarball, example] = await Promise.all([pack(ROOT, project), pack(EXAMPLE, project)]);
  assert.match(example, /^mediagate-plugin-text-stats-.*\.tgz$/);
  // No "type": "module", as `npm init` leaves it; the config file and the plugin by path still load as ES modules.
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "stranger", version: "1.0.0", private: true, main: "index.js" }),
  );
  // One install for both, so the example's peer dependency on mediagate is met by the tarball beside it.
  await run(
    [
      "npm",
      "install",
      "--prefer-offline",
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      `./${tarball}`,
      `./${example}`,
    ],
    project,
  );
  const made = await run(["npx", "--no-install", "mediagate", "new-plugin", "demo"], project);
  assert.match(made, "Next steps:");
  writeFileSync(
    join(project, "mediagate.config.ts"),
    `import { defaultPlugins, defineServerConfig } from "mediagate";

export default defineServerConfig({
  plugins: [...defaultPlugins, "./demo/index.ts", "mediagate-plugin-text-stats"],
});
`,
  );

  // What `npx mediagate start` runs, run directly: SIGTERM to npx (npm 11) ends npm by that signal at once and
  // does not reach the server, which goes on serving, orphaned (docs/package.md).
  const port = await freePort();
  const server = spawnMain(
    { PORT: String(port), DATA_DIR: join(project, ".data"), ADMIN_TOKEN: TOKEN, LOG_LEVEL: "warn" },
    ["sh", "-c", `cd "${project}" && exec node_modules/.bin/mediagate start`],
  );
  try {
    await server.waitFor("mediagate listening on", 120_000);
    const key = /svc_[A-Za-z0-9_-]+/.exec(server.output())?.[0];
    assert.ok(key, `no demo partner key printed:\n${server.output()}`);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": "stranger/1" };
    const base = `http://127.0.0.1:${port}`;
    const rest = await fetch(`${base}/api/v1/partner/demo`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "hello" }),
    });
    const body = await rest.json();
    assert.is(rest.status, 200, JSON.stringify(body));
    assert.equal({ ok: body.ok, echo: body.echo }, { ok: true, echo: "hello" });
    const gql = await fetch(`${base}/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query: 'mutation { demo(input: { text: "hi" }) { ok echo } }' }),
    });
    assert.equal((await gql.json()).data, { demo: { ok: true, echo: "hi" } });

    // The example, installed as a package and named by its package name: counted and charged (at the demo
    // partner's tier, so the charge is read from the balance rather than assumed).
    const before = await (await fetch(`${base}/api/v1/partner/credits`, { headers })).json();
    assert.is(before.costs?.text_stats, 2, "the example's price in GET /credits");
    const stats = await fetch(`${base}/api/v1/partner/text-stats`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "One two. Three!" }),
    });
    const statsBody = await stats.json();
    assert.is(stats.status, 200, JSON.stringify(statsBody));
    assert.equal(
      { characters: statsBody.characters, words: statsBody.words, sentences: statsBody.sentences },
      { characters: 15, words: 3, sentences: 2 },
    );
    assert.ok(statsBody.credits_used >= 2, JSON.stringify(statsBody));
    assert.is(statsBody.credits_remaining, before.credits_remaining - statsBody.credits_used);
    const statsGql = await fetch(`${base}/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        query: 'mutation { textStats(input: { text: "Hi there." }) { words sentences credits_used } }',
      }),
    });
    const statsGqlBody = await statsGql.json();
    assert.equal(
      statsGqlBody.data,
      { textStats: { words: 2, sentences: 1, credits_used: statsBody.credits_used } },
      JSON.stringify(statsGqlBody),
    );

    const credits = await fetch(`${base}/api/v1/partner/credits`, { headers });
    assert.is(credits.status, 200, "a spec area beside the plugins");
    assert.is((await credits.json()).credits_remaining, before.credits_remaining - 2 * statsBody.credits_used);

    await stopsCleanly(server);
  } finally {
    await server.kill();
  }
});

test.run();
