// The same API through a real server, under each runtime: Node (main.ts through tsx; `npm start` runs it as
// `node --import tsx main.ts`) and Deno (`deno run main.ts`, as `deno task start` runs it). Each run is a fresh DATA_DIR: first start prints
// the demo key and writes the admin token, which this test reads the way an operator would.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { errorBody } from "../helpers/error-body.ts";

const root = resolve(import.meta.dirname!, "../..");
const runtimes = [
  { name: "node", command: join(root, "node_modules/.bin/tsx"), args: ["main.ts"] },
  { name: "deno", command: join(root, "node_modules/.bin/deno"), args: ["run", "--allow-all", "main.ts"] },
].filter((r) => existsSync(r.command));

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
    s.on("error", rej);
  });
}

async function startServer(runtime: (typeof runtimes)[number]) {
  const dataDir = mkdtempSync(join(tmpdir(), `mediagate-${runtime.name}-`));
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    DATABASE_URL: "",
    REDIS_URL: "",
    ADMIN_TOKEN: "",
    DENO_NO_UPDATE_CHECK: "1",
  };
  const child: ChildProcess = spawn(runtime.command, runtime.args, {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${runtime.name} server exited: ${output}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok && /svc_partner_\S+/.test(output)) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const demoKey = /svc_partner_\S+/.exec(output)?.[0];
  if (!demoKey) throw new Error(`${runtime.name} server did not print a demo key: ${output}`);
  const stop = async () => {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { base, demoKey, dataDir, stop, output: () => output };
}

for (const runtime of runtimes) {
  const t = suite(`real server under ${runtime.name}`);
  let server: Awaited<ReturnType<typeof startServer>>;
  t.before(async () => {
    server = await startServer(runtime);
  });
  t.after(async () => {
    await server?.stop();
  });

  const get = (path: string, key: string, ua = "server-test/1.0") =>
    fetch(`${server.base}/api/v1/partner${path}`, { headers: { authorization: `Bearer ${key}`, "user-agent": ua } });

  t("the demo partner works over HTTP with 10,000 credits", async () => {
    const res = await get("/me", server.demoKey);
    assert.is(res.status, 200);
    assert.ok(res.headers.get("content-type")!.startsWith("application/json"));
    const body = (await res.json()) as any;
    assert.is(body.credits_remaining, 10_000);
    assert.is(body.name, "Demo partner");
    assert.ok(res.headers.get("ratelimit-policy"));
  });

  t("the admin token written on first start drives the admin API", async () => {
    const token = readFileSync(join(server.dataDir, "admin-token"), "utf8").trim();
    const res = await fetch(`${server.base}/api/v1/admin/partners`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "user-agent": "server-test/1.0",
      },
      body: JSON.stringify({ name: "Over HTTP", credits: 5 }),
    });
    assert.is(res.status, 201);
    const { api_key } = (await res.json()) as any;
    assert.is(((await (await get("/credits", api_key)).json()) as any).credits_remaining, 5);
  });

  t("the CLI drives the admin API of the running server", async () => {
    const cli = (...args: string[]) =>
      new Promise<{ code: number | null; out: string }>((res) => {
        const env = { ...process.env, DATA_DIR: server.dataDir, ADMIN_TOKEN: "", PUBLIC_URL: server.base };
        const child = spawn(join(root, "node_modules/.bin/tsx"), ["cli/admin.ts", ...args], { cwd: root, env });
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        child.on("exit", (code) => res({ code, out }));
      });
    const created = await cli("partners", "create", "--name", "From CLI", "--credits", "7", "--tier", "standard");
    assert.is(created.code, 0, created.out);
    const { partner_id, api_key } = JSON.parse(created.out);
    assert.is(
      (await cli("credits", "add", partner_id, "--amount", "3", "--type", "purchase", "--description", "CLI top-up"))
        .code,
      0,
    );
    assert.is((await cli("partners", "update", partner_id, "--inflight", "20", "--rate-limit", "GET /me=2")).code, 0);
    const me = (await (await get("/me", api_key)).json()) as any;
    assert.is(me.credits_remaining, 10);
    assert.is(me.pricing_tier, "standard");
    assert.is((await get("/me", api_key)).status, 200);
    assert.is((await get("/me", api_key)).status, 429, "the rate-limit override set by the CLI applies");
    const rotated = await cli("rotate-key", partner_id);
    assert.is(rotated.code, 0);
    assert.is((await get("/credits", api_key)).status, 401);
    assert.is((await cli("partners", "frobnicate")).code, 2);
  });

  t("the edge rule and the 401 texts hold over HTTP", async () => {
    const edge = await get("/me", server.demoKey, "python-requests/2.31.0");
    assert.is(edge.status, 403);
    assert.ok((await edge.text()).includes("error code: 1010"));
    const bad = await get("/me", "svc_partner_nope0000000000");
    assert.equal(errorBody({ body: await bad.json(), headers: bad.headers }), { error: "Invalid API key" });
  });

  t.run();
}
