// Crash recovery of the real server (main.ts as a child process), on every database backend. Image jobs are
// submitted, the server is SIGKILLed while some of them wait on the sandbox upstream (submitted, polled,
// parked until their next poll: core/upstream-waits.ts), and a new server starts on the same database.
// Every job must still reach a terminal state (success, or failed and refunded), no submit is charged
// twice, no job is refunded twice, and the ledger still sums to the balance (docs/architecture.md invariant 1,
// core/jobs.ts "Crash safety").
//
// A waiting job's next poll is a delayed queue job, so the new server simply takes it when it comes due;
// an attempt the dead process was running (a poll, a render) is found by pg-boss's heartbeat expiry
// (heartbeatSeconds 10) and retried. A job whose every attempt is killed is dead-lettered and refunded:
// test/video/restart.test.ts, where the render is long enough to be killed in.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { IMAGE_ERRORS } from "../../plugins/images/errors.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { call, ledgerOf, api as partnerApi, type RestartRig, restartRig, sleep } from "../helpers/restart.ts";
import type { ServerProcess } from "../helpers/server.ts";

const ADMIN_TOKEN = "adm_0webhlT4ebfqEo2QW2NKgQECC6pQhZve8IORwIvo";
// The sandbox is polled every quarter of SANDBOX_LATENCY_MS (2.25 s), its progress growing with the time. A job
// shows progress from its first poll to its end. The kill waits for one job seen mid-run while others are still
// pending. (CI once saw none mid-run in 30 s: the queue's scan forgot the polls due a moment after the one it
// fetched and ran them 10 s late, at the end of the latency: storage/queue-fetcher.ts, `later`.)
const LATENCY_MS = 9000;
const RECOVERY_TIMEOUT_MS = 120_000;
const OPENING_CREDITS = 1000;

type ImageStatus = { status: "pending" | "success" | "failed"; progress?: number; error?: string };

interface Submit {
  prompt: string;
  quantity: number;
  /** From the 202. */
  jobIds: string[];
  creditsUsed: number;
}

/** The requests the sandbox upstream still keeps (DATA_DIR/blobs, its private folder). */
const sandboxRecords = (dataDir: string) => {
  const dir = join(dataDir, "blobs", "images-sandbox", "private", "upstream");
  return existsSync(dir) ? readdirSync(dir) : [];
};

