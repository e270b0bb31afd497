// Waiting on an upstream without holding a worker slot (issue 20, contracts/upstream.ts).
//
// A runner calls `ctx.awaitUpstream(step, provider, build)`. The first time, it builds the request, submits
// it and stores the handle in `job_waits`; from then on each attempt of the job polls that handle. While the
// upstream says "pending", the attempt stops until the next poll: the runtime (core/jobs.ts) commits the next poll as a delayed
// queue job and ends the attempt, so the slot goes back to the pool and the wait costs a row. The runner's
// code is written straight through: `awaitUpstream` simply never resolves in an attempt that stops (the
// attempt's signal is aborted and its promise dropped), and the next attempt runs the runner from the top,
// where `awaitUpstream` finds the stored handle instead of submitting again.
//
// One poller per handle, across processes and crashes, by a sequence number:
// - every queue job of a waiting job carries the `seq` it was sent with, and only the queue job whose `seq`
//   is the row's may run (a stale one, e.g. the delayed poll a callback overtook, does nothing);
// - an attempt claims the row (`claimed_by` = its queue job id) before it polls; stopping until the next poll moves `seq` on in
//   the transaction that sends the next queue job, so a crash before that commit leaves the same queue job
//   to be retried (same id, same claim) and a crash after it leaves only the new one;
// - a callback moves `seq` on only while the row is `parked` (no attempt holds it); during a poll it sets `wake`, and the stop that
//   follows schedules the next poll at once.
import { createHmac } from "node:crypto";
import type { Kysely, Selectable, Transaction } from "kysely";
import { sql } from "kysely";
import { type UpstreamHandle, type UpstreamProvider, UpstreamTimeoutError } from "../contracts/upstream.ts";
import { errorBackoff, MAX_POLL_ERRORS } from "../lib/poll-backoff.ts";
import type { JobWaitsTable, KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import type { Logger } from "./log.ts";

/** What a provider may be called: it names its callback route, `/upstream/<name>/callback`. */
export const PROVIDER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** The longest the runtime waits between polls when the provider does not say. */
const MAX_DEFAULT_DELAY_MS = 30_000;
/** Polls answered "again soon" in one attempt before the attempt stops until the next poll anyway (a provider's bug). */
const INLINE_POLLS = 10;
/**
 * A wait this short is slept in place: stopping until the next poll costs two transactions and a fetch, more than holding the
 * slot a quarter of a second (and delayed queue jobs come due in whole seconds).
 */
const INLINE_WAIT_MS = 250;
/**
 * ...and one attempt sleeps at most this long in all. Without a total, an upstream that asks for a look every
 * quarter second (a 1 s sandbox, a fast model) held the slot for its whole run: 1,200 jobs at a 1 s latency
 * took 318 s on 4 image slots, against 100 s with no latency at all.
 */
const INLINE_BUDGET_MS = 250;

export type WaitRow = Selectable<JobWaitsTable>;

export interface AwaitUpstreamOptions {
  /** The upstream's whole time: pending past it, the work is cancelled and UpstreamTimeoutError thrown. */
  deadlineSeconds: number;
  /** 0-1 of the step, from the upstream's progress and from the work inside a poll. */
  onProgress?(fraction: number, message?: string): Promise<void> | void;
}

/** What an attempt that stops until its upstream's next poll asks the runtime to commit. */
export interface NextPoll {
  wait: WaitRow;
  delayMs: number;
}

const sleepUnlessAborted = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => (clearTimeout(timer), signal.removeEventListener("abort", done), resolve());
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

/** Delay before the next poll when the provider gives none: 1 s, growing by half each poll, up to 30 s. */
export const defaultPollDelay = (polls: number) => Math.min(MAX_DEFAULT_DELAY_MS, Math.round(1000 * 1.5 ** polls));

/** The key a provider signs its callbacks with: one per provider, derived from UPSTREAM_CALLBACK_SECRET. */
export const callbackSecret = (secret: string, provider: string) =>
  createHmac("sha256", secret).update(`upstream-callback:${provider}`).digest("hex");

export interface WaitsDeps {
  db: Kysely<KernelTables>;
  clock: Clock;
  log: Logger;
  /**
   * `$PUBLIC_URL` and UPSTREAM_CALLBACK_SECRET (null when unset: only providers with `verifyCallback`, which
   * check the service's own signature, are offered a callback then); null: callbacks off.
   */
  callbacks: { publicUrl: string; secret: string | null } | null;
}

/**
 * Claims the job's wait for this attempt: null when the attempt is stale (its `seq` is not the row's, or
 * another attempt holds the claim). `undefined` wait = the job has not submitted yet. `waitSeq` is the wait
 * row's seq as the caller read it with the job's row (null: no wait row), which spares the job's first queue
 * job a statement of its own: with a kind's few slots, each statement of an attempt's start is a share of
 * how many jobs a second it can start.
 */
export async function claimWait(
  db: Kysely<KernelTables>,
  jobId: string,
  seq: number,
  queueJobId: string,
  waitSeq: number | null,
): Promise<{ wait: WaitRow | undefined } | null> {
  if (seq === 0) {
    // The job's first queue job: most jobs never wait, and the read with the job's row told.
    if (waitSeq === null) return { wait: undefined };
    if (waitSeq !== 0) return null; // a later seq stands for the job now
  }
  const claimed = await db
    .updateTable("job_waits")
    .set({ parked: false, claimed_by: queueJobId })
    .where("job_id", "=", jobId)
    .where("seq", "=", seq)
    .where((eb) => eb.or([eb("parked", "=", true), eb("claimed_by", "=", queueJobId)]))
    .returningAll()
    .executeTakeFirst();
  return claimed ? { wait: claimed } : null;
}

/**
 * Commits the next poll of an attempt that stops: moves `seq` on and sends the next poll in one transaction. Returns the delay used (0 when
 * a callback asked for an early poll), or null when the claim was lost (nothing is sent).
 */
export async function scheduleNextPoll(
  db: Kysely<KernelTables>,
  next: NextPoll,
  queueJobId: string,
  nextPollAt: Date,
  send: (trx: Transaction<KernelTables>, seq: number, delaySeconds: number) => Promise<void>,
): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom("job_waits")
      .select(["seq", "wake", "claimed_by"])
      .where("job_id", "=", next.wait.job_id)
      .forUpdate()
      .executeTakeFirst();
    if (!row || row.seq !== next.wait.seq || row.claimed_by !== queueJobId) return null;
    const delaySeconds = row.wake ? 0 : Math.ceil(next.delayMs / 1000);
    await trx
      .updateTable("job_waits")
      .set({
        seq: row.seq + 1,
        parked: true,
        claimed_by: null,
        wake: false,
        handle: JSON.stringify(next.wait.handle),
        polls: next.wait.polls,
        errors: next.wait.errors,
        next_poll_at: row.wake ? sql<Date>`now()` : nextPollAt,
      })
      .where("job_id", "=", next.wait.job_id)
      .execute();
    await send(trx, row.seq + 1, delaySeconds);
    return delaySeconds;
  });
}

