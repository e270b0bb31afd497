// How a process takes work from its queues (storage/queue.ts's work()): one fetcher per queue, one scan for
// all of them.
//
// A fetcher owns a queue's local slots. It fetches as many jobs as it has free slots in one statement, hands
// each to a slot, and fetches again only when told there may be more: a send from this process, a NOTIFY
// from another one, a full batch (a backlog), a slot freed while a backlog waits, or the scan. So an idle
// queue costs nothing, and a burst of N jobs costs about N/slots fetches instead of one poll per slot.
//
// The scan is one statement for every queue this process works: which of them hold a job due now (a retry,
// a delayed job, one sent while no NOTIFY could reach us), when the next deferred one comes due, and whether
// any attempt is running anywhere. It runs when that time comes, or after `activeSeconds` at the latest
// while attempts run (one of them may belong to a process that died, and comes back as a retry once
// maintenance expires it), or `restSeconds` while none does: a deployment at rest makes one small query a
// minute rather than one per slot every two seconds.
//
// What pg-boss's own worker does around a handler is done here the same way, with pg-boss's public calls:
// settling is fenced to the attempt fetched (complete/fail/touch with { id, retryCount }), a handler that
// outlives `expireInSeconds` has its attempt failed and its signal aborted, and the heartbeat of every job
// a queue is running is refreshed in one statement (touch), aborting any job whose claim went elsewhere.
import type { Job } from "pg-boss";

/** The calls of pg-boss a fetcher needs (a PgBoss instance has them all). */
export interface BossCalls {
  fetch<T>(name: string, options: { batchSize: number }): Promise<Job<T>[]>;
  complete(name: string, jobs: Claim[]): Promise<unknown>;
  fail(name: string, jobs: Claim[], data: object): Promise<unknown>;
  touch(name: string, jobs: Claim[]): Promise<{ settled?: string[] }>;
}

/** An attempt as pg-boss fences it: settling with it does nothing once the attempt is no longer ours. */
interface Claim {
  id: string;
  retryCount: number;
}

export interface Handed<T> {
  id: string;
  name: string;
  data: T;
  retryCount: number;
  signal: AbortSignal;
}

/** A job a slot holds, as stop() sees it. */
export interface HeldJob {
  name: string;
  /** Stop the handler without settling: the job has been handed back to the queue. */
  release(reason: Error): void;
}

export interface FetcherOptions<T> {
  name: string;
  concurrency: number;
  handler: (job: Handed<T>) => Promise<void>;
  boss: BossCalls;
  /** Every job this process holds, by id (shared by the queue's fetchers, for stop()). */
  held: Map<string, HeldJob>;
  /** Called when `held` becomes empty. */
  onEmpty(): void;
  /** A failed attempt may come back later (a retry delay): the scan should look again. */
  onFailed(): void;
  /** Attempts started here: the scan should keep the pace of running work. */
  onStarted?(): void;
  /** Jobs fetched after stop() began: they go back to the queue at once. */
  handBack(jobs: Array<{ name: string; id: string }>): Promise<void>;
  onError(err: unknown): void;
}

export interface Fetcher {
  readonly name: string;
  /** Fetch now if a slot is free; coalesces with a fetch in flight. */
  pump(): void;
  /** No more fetches; resolves when a fetch in flight has ended. */
  close(): Promise<void>;
}

