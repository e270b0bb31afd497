// The queue interface on pg-boss, once per database backend: delivery, waking an idle fetcher when a job is
// sent (in process, and through NOTIFY from another process), bursts taken in batches, a process at rest
// making next to no statements, delay, retry, dead letter, expiry of a hung handler and of a dead worker, a
// claim lost to another process, re-declaration, singleton keys, graceful stop (finishing or handing back
// running jobs), and durability across a restart. On PGlite also that pg-boss never runs inside, or
// poisons, an application transaction.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  type CreateQueueOptions,
  createQueue,
  pgliteDatabase,
  type Queue,
  type QueueJob,
  type QueueTarget,
} from "../../storage/queue.ts";
import { pgliteTemplate } from "../../testkit/pglite-template.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (check: () => boolean, what: string, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
};
// Small, so retries and delayed jobs whose time this process was not told (found by the scan) come quickly.
const fast = { pollingIntervalSeconds: 0.5 };

// The statements a PGlite instance ran (a call of query, exec or transaction each).
function countingPglite(pglite: PGlite): { pglite: PGlite; count(only?: RegExp): number } {
  const statements: string[] = [];
  const counted = new Set(["query", "exec", "transaction"]);
  const proxy = new Proxy(pglite, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (counted.has(key as string)) statements.push(String(args[0]));
        return value.apply(target, args);
      };
    },
  });
  return { pglite: proxy, count: (only) => (only ? statements.filter((s) => only.test(s)).length : statements.length) };
}
// pg-boss's fetch statement (plans.fetchNextJob) locks the rows it takes.
const FETCH = /FOR UPDATE OF j SKIP LOCKED/;

/** Resolves once `signal` aborts: a handler that works until its attempt is given up. */
const untilAborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve(), { once: true }));