/**
 * One attempt's view of its job's wait: `awaitUpstream` for the runner, and the handles that finished, for
 * `release` once the job has ended.
 */
export class AttemptWaits {
  private finished: Array<{ provider: UpstreamProvider<any, any>; handle: UpstreamHandle }> = [];
  /** Slept in place so far, holding the slot (see INLINE_BUDGET_MS). */
  private inlineMs = 0;

  constructor(
    private readonly deps: WaitsDeps,
    private readonly jobId: string,
    private readonly queueJobId: string,
    private wait: WaitRow | undefined,
    private readonly signal: AbortSignal,
    /** Called once when the attempt stops until the next poll; the runtime commits it and ends the attempt. */
    private readonly onPollLater: (next: NextPoll) => void,
    /**
     * Ends the attempt as abandoned, for a failure of the wait's own bookkeeping (a database error, a claim
     * lost): the runners' `if (ctx.signal.aborted) throw err` then passes it through untouched, and the queue
     * retries, instead of a runner taking it for the provider's failure and ending the job.
     */
    private readonly abandon: (reason: Error) => void,
  ) {}

  /** Runs a statement of the wait's own; its failure abandons the attempt (see `abandon`). */
  private async own<T>(what: Promise<T>): Promise<T> {
    try {
      return await what;
    } catch (err) {
      this.abandon(err as Error);
      throw err;
    }
  }

  /** The step of the stored wait, if any. */
  get step(): string | null {
    return this.wait?.step ?? null;
  }