export function createFetcher<T>(o: FetcherOptions<T>): Fetcher {
  const { name, boss } = o;
  let active = 0;
  let closed = false;
  let fetching: Promise<void> | undefined;
  // True from a pump until its loop has decided to end, in the same turn: a wake after that starts a new
  // loop, a wake before it is seen by the loop's last check (`fetching` is cleared a few turns later).
  let looping = false;
  // A wake that arrived while a fetch was in flight: that fetch may not have seen the new job.
  let again = false;
  // The last fetch filled every free slot (or found none free): more jobs are probably waiting.
  let backlog = false;
  const claims = new Map<string, Claim & { heartbeatSeconds: number; lost: AbortController }>();
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let heartbeatMs = 0;

  const refreshHeartbeat = () => {
    const seconds = Math.min(...[...claims.values()].map((c) => c.heartbeatSeconds).filter((s) => s > 0));
    const ms = Number.isFinite(seconds) ? (seconds * 1000) / 2 : 0;
    if (ms === heartbeatMs) return;
    clearInterval(heartbeat);
    heartbeat = undefined;
    heartbeatMs = ms;
    if (ms > 0) heartbeat = setInterval(beat, ms);
  };

  // One touch for every job of this queue held here. A job missing from the answer is no longer active
  // under our attempt (expired by a supervisor that thought us dead, cancelled): its handler is told to stop.
  async function beat() {
    const held = [...claims.values()].filter((c) => c.heartbeatSeconds > 0);
    if (!held.length) return;
    let touched: { settled?: string[] };
    try {
      touched = await boss.touch(
        name,
        held.map(({ id, retryCount }) => ({ id, retryCount })),
      );
    } catch (err) {
      o.onError(err); // says nothing about the claims: nothing is aborted
      return;
    }
    if (!touched.settled) return;
    const alive = new Set(touched.settled);
    for (const c of held)
      if (!alive.has(c.id) && claims.has(c.id))
        c.lost.abort(new Error(`job ${c.id} is no longer active under this worker's claim`));
  }

  function start(job: Job<T>) {
    active++;
    const claim = {
      id: job.id,
      retryCount: job.retryCount ?? 0,
      heartbeatSeconds: job.heartbeatSeconds ?? 0,
      lost: new AbortController(),
    };
    claims.set(job.id, claim);
    refreshHeartbeat();
    const stop = new AbortController();
    let ended = false;
    const end = () => {
      if (ended) return false;
      ended = true;
      clearTimeout(expiry);
      claims.delete(job.id);
      refreshHeartbeat();
      return true;
    };
    const free = () => {
      active--;
      if (o.held.get(job.id) === entry) o.held.delete(job.id);
      if (o.held.size === 0) o.onEmpty();
      if (backlog && !closed) pump();
    };
    const settle = async (outcome: "complete" | "fail", err?: unknown) => {
      if (!end()) return;
      const fence = [{ id: claim.id, retryCount: claim.retryCount }];
      try {
        if (outcome === "complete") await boss.complete(name, fence);
        else await boss.fail(name, fence, { message: err instanceof Error ? err.message : String(err) });
      } catch (e) {
        o.onError(e); // the attempt stays active; its heartbeat stops, and a supervisor retries it
      }
      if (outcome === "fail") {
        o.onFailed();
        backlog = true; // a retry with no delay is due now
      }
      free();
    };
    const entry: HeldJob = {
      name,
      release(reason) {
        if (!end()) return;
        stop.abort(reason);
        free();
      },
    };
    o.held.set(job.id, entry);
    // Like pg-boss's worker: past its time the attempt is failed (and retried) and its handler told to
    // stop; the slot is free again at once.
    const expiry = setTimeout(
      () => {
        // ATTEMPT_EXPIRED: the job runtime counts a timed-out attempt as a failed one (core/jobs.ts).
        const err = Object.assign(new Error(`handler execution exceeded ${job.expireInSeconds}s`), {
          code: "ATTEMPT_EXPIRED",
        });
        stop.abort(err);
        void settle("fail", err);
      },
      (job.expireInSeconds || 900) * 1000,
    );
    const signal = AbortSignal.any([stop.signal, claim.lost.signal]);
    Promise.resolve()
      .then(() => o.handler({ id: job.id, name: job.name, data: job.data, retryCount: claim.retryCount, signal }))
      .then(
        () => settle("complete"),
        (err) => settle("fail", err),
      );
  }

  async function fetchWhileFree() {
    try {
      await fetchLoop();
    } finally {
      looping = false;
    }
  }

  async function fetchLoop() {
    do {
      again = false;
      const free = o.concurrency - active;
      if (free <= 0) {
        backlog = true;
        return;
      }
      const jobs = await boss.fetch<T>(name, { batchSize: free });
      if (closed) {
        if (jobs.length) await o.handBack(jobs.map((j) => ({ name, id: j.id })));
        return;
      }
      backlog = jobs.length === free;
      for (const job of jobs) start(job);
      if (jobs.length) o.onStarted?.();
    } while ((again || backlog) && !closed);
  }

  function pump() {
    if (closed) return;
    if (looping) {
      again = true;
      return;
    }
    looping = true;
    fetching = fetchWhileFree()
      .catch((err) => o.onError(err))
      .finally(() => (fetching = undefined));
  }

  return {
    name,
    pump,
    async close() {
      closed = true;
      await fetching;
      clearInterval(heartbeat);
      heartbeat = undefined;
      heartbeatMs = 0;
    },
  };
}

