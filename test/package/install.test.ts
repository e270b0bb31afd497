// A stranger's project, end to end (issue 38 items 3 and 7, on Node): `npm pack` this checkout, install the
// tarball into a fresh temporary ES-module project (`npm install --prefer-offline --ignore-scripts`, so npm's
// cache serves what it can), scaffold a plugin there with `npx mediagate new-plugin`, list it in
// mediagate.config.ts beside the spec's areas, start the server with the installed `mediagate start`, and call
// the plugin over REST and GraphQL and a spec route beside it; SIGTERM ends it with exit 0.
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

test("pack, install into a fresh project, scaffold, configure, start, call", async () => {
  const project = mkdtempSync(join(tmpdir(), "mediagate-stranger-"));
  dirs.push(project);
  const tarball = (await run(["npm", "pack", "--silent", "--ignore-scripts", "--pack-destination", project], ROOT))
    .trim()
    .split("\n")
    .pop()!;
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "stranger", private: true, type: "module" }));
  await run(
    ["npm", "install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", `./${tarball}`],
    project,
  );
  const made = await run(["npx", "--no-install", "mediagate", "new-plugin", "demo"], project);
  assert.match(made, "Next steps:");
  writeFileSync(
    join(project, "mediagate.config.ts"),
    'import { defaultPlugins, defineServerConfig } from "mediagate";\n\nexport default defineServerConfig({ plugins: [...defaultPlugins, "./demo/index.ts"] });\n',
  );

  const port = await freePort();
  const server = spawnMain(
    { PORT: String(port), DATA_DIR: join(project, ".data"), ADMIN_TOKEN: TOKEN, LOG_LEVEL: "warn" },
    ["sh", "-c", `cd "${project}" && exec node node_modules/.bin/mediagate start`],
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
    const credits = await fetch(`${base}/api/v1/partner/credits`, { headers });
    assert.is(credits.status, 200, "a spec area beside the plugin");

    await stopsCleanly(server);
  } finally {
    await server.kill();
  }
});

test.run();