  async awaitUpstream<Request, Result>(
    step: string,
    provider: UpstreamProvider<Request, Result>,
    build: () => Request | Promise<Request>,
    options: AwaitUpstreamOptions,
  ): Promise<Result> {
    const { db, clock, log } = this.deps;
    if (!PROVIDER_NAME.test(provider.name))
      throw new Error(
        `upstream provider name "${provider.name}" must be lowercase letters, digits, dots, dashes and underscores (it names its callback route)`,
      );
    let w = this.wait;
    if (!w || w.step !== step) {
      // Built only now: a request may be costly to assemble (frames fetched, references read).
      const request = await build();
      this.alive();
      const callbacks = this.deps.callbacks;
      const handle = await provider.submit(request, {
        idempotencyKey: `${this.jobId}:${step}`,
        signal: this.signal,
        ...(callbacks && (callbacks.secret || provider.verifyCallback)
          ? {
              callback: {
                url: `${callbacks.publicUrl}/upstream/${encodeURIComponent(provider.name)}/callback`,
                secret: callbacks.secret ? callbackSecret(callbacks.secret, provider.name) : "",
              },
            }
          : {}),
      });
      this.alive();
      const now = clock.now();
      const values = {
        step,
        provider: provider.name,
        upstream_id: handle.id,
        handle: JSON.stringify(handle),
        parked: false,
        claimed_by: this.queueJobId,
        wake: false,
        done: false,
        polls: 0,
        errors: 0,
        submitted_at: new Date(now),
        deadline_at: new Date(now + options.deadlineSeconds * 1000),
        next_poll_at: null,
      };
      const seq = w?.seq ?? 0;
      const stored = await this.own(
        db
          .insertInto("job_waits")
          .values({ job_id: this.jobId, seq, ...values })
          .onConflict((oc) =>
            oc
              .column("job_id")
              .doUpdateSet(values)
              .where("job_waits.seq", "=", seq)
              .where("job_waits.claimed_by", "=", this.queueJobId),
          )
          .returningAll()
          .executeTakeFirst(),
      );
      if (!stored) {
        const lost = new Error(`job ${this.jobId}: its wait was taken over by another attempt`);
        this.abandon(lost);
        throw lost;
      }
      this.wait = w = stored;
      const first = handle.pollAfterMs ?? 0;
      if (!this.mayWaitInPlace(first)) return this.pollLater(w, first);
      if (first > 0) await sleepUnlessAborted(first, this.signal);
    }

    const handle = w.handle;
    const onProgress = options.onProgress ?? (() => {});
    for (let inline = 0; ; inline++) {
      let result;
      try {
        result = await provider.poll(handle, { signal: this.signal, onProgress });
      } catch (err) {
        if (this.signal.aborted) throw err;
        const errors = w.errors + 1;
        if (errors >= MAX_POLL_ERRORS) throw err;
        log.warn(
          `job ${this.jobId}: polling ${provider.name} failed (${errors} in a row), trying again: ${err instanceof Error ? err.message : String(err)}`,
        );
        return this.pollLater({ ...w, errors }, errorBackoff(errors));
      }
      this.alive();
      if (result.state === "done") {
        if (!w.done)
          await this.own(db.updateTable("job_waits").set({ done: true }).where("job_id", "=", this.jobId).execute());
        this.finished.push({ provider, handle });
        return result.result;
      }
      if (result.state === "failed") {
        // Nothing to keep: the upstream may forget it now (a chain's next route may still be ahead).
        await provider
          .release?.(handle)
          .catch((err) => log.warn(`job ${this.jobId}: releasing ${provider.name} ${handle.id} failed`, err));
        throw result.error;
      }
      if (clock.now() >= new Date(w.deadline_at).getTime()) {
        await provider
          .cancel?.(handle)
          .catch((err) => log.warn(`job ${this.jobId}: cancelling ${provider.name} ${handle.id} failed`, err));
        throw new UpstreamTimeoutError(
          `${provider.name} did not finish ${handle.id} within ${options.deadlineSeconds} s`,
        );
      }
      if (result.progress !== undefined) await onProgress(Math.max(0, Math.min(1, result.progress)), result.message);
      const polls: number = w.polls + 1;
      w = { ...w, polls, errors: 0 };
      const asked = result.pollAfterMs ?? defaultPollDelay(polls);
      if (inline < INLINE_POLLS && this.mayWaitInPlace(asked)) {
        if (asked > 0) await sleepUnlessAborted(asked, this.signal);
        this.alive();
        continue;
      }
      // Never past the deadline: the poll that finds it passed is the one that cancels.
      const untilDeadline = new Date(w.deadline_at).getTime() - clock.now();
      return this.pollLater(w, Math.max(1, Math.min(Math.max(asked, 1000), untilDeadline)));
    }
  }

  /** Whether `ms` may be slept holding the slot: a short wait, within the attempt's total (spends it). */
  private mayWaitInPlace(ms: number): boolean {
    if (ms > INLINE_WAIT_MS || this.inlineMs + ms > INLINE_BUDGET_MS) return false;
    this.inlineMs += ms;
    return true;
  }

  /** Tells the providers of finished handles that the job is over (their results are kept). */
  async release(): Promise<void> {
    for (const { provider, handle } of this.finished.splice(0)) {
      await provider
        .release?.(handle)
        .catch((err) => this.deps.log.warn(`job ${this.jobId}: releasing ${provider.name} ${handle.id} failed`, err));
    }
  }

  private pollLater(wait: WaitRow, delayMs: number): Promise<never> {
    // An attempt the queue gave up on (expired, handed back) commits nothing: another may hold the claim now.
    this.alive();
    this.onPollLater({ wait, delayMs });
    // Never settles: the runner's code after this point runs in the next attempt, from the top.
    return new Promise<never>(() => {});
  }

  private alive() {
    if (this.signal.aborted) throw new Error(`job ${this.jobId}: attempt abandoned`);
  }
}