export interface ScannerOptions {
  /** Runs the scan statement on pg-boss's connection. */
  query(text: string, values: unknown[]): Promise<{ rows: any[] }>;
  schema: string;
  fetchers: ReadonlyMap<string, Fetcher>;
  /** Longest time between two scans while an attempt of these queues runs, in any process. */
  activeSeconds(): number;
  /** Longest time between two scans while none runs. */
  restSeconds(): number;
  /** After each scan: whether an attempt was running (queue.ts paces maintenance by it). */
  onScanned?(active: boolean): void;
  onError(err: unknown): void;
}

export interface Scanner {
  /** Scan within `seconds` (0: now), unless one is already due sooner. */
  soon(seconds?: number): void;
  stop(): void;
}

export function createScanner(o: ScannerOptions): Scanner {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let dueAt = Infinity;
  let running = false;
  let rerun = false;
  let stopped = false;

  const schedule = (seconds: number) => {
    if (stopped) return;
    const at = Date.now() + Math.max(0, seconds) * 1000;
    if (timer && at >= dueAt) return;
    clearTimeout(timer);
    dueAt = at;
    timer = setTimeout(scan, at - Date.now());
    timer.unref?.();
  };

  // `state < 'active' AND NOT blocked` is pg-boss's own test of a fetchable job (its job_i11 index), and
  // the seconds are the database's, so another host's clock does not matter. `later` is the next job of a
  // queue that is not yet due: when one job is due now, the pump fetches it, and the scan must still know
  // when the next comes due (without it, ten polls parked a moment apart ran one at its time and the other
  // nine at the rest interval, 10 s late).
  const text = `SELECT name,
      extract(epoch FROM min(start_after) FILTER (WHERE state < 'active' AND NOT blocked) - now())::float8 AS wait,
      extract(epoch FROM min(start_after) FILTER (WHERE state < 'active' AND NOT blocked AND start_after > now()) - now())::float8 AS later,
      bool_or(state = 'active') AS active
    FROM ${o.schema}.job WHERE name = ANY($1::text[]) AND state <= 'active' GROUP BY name`;

  async function scan() {
    timer = undefined;
    dueAt = Infinity;
    if (stopped) return;
    if (running) {
      rerun = true;
      return;
    }
    running = true;
    // A failed scan is retried at the shorter pace.
    let next = o.activeSeconds();
    try {
      const names = [...o.fetchers.keys()];
      let active = false;
      let soonest = Infinity;
      if (names.length) {
        const { rows } = await o.query(text, [names]);
        for (const row of rows) {
          if (row.active) active = true;
          if (row.later !== null) soonest = Math.min(soonest, Number(row.later));
          if (row.wait === null) continue;
          const wait = Number(row.wait);
          if (wait <= 0) o.fetchers.get(row.name)?.pump();
          else soonest = Math.min(soonest, wait);
        }
      }
      next = Math.min(active ? o.activeSeconds() : o.restSeconds(), soonest);
      if (!stopped) o.onScanned?.(active);
    } catch (err) {
      if (!stopped) o.onError(err);
    } finally {
      running = false;
    }
    schedule(rerun ? 0 : next);
    rerun = false;
  }

  return {
    soon(seconds = 0) {
      schedule(seconds);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
