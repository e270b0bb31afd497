// `mediagate start` and `mediagate admin` (bin/mediagate.mjs) as a stranger runs them: the server boots as
// `npm start` does and answers; the admin CLI takes the same arguments as `npm run cli --` against it; one
// SIGTERM to the command's process is the server's own graceful shutdown (exit 0), since the command runs the
// server in its own process.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "uvu";
import * as assert from "uvu/assert";
import { spawnMain, stopsCleanly } from "../helpers/main-process.ts";
import { ROOT } from "../helpers/process-group.ts";
import { freePort } from "../helpers/server.ts";

const BIN = join(ROOT, "bin", "mediagate.mjs");
const TOKEN = "adm_binTestqH4mZ2w8rV6yN0pL3sK7tX1cF5gJ9dB";

const dirs: string[] = [];
test.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `node bin/mediagate.mjs <args>` to its end: exit code and output. */
function command(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b));
    child.stderr.on("data", (b: Buffer) => (out += b));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out }));
  });
}

test("mediagate admin without a command prints the admin CLI's usage", async () => {
  const res = await command(["admin"]);
  assert.is(res.code, 1, res.out);
  assert.match(res.out, "partners create --name NAME");
});

test("mediagate start serves; mediagate admin drives it; SIGTERM stops it gracefully", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-bin-"));
  dirs.push(dataDir);
  const port = await freePort();
  const server = spawnMain({ PORT: String(port), DATA_DIR: dataDir, ADMIN_TOKEN: TOKEN, LOG_LEVEL: "warn" }, [
    process.execPath,
    BIN,
    "start",
  ]);
  try {
    await server.waitFor("mediagate listening on");
    const url = `http://127.0.0.1:${port}`;
    const health = await fetch(`${url}/healthz`);
    assert.is(health.status, 200);

    const created = await command([
      "admin",
      "partners",
      "create",
      "--name",
      "Bin",
      "--credits",
      "7",
      "--url",
      url,
      "--token",
      TOKEN,
    ]);
    assert.is(created.code, 0, created.out);
    const body = JSON.parse(created.out);
    assert.is(body.credits_remaining, 7, created.out);
    const me = await fetch(`${url}/api/v1/partner/credits`, {
      headers: { authorization: `Bearer ${body.api_key}`, "user-agent": "mediagate-tests/1.0" },
    });
    assert.is(me.status, 200, await me.text());

    await stopsCleanly(server);
  } finally {
    await server.kill();
  }
});

test.run();
