// `npm start`, then SIGTERM to the PID it created (what an orchestrator or a process manager does): the
// signal reaches the server through npm, which shuts down gracefully. An open GraphQL subscription gets a
// final message, the social download running at that moment is handed back to the queue rather than failed
// (its attempt not counted), every process of the group exits, the embedded database's lock is released, and
// the next start finishes the job, with no money moved. `deno task start` likewise.
//
// The job is a social download because its extractor works inside its attempt (a download is work, and the
// sandbox's SANDBOX_LATENCY_MS is spent there): a job waiting on a submit-and-poll upstream holds no attempt
// while it waits (core/upstream-waits.ts), so there would be nothing to hand back.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { LOCK_FILE, openDatabase } from "../../storage/db.ts";
import { groupAlive, ROOT, spawnMain } from "../helpers/main-process.ts";
import { freePort, startServer } from "../helpers/server.ts";
import { subscribeSse } from "../helpers/sse.ts";

const ADMIN_TOKEN = "adm_1opVYO6cwPNGqQRUPe44YRBvbHw2OuguMq4k68eT";
const UA = "mediagate-sigterm-test/1.0";
// The sandbox extractor reports progress after each quarter of this; a job still has three quarters (30 s) to
// go when the first progress shows, more than the queue's 10 s stop time, so the shutdown must hand it back.
const LATENCY_MS = 40_000;
const CREDITS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; admin?: boolean; body?: unknown } = {},
) {
  const headers: Record<string, string> = { "user-agent": UA };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** A jobUpdates subscription over SSE. */
const subscribe = (base: string, key: string, jobId: string) =>
  subscribeSse(base, {
    key,
    userAgent: UA,
    query: "subscription($id: String!) { jobUpdates(id: $id) { job_id state progress terminal } }",
    variables: { id: jobId },
  });

const t = suite("SIGTERM to the PID npm start created");
const dirs: string[] = [];
t.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

t(
  "stops the server gracefully: subscriptions get a final message, the running job is handed back and finished by the next start",
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mediagate-sigterm-"));
    dirs.push(dataDir);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      PORT: String(port),
      LOG_LEVEL: "info",
      SANDBOX_LATENCY_MS: String(LATENCY_MS),
    };
    const npm = spawnMain(env, ["npm", "start", "--silent"]);
    let jobId: string;
    let key: string;
    try {
      await npm.waitFor("mediagate listening on");
      const created = await call(base, "POST", "/api/v1/admin/partners", {
        admin: true,
        body: { name: "SIGTERM", credits: CREDITS },
      });
      assert.is(created.status, 201, JSON.stringify(created.body));
      key = created.body.api_key;
      const submitted = await call(base, "POST", "/api/v1/partner/social-download", {
        key,
        body: { url: "https://vm.tiktok.com/ZMsigterm1/" },
      });
      assert.is(submitted.status, 202, JSON.stringify(submitted.body));
      jobId = submitted.body.download_id;

      // Running: the subscription has shown progress.
      const stream = subscribe(base, key, jobId);
      const until = Date.now() + 90_000;
      while (!stream.events.some((e) => (e.data?.jobUpdates?.progress ?? 0) > 0)) {
        if (Date.now() > until)
          throw new Error(`the job showed no progress: ${JSON.stringify(stream.events)}\n${npm.output()}`);
        await sleep(100);
      }

      process.kill(npm.pid, "SIGTERM"); // npm's PID only, not its group
      const exit = await npm.exit(60_000);
      assert.ok(exit, `npm start still running 60 s after SIGTERM:\n${npm.output()}`);
      assert.is(exit!.code, 0, npm.output());
      assert.match(npm.output(), /SIGTERM: shutting down/);
      assert.match(npm.output(), /INFO stopped|"msg":"stopped"/);
      for (let i = 0; i < 50 && groupAlive(npm.pid); i++) await sleep(100);
      assert.not.ok(groupAlive(npm.pid), `a process of npm start's group outlived it:\n${npm.output()}`);
      await fetch(`${base}/healthz`).then(
        () => assert.unreachable("the server still answers"),
        () => {},
      );
      assert.not.ok(existsSync(join(dataDir, LOCK_FILE)), "the embedded database's lock was released");

      await stream.done;
      assert.ok(stream.ended());
      const last = stream.events.at(-1)!;
      assert.ok(last.errors?.length, `the stream's last event is a final error: ${JSON.stringify(stream.events)}`);
      assert.match(last.errors![0]!.message, /shutting down/i);
      assert.not.ok(
        stream.events.some((e) => e.data?.jobUpdates?.terminal),
        "the job did not end before the shutdown",
      );
    } finally {
      await npm.kill();
    }

    // The next start, with a quick sandbox, finishes the job handed back.
    const next = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: "warn", SANDBOX_LATENCY_MS: "0" });
    try {
      const until = Date.now() + 90_000;
      let status: any;
      for (;;) {
        status = (await call(next.url, "GET", `/api/v1/partner/social-download/${jobId}`, { key })).body;
        if (status.status !== "pending") break;
        if (Date.now() > until) throw new Error(`still pending after the restart:\n${next.output()}`);
        await sleep(250);
      }
      assert.is(status.status, "complete", JSON.stringify(status));
      const credits = await call(next.url, "GET", "/api/v1/partner/credits", { key });
      assert.is(credits.body.credits_remaining, CREDITS, "no money moved (downloads are free)");
    } finally {
      await next.stop();
    }

    // The attempt the shutdown interrupted was not counted: the job ran once more as its first attempt.
    const database = await openDatabase({ dataDir });
    try {
      const { rows } = await sql<{
        state: string;
        retry_count: number;
      }>`select state, retry_count from pgboss.job where data->>'jobId' = ${jobId}`.execute(database.kysely);
      assert.equal(rows, [{ state: "completed", retry_count: 0 }]);
    } finally {
      await database.close();
    }
  },
);

const denoBin = join(ROOT, "node_modules/.bin/deno");
if (existsSync(denoBin)) {
  t("deno task start: SIGTERM to the task's PID stops the server gracefully too", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mediagate-sigterm-deno-"));
    dirs.push(dataDir);
    const port = await freePort();
    const task = spawnMain(
      { DATA_DIR: dataDir, ADMIN_TOKEN, PORT: String(port), LOG_LEVEL: "info", DENO_NO_UPDATE_CHECK: "1" },
      [denoBin, "task", "start"],
    );
    try {
      await task.waitFor("mediagate listening on", 180_000);
      assert.is((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
      process.kill(task.pid, "SIGTERM");
      const exit = await task.exit(60_000);
      assert.ok(exit, `deno task start still running 60 s after SIGTERM:\n${task.output()}`);
      assert.is(exit!.code, 0, task.output());
      assert.match(task.output(), /SIGTERM: shutting down/);
      assert.match(task.output(), /INFO stopped|"msg":"stopped"/);
      for (let i = 0; i < 50 && groupAlive(task.pid); i++) await sleep(100);
      assert.not.ok(groupAlive(task.pid), `a process of the task's group outlived it:\n${task.output()}`);
      assert.not.ok(existsSync(join(dataDir, LOCK_FILE)), "the embedded database's lock was released");
    } finally {
      await task.kill();
    }
  });
}

t.run();