for (const backend of await databaseBackends()) {
  const t = suite(`queue on ${backend.name}`);

  let target: QueueTarget;
  let pglite: PGlite | undefined;
  let opened: Queue[] = [];
  let cleanups: Array<() => Promise<unknown>> = [];
  let errors: unknown[] = [];
  let warnings: { message: string; data: object }[] = [];
  const open = (extra: CreateQueueOptions = {}, on: QueueTarget = target) => {
    const queue = createQueue(on, {
      onError: (err) => errors.push(err),
      onWarning: (w) => warnings.push(w),
      stopTimeoutMs: 5000,
      ...extra,
    });
    opened.push(queue);
    return queue;
  };

  /** Plain pg-boss on the same database, standing for another process (stopped after the test). */
  const otherProcess = async () => {
    const other = new PgBoss(
      target.kind === "pglite"
        ? { db: pgliteDatabase(target.pglite), backend: "pglite", supervise: false, schedule: false }
        : { connectionString: target.connectionString, supervise: false, schedule: false, max: 2 },
    );
    other.on("error", (err) => errors.push(err));
    await other.start();
    cleanups.push(() => other.stop({ graceful: false }));
    return other;
  };

  t.before.each(async () => {
    errors = [];
    warnings = [];
    if (backend.name === "postgres") target = { kind: "postgres", connectionString: await isolatedPostgresDatabase() };
    else {
      // From the test kit's initdb template: initdb per test cost 2-3 s idle and 8-17 s in a loaded run.
      pglite = new PGlite({ loadDataDir: await pgliteTemplate() });
      target = { kind: "pglite", pglite };
    }
  });
  t.after.each(async () => {
    // Queues before the database they run on.
    for (const queue of opened.reverse()) await queue.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
    await pglite?.close();
    opened = [];
    cleanups = [];
    pglite = undefined;
    assert.equal(errors, [], "pg-boss reported no background errors");
  });

  /** The warnings that LISTEN could not be established (workers then woken by polling alone). */
  const listenUnavailable = () =>
    warnings.filter((w) => (w.data as { type?: string }).type === "listen_notify_unavailable");

  /** A worker on `name` whose every attempt throws: it counts them. */
  const alwaysFailing = async (queue: ReturnType<typeof open>, name: string) => {
    const seen = { attempts: 0 };
    const fail = async () => {
      seen.attempts++;
      throw new Error("always");
    };
    await queue.work(name, fail, fast);
    return seen;
  };

  t("a sent job reaches its worker with its data", async () => {
    const queue = open();
    await queue.createQueue("test.deliver");
    const got: QueueJob<{ n: number; s: string }>[] = [];
    await queue.work<{ n: number; s: string }>("test.deliver", async (job) => void got.push(job), fast);
    const id = await queue.send("test.deliver", { n: 42, s: "it's" });
    await waitFor(() => got.length === 1, "delivery");
    assert.is(got[0]!.id, id);
    assert.is(got[0]!.name, "test.deliver");
    assert.equal(got[0]!.data, { n: 42, s: "it's" });
    assert.is(got[0]!.retryCount, 0);
    // LISTEN was established, so workers are woken by NOTIFY rather than only by polling.
    assert.equal(listenUnavailable(), []);
  });

  t("a backlog drains without waiting out the polling interval between jobs", async () => {
    const queue = open();
    await queue.createQueue("test.backlog");
    const done: number[] = [];
    // Scanning every 30 s; without a freed slot fetching again the second job would wait 30 s.
    // Sent before the worker starts, so no NOTIFY arrives while it works: only the backlog moves it on.
    for (let n = 0; n < 6; n++) await queue.send("test.backlog", { n });
    await queue.work<{ n: number }>("test.backlog", async (job) => void done.push(job.data.n), {
      concurrency: 1,
      pollingIntervalSeconds: 30,
    });
    await waitFor(() => done.length === 6, "backlog drained", 10_000);
    assert.equal([...done].sort(), [0, 1, 2, 3, 4, 5]);
  });

  // Polling every 30 s and the first (empty) fetch long done: a job that starts within a few seconds of
  // being sent was woken, not polled for. No duration is asserted; the margin is what proves the wake.
  const sleepy = { concurrency: 2, pollingIntervalSeconds: 30 };
  const settle = () => sleep(500); // lets the workers' first fetch come back empty and their sleep begin
  /** An idle worker on `name` (its first fetch back empty, asleep for 30 s): the ids of the jobs it runs. */
  const idleWorker = async (queue: ReturnType<typeof open>, name: string) => {
    const got: string[] = [];
    await queue.work(name, async (job) => void got.push(job.id), sleepy);
    await settle();
    return got;
  };
  /** The idle worker ran the job `id`, and within 5 s: it was woken (`how`), not polled for. */
  const ranWoken = async (got: string[], id: string | null, how: string) => {
    await waitFor(() => got.length === 1, `the ${how} worker (polling alone would take 30 s)`, 5000);
    assert.equal(got, [id]);
  };

  t("a job sent in this process wakes its idle worker, even without LISTEN", async () => {
    // No LISTEN connection, so no NOTIFY reaches this process: only send()'s own wake can start the job.
    const queue = open({ listenNotify: false });
    await queue.createQueue("test.wake");
    const got = await idleWorker(queue, "test.wake");
    await ranWoken(got, await queue.send("test.wake", {}), "woken");
  });

  t("after sendWithin commits, wake() starts the job, even without LISTEN", async () => {
    const queue = open({ listenNotify: false });
    await queue.createQueue("test.wake.within");
    await queue.prepare("test.wake.within");
    const got = await idleWorker(queue, "test.wake.within");
    let id: string | null;
    if (target.kind === "pglite") {
      id = await target.pglite.transaction((tx) =>
        queue.sendWithin((text, values) => tx.query(text, values), "test.wake.within", { n: 1 }),
      );
    } else {
      const client = new pg.Client({ connectionString: target.connectionString });
      await client.connect();
      try {
        await client.query("BEGIN");
        id = await queue.sendWithin((text, values) => client.query(text, values), "test.wake.within", { n: 1 });
        await client.query("COMMIT");
      } finally {
        await client.end();
      }
    }
    queue.wake("test.wake.within");
    await ranWoken(got, id, "woken");
  });

  t("a job sent by another process wakes this process's worker through NOTIFY", async () => {
    // Two queues on one database stand for two processes: the sender has no worker to wake in-process,
    // so only the worker process's LISTEN can start the job early (on PGlite, NOTIFY is delivered in
    // process to every listener of the instance).
    const worker = open();
    const sender = open({ listenNotify: false });
    await worker.createQueue("test.notify");
    const got = await idleWorker(worker, "test.notify");
    await ranWoken(got, await sender.send("test.notify", {}), "notified");
    assert.equal(listenUnavailable(), []);
  });

  t("a delayed job is held until its start time", async () => {
    const queue = open();
    await queue.createQueue("test.delay");
    const got: string[] = [];
    await queue.work<{ which: string }>("test.delay", async (job) => void got.push(job.data.which), fast);
    await queue.send("test.delay", { which: "delayed" }, { startAfterSeconds: 1 });
    await queue.send("test.delay", { which: "now" });
    await waitFor(() => got.length === 2, "both jobs");
    // The delayed job was sent first, and a worker takes the oldest runnable job: only its start time
    // can have kept it back while the later job was delivered.
    assert.equal(got, ["now", "delayed"]);
  });

  t("a failed attempt is retried, then succeeds", async () => {
    const queue = open();
    await queue.createQueue("test.retry", { retryLimit: 2, retryDelaySeconds: 0 });
    const attempts: number[] = [];
    let done = false;
    await queue.work(
      "test.retry",
      async (job) => {
        attempts.push(job.retryCount);
        if (attempts.length === 1) throw new Error("transient");
        done = true;
      },
      fast,
    );
    await queue.send("test.retry", {});
    await waitFor(() => done, "the retry");
    assert.equal(attempts, [0, 1]);
  });

  t("after its last retry a job moves to the dead-letter queue", async () => {
    const queue = open();
    // The dead-letter queue is not declared first: createQueue makes it.
    await queue.createQueue("test.work", { retryLimit: 1, retryDelaySeconds: 0, deadLetter: "test.dead" });
    const failing = await alwaysFailing(queue, "test.work");
    const dead: QueueJob<{ jobId: string }>[] = [];
    await queue.work<{ jobId: string }>("test.dead", async (job) => void dead.push(job), fast);
    const id = await queue.send("test.work", { jobId: "svc-00000001" });
    await waitFor(() => dead.length === 1, "the dead letter");
    assert.is(failing.attempts, 2);
    assert.equal(dead[0]!.data, { jobId: "svc-00000001" });
    assert.is(dead[0]!.name, "test.dead");
    assert.is.not(dead[0]!.id, id);
  });

  t("an attempt that outlives expireInSeconds is abandoned and retried", async () => {
    const queue = open();
    await queue.createQueue("test.expire", { retryLimit: 1, retryDelaySeconds: 0, expireInSeconds: 1 });
    const attempts: number[] = [];
    let firstAborted = false;
    let done = false;
    await queue.work(
      "test.expire",
      async (job) => {
        attempts.push(job.retryCount);
        if (job.retryCount === 0) {
          // A hung handler: it only returns once pg-boss gives up on it (or the test's own limit).
          await new Promise<void>((resolve) => {
            job.signal?.addEventListener("abort", () => resolve(), { once: true });
            setTimeout(resolve, 15_000).unref();
          });
          firstAborted = job.signal?.aborted ?? false;
          return;
        }
        done = true;
      },
      fast,
    );
    await queue.send("test.expire", {});
    await waitFor(() => done, "the second attempt");
    assert.equal(attempts, [0, 1]);
    assert.ok(firstAborted, "the abandoned attempt saw its signal abort");
  });

  t("a job whose worker died mid-attempt is retried once it expires", async () => {
    const queue = open({ superviseIntervalSeconds: 1 });
    await queue.createQueue("test.crash", { retryLimit: 1, retryDelaySeconds: 0, expireInSeconds: 1 });
    const id = await queue.send("test.crash", { n: 1 });
    // Another process claims the job and dies: plain pg-boss, fetching without ever settling.
    const other = await otherProcess();
    const claimed = await other.fetch("test.crash");
    assert.is(claimed[0]?.id, id);
    await other.stop({ graceful: false });

    const got: QueueJob[] = [];
    await queue.work("test.crash", async (job) => void got.push(job), fast);
    await waitFor(() => got.length === 1, "the expired job");
    assert.is(got[0]!.id, id);
    assert.is(got[0]!.retryCount, 1);
  });

  t("a burst is taken in batches: one fetch fills every free slot", async () => {
    if (target.kind !== "pglite") return; // counted where every statement can be seen (see countingPglite)
    const counting = countingPglite(target.pglite);
    const queue = open({}, { kind: "pglite", pglite: counting.pglite });
    await queue.createQueue("test.batch");
    for (let n = 0; n < 40; n++) await queue.send("test.batch", { n });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    let most = 0;
    let running = 0;
    const before = counting.count(FETCH);
    await queue.work(
      "test.batch",
      async () => {
        started++;
        most = Math.max(most, ++running);
        await gate;
        running--;
      },
      { concurrency: 8, pollingIntervalSeconds: 30 },
    );
    await waitFor(() => started === 8, "the first batch");
    await sleep(300);
    assert.is(started, 8, "no more than the slots");
    // One fetch (two if the scan's wake came in between), where a poller per slot makes 8.
    const fetches = counting.count(FETCH) - before;
    assert.ok(fetches <= 2, `${fetches} fetches to start 8 jobs`);
    release();
    await waitFor(() => started === 40, "the rest of the burst");
    assert.is(most, 8);
  });

  t("a process at rest makes next to no statements", async () => {
    // Counted on PGlite, where every statement is seen. Postgres's own counts (pg_stat_database) are sent
    // by each connection up to a minute late, so a short window there would count the set-up too;
    // test/bench/idle.bench.ts measures a whole idle server on both over a longer window.
    if (target.kind !== "pglite") return;
    const counting = countingPglite(target.pglite);
    const queue = open({}, { kind: "pglite", pglite: counting.pglite });
    // As many queues as the kernel works (every job kind and its dead letter), each with its slots.
    for (let i = 0; i < 30; i++) {
      await queue.createQueue(`test.rest.${i}`);
      await queue.work(`test.rest.${i}`, async () => {}, { concurrency: 4 });
    }
    await sleep(1000); // the first fetches and the first scan
    const before = counting.count();
    await sleep(5000);
    // The scan runs at most every 10 s (the default); pg-boss's own maintenance now and then. Polling per
    // slot every 2 s, as before, made 30 x 4 / 2 x 5 = 300.
    const made = counting.count() - before;
    assert.ok(made <= 5, `${made} statements in 5 s at rest`);
  });

  t(
    "the scan comes every minute at rest with LISTEN up, at the workers' pace while an attempt runs or without LISTEN",
    async () => {
      // Counted on PGlite, where every statement is seen. An attempt running anywhere may belong to a process
      // that died: maintenance must come round to expire it, and the scan to take its retry.
      if (target.kind !== "pglite") return;
      const SCAN = /bool_or\(state = 'active'\)/;
      const counting = countingPglite(target.pglite);
      const scansOver = async (ms: number) => {
        const before = counting.count(SCAN);
        await sleep(ms);
        return counting.count(SCAN) - before;
      };
      const listening = open({}, { kind: "pglite", pglite: counting.pglite });
      await listening.createQueue("test.pace");
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let started = false;
      await listening.work(
        "test.pace",
        async () => {
          started = true;
          await gate;
        },
        fast,
      );
      await sleep(1000); // the first fetch and the first scan
      const atRest = await scansOver(3000);
      assert.ok(atRest <= 1, `${atRest} scans in 3 s at rest`);
      await listening.send("test.pace", {});
      await waitFor(() => started, "the job to start");
      await sleep(600); // the scan scheduled at rest still stands: the next one sees the attempt
      const running = await scansOver(3000);
      release();
      assert.ok(running >= 3, `${running} scans in 3 s while an attempt runs (every 0.5 s)`);

      const deaf = open({ listenNotify: false }, { kind: "pglite", pglite: counting.pglite });
      await deaf.createQueue("test.pace.deaf");
      await deaf.work("test.pace.deaf", async () => {}, fast);
      await sleep(1000);
      const polled = await scansOver(3000);
      assert.ok(polled >= 3, `${polled} scans in 3 s without LISTEN (every 0.5 s)`);
    },
  );

  t("a job whose claim is lost (its attempt expired elsewhere) is told to stop", async () => {
    // The heartbeat finds the attempt no longer ours: another process's supervisor failed it, say, after
    // this one looked dead. Simulated by failing it from a second queue handle with pg-boss's own call.
    const queue = open();
    await queue.createQueue("test.lost", { retryLimit: 1, retryDelaySeconds: 60, heartbeatSeconds: 10 });
    let aborted: unknown;
    let started = false;
    await queue.work(
      "test.lost",
      async (job) => {
        started = true;
        await untilAborted(job.signal);
        aborted = job.signal?.reason;
      },
      fast,
    );
    const id = await queue.send("test.lost", {});
    await waitFor(() => started, "the handler to start");
    const other = await otherProcess();
    await other.fail("test.lost", id!, { message: "expired elsewhere" });
    // The heartbeat runs every 5 s (half of heartbeatSeconds).
    await waitFor(() => aborted !== undefined, "the abort", 15_000);
    assert.match(String((aborted as Error).message), /no longer active/);
  });

  t("two processes never run the same job at once", async () => {
    const a = open();
    const b = open();
    await a.createQueue("test.shared");
    const seen = new Map<string, number>();
    let overlap = false;
    const handler = async (job: QueueJob) => {
      const n = (seen.get(job.id) ?? 0) + 1;
      seen.set(job.id, n);
      if (n > 1) overlap = true;
      await sleep(5);
    };
    await a.work("test.shared", handler, { concurrency: 4 });
    await b.work("test.shared", handler, { concurrency: 4 });
    for (let n = 0; n < 60; n++) await (n % 2 ? a : b).send("test.shared", { n });
    await waitFor(() => seen.size === 60, "every job");
    assert.not.ok(overlap, "a job ran twice");
  });

  t("re-declaring a queue applies its new options", async () => {
    const queue = open();
    await queue.createQueue("test.redeclare", { retryLimit: 0 });
    await queue.createQueue("test.redeclare", {
      retryLimit: 1,
      retryDelaySeconds: 0,
      deadLetter: "test.redeclare.dead",
    });
    const failing = await alwaysFailing(queue, "test.redeclare");
    const dead: unknown[] = [];
    await queue.work("test.redeclare.dead", async (job) => void dead.push(job.data), fast);
    await queue.send("test.redeclare", { n: 3 });
    await waitFor(() => dead.length === 1, "the dead letter");
    assert.is(failing.attempts, 2);
    assert.equal(dead, [{ n: 3 }]);
  });

  t("a singletonKey admits one job at a time on an exclusive queue", async () => {
    const queue = open();
    await queue.createQueue("test.single", { policy: "exclusive" });
    const first = await queue.send("test.single", {}, { singletonKey: "svc-00000001" });
    const again = await queue.send("test.single", {}, { singletonKey: "svc-00000001" });
    const other = await queue.send("test.single", {}, { singletonKey: "svc-00000002" });
    assert.type(first, "string");
    assert.is(again, null);
    assert.type(other, "string");
  });

  t("stop waits for a running handler to finish, and the queue stays stopped", async () => {
    const queue = open();
    await queue.createQueue("test.stop");
    let started = false;
    let finished = false;
    await queue.work(
      "test.stop",
      async () => {
        started = true;
        await sleep(700);
        finished = true;
      },
      fast,
    );
    await queue.send("test.stop", {});
    await waitFor(() => started, "the handler to start");
    await queue.stop();
    assert.ok(finished, "the handler finished before stop() returned");
    // A late send must not quietly start the queue again.
    await queue.send("test.stop", {}).then(
      () => assert.unreachable("a send after stop() was accepted"),
      (err: Error) => assert.match(err.message, /stopped/),
    );
  });

  t(
    "stop hands back a handler still running at its time limit: the job waits again, its attempt not counted",
    async () => {
      // retryLimit 0: had the stop failed the attempt (pg-boss's own shutdown does), the job would be lost.
      const first = open({ stopTimeoutMs: 300 });
      await first.createQueue("test.handback", { retryLimit: 0 });
      let started = false;
      let aborted = false;
      await first.work(
        "test.handback",
        async (job) => {
          started = true;
          // A long job: it ends only when its signal says the attempt was given up.
          await untilAborted(job.signal);
          aborted = true;
          throw new Error("abandoned");
        },
        fast,
      );
      const id = await first.send("test.handback", { n: 1 });
      await waitFor(() => started, "the handler to start");
      await first.stop();
      assert.ok(aborted, "the handler's signal aborted");

      const second = open();
      const got: QueueJob[] = [];
      await second.work("test.handback", async (job) => void got.push(job), fast);
      await waitFor(() => got.length === 1, "the handed-back job on the next start");
      assert.is(got[0]!.id, id);
      assert.is(got[0]!.retryCount, 0, "the interrupted attempt was not counted");
    },
  );

  t("bad queue names and options are refused", async () => {
    const queue = open();
    for (const name of ["", "has space", "quote'd", "semi;colon"]) {
      await queue.createQueue(name).then(
        () => assert.unreachable(`"${name}" was accepted`),
        (err: Error) => assert.match(err.message, /may hold only/),
      );
    }
    await queue.createQueue("test.opts", { retryDelaySeconds: 0.5 }).then(
      () => assert.unreachable("a fractional retry delay was accepted"),
      (err: Error) => assert.match(err.message, /retryDelaySeconds/),
    );
  });

  t("a job sent before a restart is delivered after it", async () => {
    if (target.kind === "postgres") {
      const before = open();
      await before.createQueue("test.durable");
      await before.send("test.durable", { n: 7 });
      await before.stop();

      const after = open();
      const got: number[] = [];
      await after.work<{ n: number }>("test.durable", async (job) => void got.push(job.data.n), fast);
      await waitFor(() => got.length === 1, "the job sent before the restart");
      assert.equal(got, [7]);
      return;
    }
    // PGlite: the whole database is closed and reopened from its data directory.
    const dir = mkdtempSync(join(tmpdir(), "mediagate-queue-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const first = new PGlite(join(dir, "pgdata"), { loadDataDir: await pgliteTemplate() });
    const before = open({}, { kind: "pglite", pglite: first });
    await before.createQueue("test.durable");
    await before.send("test.durable", { n: 7 });
    await before.stop();
    await first.close();

    const second = new PGlite(join(dir, "pgdata"));
    // Runs after the queue's own stop (cleanups follow queues).
    cleanups.unshift(() => second.close());
    const after = open({}, { kind: "pglite", pglite: second });
    const got: number[] = [];
    await after.work<{ n: number }>("test.durable", async (job) => void got.push(job.data.n), fast);
    await waitFor(() => got.length === 1, "the job sent before the restart");
    assert.equal(got, [7]);
  });

  if (backend.name === "pglite") {
    t("a send waits for an open application transaction instead of joining it", async () => {
      const queue = open();
      await queue.createQueue("test.tx");
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const transaction = pglite!.transaction(async (tx) => {
        entered();
        await held;
        await tx.rollback();
      });
      await inside;
      let sent = false;
      const sending = queue.send("test.tx", { n: 1 }).then((id) => ((sent = true), id));
      await sleep(300);
      assert.not.ok(sent, "the send waited for the transaction");
      release();
      await transaction;
      const id = await sending;
      // Had the insert run inside the transaction, the rollback would have taken the job with it.
      const got: string[] = [];
      await queue.work("test.tx", async (job) => void got.push(job.id), fast);
      await waitFor(() => got.length === 1, "the job");
      assert.equal(got, [id]);
    });

    t("a failing pg-boss transaction block leaves no aborted transaction behind", async () => {
      const db = pgliteDatabase(pglite!);
      // Issued together, so the application transaction is queued on PGlite's mutex behind the block.
      const failing = db.executeSql("BEGIN; SET LOCAL lock_timeout = 1000; SELECT 1/0; COMMIT;").then(
        () => "no error",
        (err: Error) => err.message,
      );
      const app = pglite!.transaction(async (tx) => (await tx.query<{ y: number }>("select 2 as y")).rows[0]!.y);
      assert.is(await failing, "division by zero");
      assert.is(await app, 2);
      assert.equal((await pglite!.query<{ x: number }>("select 1 as x")).rows, [{ x: 1 }]);
      // A block that succeeds still returns the rows of the statements inside it.
      const ok = await db.executeSql("BEGIN; SET LOCAL lock_timeout = 1000; SELECT 3 AS z; COMMIT;");
      assert.equal(ok.rows, [{ z: 3 }]);
    });
  }

  t.run();
}
