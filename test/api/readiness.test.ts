// /healthz is liveness (200 while the process answers), /readyz is readiness: 200 {"status":"ready"} when
// the database, the queue and Redis (when configured) answer, else 503 naming the check that failed. On each
// backend (PGlite with in-process stores; Postgres with Redis). And a ROLE=worker process, which serves no
// API, answers both on HEALTH_PORT.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import account from "../../plugins/account/index.ts";
import { memoryBlobStore } from "../../storage/blobs.ts";
import { redisCounters } from "../../storage/counters.ts";
import { memoryPubSub } from "../../storage/pubsub.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { createHttpApp } from "../../transports/http.ts";
import { isolatedPostgresDatabase, postgresUrl, redisUrl } from "../helpers/backends.ts";
import { spawnMain } from "../helpers/main-process.ts";
import { freePort } from "../helpers/server.ts";

type Probe = { status: number; body: any };

async function probe(app: { fetch(req: Request): Response | Promise<Response> }, path: string): Promise<Probe> {
  const res = await app.fetch(
    new Request(`http://mediagate.test${path}`, { headers: { "user-agent": "readiness-test/1" } }),
  );
  return { status: res.status, body: await res.json() };
}

const backends: Array<{
  name: string;
  options: () => Promise<{ databaseUrl?: string; redisUrl?: string; env?: Record<string, string> }>;
}> = [{ name: "pglite and in-process stores", options: async () => ({}) }];
const pgAdmin = await postgresUrl();
const redis = await redisUrl();
if (pgAdmin && redis) {
  backends.push({
    name: "postgres and redis",
    options: async () => ({
      databaseUrl: await isolatedPostgresDatabase(),
      redisUrl: redis,
      env: { REDIS_URL: redis },
    }),
  });
}

for (const backend of backends) {
  const t = suite(`readiness on ${backend.name}`);
  let tk: TestKernel;
  let app: ReturnType<typeof createHttpApp>;
  t.before.each(async () => {
    tk = await createTestKernel({ plugins: [account], start: true, ...(await backend.options()) });
    app = createHttpApp(tk.kernel, { adminToken: tk.adminToken });
  });
  t.after.each(async () => {
    await tk?.close();
  });

  t("/readyz is 200 with every check ok; /healthz 200", async () => {
    const ready = await probe(app, "/readyz");
    const expected: Record<string, string> = { database: "ok", queue: "ok" };
    if (tk.config.redisUrl) expected.redis = "ok";
    assert.equal(ready, { status: 200, body: { status: "ready", checks: expected } });
    assert.equal(await probe(app, "/healthz"), { status: 200, body: { status: "ok" } });
  });

  t("a stopped queue is 503 naming the queue; /healthz still 200", async () => {
    await tk.kernel.queue.stop();
    const ready = await probe(app, "/readyz");
    assert.is(ready.status, 503);
    assert.is(ready.body.status, "not ready");
    assert.is(ready.body.checks.queue, "failed");
    assert.is(ready.body.checks.database, "ok");
    assert.equal(await probe(app, "/healthz"), { status: 200, body: { status: "ok" } });
  });

  t.run();
}

const r = suite("readiness: Redis that stops answering");
r("configured Redis that does not answer is 503 naming redis, within the probe's time limit", async () => {
  // Counters on an address nobody listens on, injected (so the boot's own check, which would refuse it, is
  // skipped): the state of a process whose Redis went away after the boot.
  const config = loadConfig({
    REDIS_URL: "redis://127.0.0.1:1",
    LOG_LEVEL: "silent",
    DATA_DIR: join(tmpdir(), "mediagate-readiness"),
  });
  const { openDatabase } = await import("../../storage/db.ts");
  const database = await openDatabase({});
  const counters = redisCounters({ url: "redis://127.0.0.1:1" });
  const kernel = await createKernel({
    config,
    plugins: [account],
    database,
    blobs: memoryBlobStore(),
    counters,
    pubsub: memoryPubSub(),
  });
  try {
    await kernel.start();
    const app = createHttpApp(kernel, { adminToken: "x".repeat(32) });
    const ready = await probe(app, "/readyz");
    assert.is(ready.status, 503);
    assert.is(ready.body.status, "not ready");
    assert.ok(["failed", "timed out"].includes(ready.body.checks.redis), JSON.stringify(ready.body));
    assert.is(ready.body.checks.database, "ok");
    assert.is(ready.body.checks.queue, "ok");
  } finally {
    await kernel.stop();
    await database.close();
  }
});

const w = suite("readiness: a worker's probe on HEALTH_PORT");
w("ROLE=worker serves /healthz and /readyz on HEALTH_PORT, and nothing else", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-worker-probe-"));
  const healthPort = await freePort();
  const worker = spawnMain({
    ROLE: "worker",
    HEALTH_PORT: String(healthPort),
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    ADMIN_TOKEN: "adm_KrE1PBJMhXvOC683dPV4fenKeZCoTk0J5xjtUH1t",
    LOG_LEVEL: "warn",
  });
  try {
    await worker.waitFor("mediagate probes on");
    const base = `http://127.0.0.1:${healthPort}`;
    const ready = await fetch(`${base}/readyz`);
    assert.is(ready.status, 200, worker.output());
    assert.equal(await ready.json(), { status: "ready", checks: { database: "ok", queue: "ok" } });
    assert.is((await fetch(`${base}/healthz`)).status, 200);
    assert.is((await fetch(`${base}/api/v1/partner/me`)).status, 404, "the probe port serves no API");
  } finally {
    await worker.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

r.run();
w.run();
