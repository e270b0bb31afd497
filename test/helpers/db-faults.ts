// What the database-fault tests share (test/storage/connection-loss.test.ts, database-restart.test.ts): an API
// and a worker process (ROLE=api, ROLE=worker) on one Postgres database and one DATA_DIR, a partner, a load of
// charged submits (each a transaction in the API; each job's attempts are transactions in the worker) and reads,
// and the checks once the fault has passed: both processes up, every job ended, the money whole.
//
//   const pair = await startPair(databaseUrl)            // { api, worker, logs(), stop() }
//   const partner = await createPartner(pair.api)        // { partnerId, key }
//   const load = startLoad(pair.api, partner.key)         // runs until load.stop(); returns the counts
//   assertAlive(pair)                                    // neither process exited; no unhandled 'error'
//   await assertRecovered(pair, partner, databaseUrl)    // requests work, every job ends, balance == ledger
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import * as assert from "uvu/assert";
import { api, call, sleep } from "./restart.ts";
import { type ServerProcess, startServer } from "./server.ts";

export const ADMIN_TOKEN = "adm_7XkQ2vLr9TfWb4NcYp1HsGd8EjUa6MzRq3Vo5Ki0";

export interface Pair {
  api: ServerProcess;
  worker: ServerProcess;
  logs(): string;
  /** The processes that exited so far, as "api: {code, signal}". */
  exits: string[];
  stop(): Promise<void>;
}

/**
 * An API and a worker process on `databaseUrl`, sharing a DATA_DIR (the blobs of one host). Each process's
 * connections carry its role as application_name, so pg_stat_activity tells them apart.
 */
export async function startPair(databaseUrl: string, env: Record<string, string> = {}): Promise<Pair> {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-dbfaults-"));
  const named = (name: string) => {
    const u = new URL(databaseUrl);
    u.searchParams.set("application_name", name);
    return u.toString();
  };
  const common = { DATA_DIR: dataDir, ADMIN_TOKEN, SANDBOX_LATENCY_MS: "1200", LOG_LEVEL: "warn", ...env };
  const servers: ServerProcess[] = [];
  const stop = async () => {
    for (const s of servers.splice(0)) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // The first migrates; the second finds it done.
    servers.push(await startServer({ ...common, ROLE: "api", DATABASE_URL: named("mg-api") }));
    servers.push(await startServer({ ...common, ROLE: "worker", DATABASE_URL: named("mg-worker") }));
  } catch (err) {
    await stop();
    throw err;
  }
  const [apiProcess, worker] = servers as [ServerProcess, ServerProcess];
  const exits: string[] = [];
  void apiProcess.exited.then((e) => exits.push(`api: ${JSON.stringify(e)}`));
  void worker.exited.then((e) => exits.push(`worker: ${JSON.stringify(e)}`));
  return {
    exits,
    api: apiProcess,
    worker,
    logs: () =>
      `--- api (pid ${apiProcess.pid}) ---\n${apiProcess.output()}\n--- worker (pid ${worker.pid}) ---\n${worker.output()}`,
    stop,
  };
}

export interface Partner {
  partnerId: string;
  key: string;
}

export const OPENING_CREDITS = 100_000;

/** A partner with room for every job at once and rate limits out of the load's way. */
export async function createPartner(server: ServerProcess): Promise<Partner> {
  const created = await call(server, "POST", "/api/v1/admin/partners", {
    adminToken: ADMIN_TOKEN,
    body: { name: "Database faults", credits: OPENING_CREDITS },
  });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const limits = {
    inflight_jobs: 1000,
    rate_limits: {
      "POST /generate-image": 100_000,
      "GET /image-status/<gen_id>": 100_000,
      "GET /credits": 100_000,
      "GET /transactions": 100_000,
    },
  };
  const patched = await call(server, "PATCH", `/api/v1/admin/partners/${created.body.partner_id}`, {
    adminToken: ADMIN_TOKEN,
    body: { limits },
  });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  return { partnerId: created.body.partner_id, key: created.body.api_key };
}

export interface LoadCounts {
  /** HTTP answers by status. */
  statuses: Record<number, number>;
  /** Requests that got no HTTP answer at all (the socket failed): a process that died, or never answered. */
  unanswered: number;
  accepted: number;
  /** The longest a request took, in ms (printed, never asserted). */
  slowestMs: number;
}

/**
 * `concurrency` loops of one charged submit (POST /generate-image, a transaction) then a read (GET /credits or
 * GET /transactions), until stop(), which resolves with the counts.
 */