async function statusOf(server: ServerProcess, key: string, jobId: string): Promise<ImageStatus> {
  const res = await call(server, "GET", partnerApi(`/image-status/${jobId}`), { key });
  if (res.status !== 200) throw new Error(`image ${jobId}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A partner with OPENING_CREDITS (half at creation, half as a purchase), room for every job at once, and
 *  rate limits out of the way of the polling. */
async function createPartner(rig: RestartRig, server: ServerProcess) {
  const { partnerId, key } = await rig.partner(server, "Restart test", OPENING_CREDITS / 2, {
    inflight_jobs: 100,
    rate_limits: {
      "POST /generate-image": 1000,
      "GET /image-status/<gen_id>": 100_000,
      "GET /credits": 1000,
      "GET /transactions": 1000,
    },
  });
  const topUp = await call(server, "POST", `/api/v1/admin/partners/${partnerId}/credits`, {
    adminToken: ADMIN_TOKEN,
    body: { amount: OPENING_CREDITS / 2, type: "purchase", description: "restart test" },
  });
  assert.is(topUp.status, 200, JSON.stringify(topUp.body));
  assert.is(topUp.body.credits_remaining, OPENING_CREDITS);
  return { partnerId, key };
}

// All at once: submitted one by one on a loaded machine, the first jobs ended before the last was accepted, and
// the test never saw two running together (a clean-clone CI run, on PGlite).
async function submitAll(server: ServerProcess, key: string, submits: Submit[]) {
  await Promise.all(
    submits.map(async (s) => {
      const res = await call(server, "POST", partnerApi("/generate-image"), {
        key,
        body: { prompt: s.prompt, model: "image-b-2", quantity: s.quantity },
      });
      assert.is(res.status, 202, JSON.stringify(res.body));
      s.jobIds = res.body.public_ids;
      s.creditsUsed = res.body.credits_used;
      assert.is(s.jobIds.length, s.quantity);
    }),
  );
  return submits.flatMap((s) => s.jobIds);
}

/** Polls until no job is pending; throws with both servers' output after RECOVERY_TIMEOUT_MS from `since`. */
async function waitTerminal(server: ServerProcess, key: string, jobIds: string[], since: number, logs: () => string) {
  const pending = new Set(jobIds);
  const final = new Map<string, ImageStatus>();
  for (;;) {
    for (const id of [...pending]) {
      const s = await statusOf(server, key, id);
      if (s.status !== "pending") {
        final.set(id, s);
        pending.delete(id);
      }
    }
    if (!pending.size) return final;
    if (Date.now() - since > RECOVERY_TIMEOUT_MS) {
      throw new Error(
        `still pending ${RECOVERY_TIMEOUT_MS / 1000} s after the kill: ${[...pending].join(", ")}\n${logs()}`,
      );
    }
    await sleep(250);
  }
}

/** The partner's own view after recovery: GET /transactions sums to GET /credits. Returns the balance. */
async function checkApiBalance(server: ServerProcess, key: string) {
  const credits = await call(server, "GET", partnerApi("/credits"), { key });
  assert.is(credits.status, 200, JSON.stringify(credits.body));
  const txs = await call(server, "GET", partnerApi("/transactions?limit=100"), { key });
  assert.is(txs.status, 200, JSON.stringify(txs.body));
  const sum = (txs.body.transactions as Array<{ amount: number }>).reduce((n, e) => n + e.amount, 0);
  assert.is(sum, credits.body.credits_remaining, "GET /transactions sums to GET /credits");
  return credits.body.credits_remaining as number;
}

/**
 * The money and the jobs, read from the database once the server is stopped: every job terminal and
 * holding no slot; one usage row per submit of what its 202 said; exactly one refund per failed job, of its
 * share, none for a success; nothing else moved money; the balance is the ledger's sum, for every account.
 * Returns how many pg-boss jobs of the image queue were retried (attempts the kill interrupted, if any).
 */
async function checkDatabase(rig: RestartRig, partnerId: string, submits: Submit[], apiBalance: number) {
  const database = await rig.openDatabase();
  try {
    const db = database.kysely;
    const jobIds = submits.flatMap((s) => s.jobIds);
    const jobs = await db.selectFrom("jobs").selectAll().where("partner_id", "=", partnerId).execute();
    assert.equal(jobs.map((j) => j.id).sort(), [...jobIds].sort(), "no job appeared or vanished");
    for (const job of jobs) {
      assert.ok(job.finished_at !== null, `job ${job.id} is not finished (state ${job.state})`);
      assert.ok(["success", "failed"].includes(job.state), `job ${job.id} ended in ${job.state}`);
      assert.is(job.holds_inflight_slot, false, `job ${job.id} still holds an in-flight slot`);
      assert.is(
        Number(job.credits_refunded),
        job.state === "failed" ? Number(job.credits_used) : 0,
        `job ${job.id} refunded ${job.credits_refunded} of ${job.credits_used}`,
      );
    }

    const { ledger, balance, sum } = await ledgerOf(db, partnerId);
    const usage = ledger.filter((e) => e.type === "usage");
    assert.is(usage.length, submits.length, "one usage row per submit");
    for (const s of submits) {
      const rows = usage.filter((e) => e.job_id === s.jobIds[0]);
      assert.is(rows.length, 1, `the submit of ${s.jobIds[0]} was charged ${rows.length} times`);
      assert.is(Number(rows[0]!.amount), -s.creditsUsed);
      const shares = jobs.filter((j) => s.jobIds.includes(j.id)).reduce((n, j) => n + Number(j.credits_used), 0);
      assert.is(shares, s.creditsUsed, "a submit's job shares sum to its charge");
    }
    const refunds = ledger.filter((e) => e.type === "refund");
    for (const job of jobs) {
      const rows = refunds.filter((e) => e.job_id === job.id);
      if (job.state === "failed") {
        assert.is(rows.length, 1, `failed job ${job.id} was refunded ${rows.length} times`);
        assert.is(Number(rows[0]!.amount), Number(job.credits_used));
      } else {
        assert.is(rows.length, 0, `successful job ${job.id} was refunded`);
      }
    }
    assert.is(refunds.length, jobs.filter((j) => j.state === "failed").length);
    assert.equal(
      ledger.map((e) => e.type).filter((type) => type !== "usage" && type !== "refund"),
      ["purchase", "purchase"],
      "nothing else moved money",
    );

    assert.is(balance, sum, "the balance is the ledger's sum");
    const charged = submits.reduce((n, s) => n + s.creditsUsed, 0);
    assert.is(sum, OPENING_CREDITS - charged + refunds.reduce((n, e) => n + Number(e.amount), 0));
    assert.is(apiBalance, sum, "GET /credits after the restart matches the database");
    const drift = await sql<{ id: string }>`
      select p.id from partners p left join ledger l on l.partner_id = p.id
      group by p.id, p.credits_remaining having p.credits_remaining <> coalesce(sum(l.amount), 0)`.execute(db);
    assert.equal(drift.rows, [], "every account's ledger sums to its balance");

    assert.equal(await db.selectFrom("job_waits").select("job_id").execute(), [], "no wait outlives its job");
    const retried = await sql<{
      n: number;
    }>`select count(*)::int as n from pgboss.job where name = 'images.image' and retry_count > 0`.execute(db);
    return Number(retried.rows[0]!.n);
  } finally {
    await database.close();
  }
}

for (const backend of await databaseBackends()) {
  const t = suite(`images: server killed mid-job on ${backend.name}`);
  // DATA_DIR holds PGlite's files, and the blobs on either backend.
  const rig = restartRig(t, backend, { adminToken: ADMIN_TOKEN, env: { SANDBOX_LATENCY_MS: String(LATENCY_MS) } });
  const { start, logs } = rig;

  t("every job ends exactly once, charged once and refunded at most once, after a SIGKILL and a restart", async () => {
    const t0 = Date.now();
    const first = await start();
    const bootMs = Date.now() - t0;
    const { partnerId, key } = await createPartner(rig, first);

    // 12 jobs from 10 submits: one asks the sandbox to fail, one is a quantity-3 request (one charge, 3 jobs).
    const submits: Submit[] = Array.from({ length: 10 }, (_, i) => ({
      prompt: i === 2 ? `Job ${i} [sandbox:fail]` : `Job ${i}: a lighthouse at dusk`,
      quantity: i === 5 ? 3 : 1,
      jobIds: [],
      creditsUsed: 0,
    }));
    const jobIds = await submitAll(first, key, submits);
    const failJobId = submits[2]!.jobIds[0]!;
    assert.is(jobIds.length, 12);

    // Wait until some jobs are waiting on the upstream (polled, progress shown, not finished), then kill the
    // server outright.
    const waitUntil = Date.now() + 30_000;
    let midRun: string[] = [];
    for (;;) {
      const states = await Promise.all(jobIds.map(async (id) => [id, await statusOf(first, key, id)] as const));
      midRun = states.filter(([, s]) => s.status === "pending" && (s.progress ?? 0) > 0).map(([id]) => id);
      const pending = states.filter(([, s]) => s.status === "pending").length;
      if (midRun.length >= 1 && pending >= 2) break;
      if (Date.now() > waitUntil)
        throw new Error(
          `no job seen mid-run with another pending within 30 s (last seen: ${JSON.stringify(states.map(([, s]) => [s.status, s.progress ?? null]))}):\n${logs()}`,
        );
      await sleep(100);
    }
    await first.kill();
    assert.is((await first.exited).signal, "SIGKILL");
    const killedAt = Date.now();

    // A new server on the same database and DATA_DIR finishes every job.
    const second = await start();
    const restartMs = Date.now() - killedAt;
    const final = await waitTerminal(second, key, jobIds, killedAt, logs);
    const recoveryMs = Date.now() - killedAt;

    assert.is(final.get(failJobId)!.status, "failed");
    assert.is(final.get(failJobId)!.error, IMAGE_ERRORS.failed);
    // One crash costs one of a job's three attempts, so every other job still succeeds.
    for (const id of jobIds)
      if (id !== failJobId) assert.is(final.get(id)!.status, "success", `job ${id}: ${JSON.stringify(final.get(id))}`);
    const balance = await checkApiBalance(second, key);

    // Stop cleanly (a PGlite directory is one process's), then read the database directly.
    await second.stop();
    assert.is((await second.exited).code, 0, `the second server did not shut down cleanly:\n${logs()}`);
    const retried = await checkDatabase(rig, partnerId, submits, balance);
    // The upstream forgot every job once it ended (the sandbox's request records are released), and no wait
    // is left behind.
    assert.equal(sandboxRecords(rig.dataDir), [], "the sandbox's request records were released");

    console.log(
      `\n  [${backend.name}] boot ${bootMs} ms; killed with ${midRun.length} job(s) mid-run; restarted in ${restartMs} ms; ` +
        `all ${jobIds.length} jobs terminal ${(recoveryMs / 1000).toFixed(1)} s after the kill; ${retried} queue job(s) retried`,
    );
  });

  t.run();
}