export function startLoad(server: ServerProcess, key: string, concurrency = 4): { stop(): Promise<LoadCounts> } {
  const counts: LoadCounts = { statuses: {}, unanswered: 0, accepted: 0, slowestMs: 0 };
  let running = true;
  const timed = async (method: string, path: string, body?: unknown) => {
    const began = Date.now();
    try {
      const res = await call(server, method, api(path), { key, body });
      counts.statuses[res.status] = (counts.statuses[res.status] ?? 0) + 1;
      return res;
    } catch {
      counts.unanswered++;
      return undefined;
    } finally {
      counts.slowestMs = Math.max(counts.slowestMs, Date.now() - began);
    }
  };
  const loop = async (n: number) => {
    for (let i = 0; running; i++) {
      const res = await timed("POST", "/generate-image", { prompt: `lighthouse ${n}.${i}`, model: "image-b-2" });
      if (res?.status === 202) counts.accepted++;
      await timed("GET", i % 2 ? "/credits" : "/transactions?limit=5");
      // Without any pause, a failing database turns the loop into a busy spin of instant 500s.
      if (!res || res.status >= 500) await sleep(50);
    }
  };
  const loops = Array.from({ length: concurrency }, (_, n) => loop(n));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}

/** Neither process exited, and neither printed Node's report of an unhandled 'error' event. */
export function assertAlive(pair: Pair): void {
  for (const [name, s] of [
    ["api", pair.api],
    ["worker", pair.worker],
  ] as const) {
    assert.not.ok(
      /Emitted 'error' event|Unhandled 'error' event|uncaughtException|unhandledRejection/.test(s.output()),
      `${name} printed an unhandled error\n${pair.logs()}`,
    );
  }
  assert.equal(pair.exits, [], `a process exited\n${pair.logs()}`);
}

/** A client of the test's own on the database, that reconnects for each read (the server may have restarted). */
export async function readDatabase<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * After the fault: a read and a submit through the API answer, that job and every other ends (finished_at
 * set, terminal, no slot held, a failed job refunded once, a successful one never), and the balance is the
 * ledger's sum. Returns the jobs' states.
 */
export async function assertRecovered(
  pair: Pair,
  partner: Partner,
  databaseUrl: string,
  recoveryMs = 45_000,
): Promise<Record<string, number>> {
  const { key, partnerId } = partner;
  const credits = await call(pair.api, "GET", api("/credits"), { key });
  assert.is(credits.status, 200, `GET /credits after the fault: ${JSON.stringify(credits.body)}\n${pair.logs()}`);
  const submit = await call(pair.api, "POST", api("/generate-image"), {
    key,
    body: { prompt: "after the fault", model: "image-b-2" },
  });
  assert.is(submit.status, 202, `a submit after the fault: ${JSON.stringify(submit.body)}\n${pair.logs()}`);
  const last: string = submit.body.public_ids[0];

  const until = Date.now() + recoveryMs;
  let open: Array<{ id: string; state: string }> = [];
  for (;;) {
    open = await readDatabase(
      databaseUrl,
      async (c) =>
        (await c.query("select id, state from jobs where partner_id = $1 and finished_at is null", [partnerId])).rows,
    );
    if (open.length === 0) break;
    if (Date.now() > until)
      assert.unreachable(
        `${open.length} jobs still open ${recoveryMs / 1000} s after the fault: ${JSON.stringify(open.slice(0, 10))}\n${pair.logs()}`,
      );
    await sleep(250);
  }

  return readDatabase(databaseUrl, async (c) => {
    const jobs = (
      await c.query(
        "select id, state, credits_used, credits_refunded, holds_inflight_slot from jobs where partner_id = $1",
        [partnerId],
      )
    ).rows;
    const ledger = (await c.query("select type, amount, job_id from ledger where partner_id = $1", [partnerId])).rows;
    const states: Record<string, number> = {};
    for (const j of jobs) {
      states[j.state] = (states[j.state] ?? 0) + 1;
      assert.ok(["success", "failed"].includes(j.state), `job ${j.id} ended in ${j.state}`);
      assert.is(j.holds_inflight_slot, false, `job ${j.id} still holds an in-flight slot`);
      const refunds = ledger.filter((e) => e.type === "refund" && e.job_id === j.id);
      const usage = ledger.filter((e) => e.type === "usage" && e.job_id === j.id);
      assert.is(usage.length, 1, `job ${j.id} charged ${usage.length} times`);
      assert.is(
        refunds.length,
        j.state === "failed" ? 1 : 0,
        `job ${j.id} (${j.state}) refunded ${refunds.length} times`,
      );
      assert.is(Number(j.credits_refunded), j.state === "failed" ? Number(j.credits_used) : 0);
    }
    assert.ok(
      jobs.some((j) => j.id === last && j.state === "success"),
      `the submit after the fault succeeded\n${pair.logs()}`,
    );
    const balance = Number(
      (await c.query("select credits_remaining from partners where id = $1", [partnerId])).rows[0].credits_remaining,
    );
    const sum = ledger.reduce((n, e) => n + Number(e.amount), 0);
    assert.is(balance, sum, "the balance is the ledger's sum");
    const answered = await call(pair.api, "GET", api("/credits"), { key });
    assert.is(answered.body.credits_remaining, balance, "GET /credits says the same");
    return states;
  });
}
