// The job runtime. A plugin declares a job kind once (states, legal transitions, terminal states, runner);
// the kernel makes a pg-boss queue of it, runs it, and enforces the state machine: an illegal transition
// throws (a bug, never a silent write), progress is stored on the job row and published, and a terminal
// failure refunds in the same transaction as the state change (core/job-transactions.ts finishJob, exactly once).
//
// Crash safety, in order of what can go wrong:
// - a submit's charge, job rows and queue jobs commit in one transaction (Queue.sendWithin), so a job is
//   never charged without being queued, nor queued without its charge;
// - a worker process that dies stops refreshing its queue job's heartbeat; pg-boss fails that attempt and
//   retries it elsewhere (a restarted embedded process, the only possible owner, takes its own killed
//   attempts back at once: Queue.resumeOwnAttempts); after the queue's last attempt the job lands in the
//   dead-letter queue, whose worker ends it as failed and refunds it;
// - transient is not failure: an attempt that ends in a transient error (lib/transient.ts: a connection
//   lost, a time-out, an upstream's 5xx/429) or with its process is retried with back-off and does not
//   count as a failed attempt. Only a runner's other errors count, in `jobs.failed_attempts`, against the
//   kind's `retries`; crashes and transient errors spend the queue's own, larger budget (JOB_CRASH_RETRIES);
// - a retry of a job that already reached a terminal state (a crash between our commit and pg-boss's
//   completion) finds `finished_at` set and does nothing;
// - a job waiting on an upstream holds no slot: its attempt stops and the next poll is a delayed queue job
//   committed with the wait's new sequence number (core/upstream-waits.ts), so a restart at any moment
//   leaves exactly one queue job that may poll.
import type { Kysely, RawBuilder } from "kysely";
import { sql } from "kysely";
import type { BlobStore } from "../contracts/blobs.ts";
import type { CapabilityMap, CapabilityName, ContributionMap, ContributionName } from "../contracts/index.ts";
import type { UpstreamProvider } from "../contracts/upstream.ts";
import type { PluginConfigValues } from "../lib/plugin-config.ts";
import type { PluginDb } from "../lib/records.ts";
import { formatTimestamp } from "../lib/time.ts";
import { isTransient } from "../lib/transient.ts";
import type { PubSub } from "../storage/pubsub.ts";
import type { Queue, QueueJob } from "../storage/queue.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import {
  enqueue,
  FINISHED_COLUMNS,
  type FinishedJob,
  type FinishPlan,
  type QueuedJob,
  type SubmitPlan,
} from "./job-transactions.ts";
import type { Leases } from "./leases.ts";
import type { SubmittedJob } from "./ledger.ts";
import type { Logger } from "./log.ts";
import type { PluginDeclaration } from "./plugin.ts";
import {
  AttemptWaits,
  type AwaitUpstreamOptions,
  claimWait,
  type NextPoll,
  scheduleNextPoll,
  type WaitsDeps,
} from "./upstream-waits.ts";
import type { Webhooks } from "./webhooks.ts";

export interface JobKindDeclaration<Input = any> {
  /** Every state, in the spec's words. */
  states: readonly string[];
  /** The state a submit creates. */
  initial: string;
  /** Legal moves: from a state to the states it may go to. Terminal states have none. */
  transitions: Readonly<Record<string, readonly string[]>>;
  /** Terminal states and what they mean: `failure` refunds the job's credits. */
  terminal: Readonly<Record<string, "success" | "failure">>;
  /** Where the runtime moves a job it fails itself (crash, expiry, unexpected error); a `failure` state. */
  failState: string;
  /** The sanitized sentence stored then: never a provider's name or an internal message. */
  failError: string;
  /**
   * Attempts after the first when the runner throws an unexpected error (default 2). A transient error
   * (lib/transient.ts) or the death of the attempt's process is no failed attempt: it is retried with
   * back-off within the kernel's larger budget (JOB_CRASH_RETRIES) and does not use these.
   */
  retries?: number;
  /** How long one attempt may run (default 600 s). */
  timeoutSeconds?: number;
  /**
   * Jobs of this kind run at once per worker process (default 4). A job waiting on an upstream
   * (`awaitUpstream`) does not count: it holds no slot while it waits.
   */
  concurrency?: number;
  /**
   * Webhook events of this kind (spec "Events"): the event name a terminal success or failure emits, and
   * the event's `data`, the job's status fields as its status endpoint shows them. `data` runs inside the
   * transaction that ends the job, so it reads through `trx` (never the plugin's `db`) and sees the final
   * state; the envelope is fixed there and stored.
   */
  events?: {
    success?: string;
    failure?: string;
    data(trx: PluginDb, job: { jobId: string; partnerId: string }): Promise<Record<string, unknown>>;
  };
  /**
   * The runner of a queued kind. A kind without one is synchronous: the request that submits it does its
   * work and ends it (OperationContext.finishJob). Such a job holds the lease `job:<id>` of the process that
   * runs the request from the charge's transaction until its end; when that process dies, the kernel's
   * recovery (recoverOrphans) ends the job once the lease expired: `recover` says whether the dead owner's
   * result was stored already, otherwise the job ends in `failState`, refunded.
   */
  run?(ctx: JobRunContext<Input>): Promise<JobOutcome>;
  /**
   * Synchronous kinds only: the job's owner died before ending it. Return the terminal outcome when its result
   * was stored (e.g. the file exists), or null to fail it (failState, failError, refunded).
   */
  recover?(ctx: JobRecoverContext): Promise<JobOutcome | null>;
}

/** What a synchronous kind's `recover` is given. */
export interface JobRecoverContext {
  jobId: string;
  partnerId: string;
  /** The input the submit stored. */
  input: any;
  /** The state the dead owner left the job in. */
  state: string;
  db: PluginDb;
  /** The plugin's blob store. */
  blobs: BlobStore;
  log: Logger;
}

/**
 * Attempts a queued job may lose, beyond its kind's `retries`, to transient errors (lib/transient.ts) and to
 * processes that died under it, before its queue gives up (the dead letter fails and refunds it). Retries back
 * off from JOB_RETRY_DELAY_SECONDS, doubling with jitter, to at most JOB_RETRY_DELAY_MAX_SECONDS between two
 * attempts: 12 cover about ten minutes of an upstream answering 5xx. A database outage costs one or two of
 * them, however long it lasts: an attempt whose failure cannot be recorded is expired by its heartbeat once
 * the database is back. Our choice; the spec is silent.
 */
export const JOB_CRASH_RETRIES = 12;
const JOB_RETRY_DELAY_SECONDS = 2;
const JOB_RETRY_DELAY_MAX_SECONDS = 60;
/** The `code` of the abort reason storage/queue-fetcher.ts gives an attempt that ran past its `expireInSeconds`. */
const ATTEMPT_EXPIRED = "ATTEMPT_EXPIRED";

/** What a runner returns: the terminal state it reached and the job's partner-visible result. */
export interface JobOutcome {
  state: string;
  output?: Record<string, unknown>;
  /**
   * A queued kind's success that hands its work on (e.g. prompt repair's resubmitted clip): in the transaction
   * that ends this job, a job of `kind` (a queued kind of the same plugin, starting in its initial state) is
   * created for the same partner and queued. It carries this job's charge (what is left of it): no new charge
   * and no ledger line, and its failure refunds those credits once, through the usual ending. This job, ended,
   * can no longer be refunded; so the charge is held by exactly one open job at any moment. The new job is
   * made only when this ending is the one that ends the job (a job ended meanwhile hands nothing on). Queued
   * kinds' `run` only (a synchronous kind's `recover` cannot hand off).
   */
  handOff?: {
    kind: string;
    /** A reserved id (allocateServiceId): the runner names the new job in this job's `output`. */
    jobId: string;
    input: Record<string, unknown>;
    partnerJobId?: string | null;
    callbackUrl?: string | null;
    /** The plugin's own rows of the new job, in the same transaction. Database work only. */
    insertRecords?: (trx: PluginDb, jobId: string) => Promise<void>;
  };
}

/** Thrown by a runner for an expected failure: no retry, the job ends in `state` (default failState), refunded. */
export class JobFailure extends Error {
  constructor(
    readonly publicError: string,
    readonly state?: string,
  ) {
    super(publicError);
    this.name = "JobFailure";
  }
}

export interface JobRunContext<Input = any> {
  jobId: string;
  partnerId: string;
  /** The validated input the submit stored. */
  input: Input;
  /**
   * 0 on the first attempt. A retry (after a crash or a thrown error) starts in the state the last attempt
   * reached, so a runner that moves through states checks `state` before moving (e.g. only
   * `moveTo("running")` when still "queued"), and writes its outputs under keys that a rerun overwrites.
   */
  attempt: number;
  /** Aborted when this attempt is abandoned (timeout, shutdown); stop and write nothing more. */
  signal: AbortSignal;
  /** The job's current state. */
  readonly state: string;
  /** The kernel's settings; the plugin's own declared variables are `pluginConfig` (see OperationContext `config`). */
  config: Config;
  pluginConfig: PluginConfigValues;
  clock: Clock;
  log: Logger;
  db: PluginDb;
  /** This plugin's blob store. */
  blobs: BlobStore;
  capability<K extends CapabilityName>(name: K): CapabilityMap[K];
  /** Every contribution to a collection the plugin declared in `collects` (see OperationContext). */
  contributions<K extends ContributionName>(name: K): readonly ContributionMap[K][];
  mediaUrl(key: string): string;
  /** Stores and publishes progress (0-100) and an optional message, without changing the state. */
  progress(percent: number, message?: string): Promise<void>;
  /** A non-terminal move; an illegal one throws. */
  moveTo(state: string, message?: string): Promise<void>;
  /** The step this job last submitted to an upstream (null before any): where a provider chain resumes. */
  readonly upstreamStep: string | null;
  /**
   * Hands work to an upstream that submits and polls (contracts/upstream.ts) and gives its result. The
   * first call of a `step` builds the request (only then) and submits it; while the upstream is pending the
   * attempt stops until the next poll, holding no slot, and the runner runs again from the top at the next poll, where this call
   * finds the stored handle and polls it. So the code before it must be cheap to repeat and idempotent
   * (move states only when still in the earlier one), and what is costly to assemble belongs in `build`.
   * Calling it with another `step` (the next provider of a chain) submits anew. Throws what the upstream's
   * failure carries, or UpstreamTimeoutError past `deadlineSeconds`.
   */
  awaitUpstream<Request, Result>(
    step: string,
    provider: UpstreamProvider<Request, Result>,
    build: () => Request | Promise<Request>,
    options: AwaitUpstreamOptions,
  ): Promise<Result>;
  /**
   * Returns one part of this job's charge (JobSubmission.refundableShares, by index), at most once however
   * often it is called, across attempts too; the credits returned (0 when already returned or no such part).
   */
  refundShare(index: number): Promise<number>;
}

/** What subscribers of a job see (GraphQL subscriptions, and anyone on `jobChannel(id)`). */
export interface JobUpdate {
  job_id: string;
  plugin: string;
  kind: string;
  state: string;
  terminal: boolean;
  progress: number | null;
  message: string | null;
  error: string | null;
  updated_at: string;
}

export const jobChannel = (jobId: string) => `job:${jobId}`;

/**
 * A provider's progress (0-1) as the job's percent between `from` and `to`, throttled: engines report every
 * quarter second, the job row needs whole percents (the last one, `to`, is always written).
 */
export function progressBetween(
  ctx: Pick<JobRunContext, "progress">,
  from: number,
  to: number,
  defaultMessage = "Rendering",
) {
  let last = -1;
  let lastAt = 0;
  return async (fraction: number, message?: string) => {
    const percent = Math.floor(from + Math.max(0, Math.min(1, fraction)) * (to - from));
    const now = Date.now();
    if (percent <= last || (now - lastAt < 250 && percent < to)) return;
    last = percent;
    lastAt = now;
    await ctx.progress(percent, message ?? defaultMessage);
  };
}

class IllegalTransition extends Error {}

interface CompiledKind {
  plugin: string;
  kind: string;
  decl: JobKindDeclaration;
  queue: string;
  deadLetter: string;
  legal: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Checks every declared job kind; a mistake is a boot error naming the plugin and kind. */
export function compileJobKinds(
  plugins: readonly PluginDeclaration[],
  fail: (message: string) => Error,
): Map<string, CompiledKind> {
  const kinds = new Map<string, CompiledKind>();
  for (const plugin of plugins) {
    for (const [kind, decl] of Object.entries(plugin.jobs ?? {})) {
      const where = `job kind "${kind}" of plugin "${plugin.name}"`;
      if (!/^[a-z][a-z0-9-]*$/.test(kind)) throw fail(`${where}: name must be lowercase letters, digits and dashes`);
      const states = new Set(decl.states);
      const known = (s: string, what: string) => {
        if (!states.has(s)) throw fail(`${where}: ${what} "${s}" is not one of its states`);
      };
      known(decl.initial, "initial state");
      for (const s of Object.keys(decl.terminal)) known(s, "terminal state");
      known(decl.failState, "failState");
      if (decl.terminal[decl.failState] !== "failure")
        throw fail(`${where}: failState "${decl.failState}" must be a terminal failure state`);
      const legal = new Map<string, Set<string>>();
      for (const [from, tos] of Object.entries(decl.transitions)) {
        known(from, "transition source");
        if (decl.terminal[from]) throw fail(`${where}: terminal state "${from}" cannot have transitions`);
        for (const to of tos) known(to, "transition target");
        legal.set(from, new Set(tos));
      }
      if (decl.recover && decl.run)
        throw fail(`${where}: recover is for synchronous kinds (without run); a queued kind is retried by its queue`);
      const queue = `${plugin.name}.${kind}`;
      kinds.set(`${plugin.name}/${kind}`, {
        plugin: plugin.name,
        kind,
        decl,
        queue,
        deadLetter: `${queue}.dead`,
        legal,
      });
    }
  }
  return kinds;
}

export interface JobRuntimeDeps {
  /** The requests' lane (storage/connection-gate.ts): a job's status read, an upstream's callback. */
  db: Kysely<KernelTables>;
  /**
   * The background lane: what attempts and the dead-letter worker read and write, plugins' `ctx.db` in a
   * runner included, so a job's statements take turns with a burst of requests' (storage/connection-gate.ts).
   */
  background: Kysely<KernelTables>;
  queue: Queue;
  pubsub: PubSub;
  log: Logger;
  config: Config;
  clock: Clock;
  kinds: Map<string, CompiledKind>;
  /** core/job-transactions.ts submitJobs, on the requests' lane. */
  submitJobs(plan: SubmitPlan): Promise<SubmittedJob>;
  /** core/job-transactions.ts finishJob, on the background lane, like `refundShare`. */
  finishJob(jobId: string, plan: FinishPlan): Promise<FinishedJob | null>;
  refundShare(jobId: string, index: number): Promise<number>;
  blobsFor(plugin: string): BlobStore;
  capabilitiesFor(plugin: string): <K extends CapabilityName>(name: K) => CapabilityMap[K];
  contributionsFor(plugin: string): <K extends ContributionName>(name: K) => readonly ContributionMap[K][];
  pluginConfigFor(plugin: string): PluginConfigValues;
  mediaUrl(plugin: string, key: string): string;
  /** Wakes the delivery of the events a finish made (core/webhooks.ts). */
  webhooks: Pick<Webhooks, "wake">;
  /** Upstream callbacks (`$PUBLIC_URL`, UPSTREAM_CALLBACK_SECRET), or null when they are off. */
  upstreamCallbacks: WaitsDeps["callbacks"];
  /** The synchronous jobs' leases (core/leases.ts). */
  leases: Pick<Leases, "take" | "owner">;
}

export interface JobRuntime {
  /** Charges and creates the job(s); when the kind has a runner, queues them in the same transaction. */
  submit(plan: Omit<SubmitPlan, "queue" | "lease">): Promise<SubmittedJob>;
  /** The job as its partner sees it, or null when it is missing or another partner's (invariant 4). */
  current(jobId: string, partnerId: string): Promise<JobUpdate | null>;
  /** Creates the queues and starts the workers (not on ROLE=api). */
  startWorkers(): Promise<void>;
  /**
   * An upstream said its work moved (a verified callback): the job waiting on it is polled at once. False
   * when no unfinished job waits on that upstream id.
   */
  wakeUpstream(provider: string, upstreamId: string): Promise<boolean>;
  /**
   * Ends the synchronous jobs whose owner died (their `job:<id>` lease expired): the kind's `recover` outcome,
   * or failed and refunded, through the same end as a queued job (event, update, refund once, slot freed).
   * Run on every process's lease heartbeat. Returns how many it ended.
   */
  recoverOrphans(): Promise<number>;
}

/** The error stored on an orphaned job of a kind no plugin declares (a third-party plugin's): sanitized. */
export const ORPHAN_ERROR = "The job was interrupted. Credits refunded.";

export function createJobRuntime(deps: JobRuntimeDeps): JobRuntime {
  const { db, background, queue, pubsub, log, kinds } = deps;

  const publish = async (update: JobUpdate) => {
    await pubsub
      .publish(jobChannel(update.job_id), update)
      .catch((err) => log.warn(`job ${update.job_id}: publish failed`, err));
  };

  const updateOf = (row: {
    id: string;
    plugin: string;
    kind: string;
    state: string;
    finished_at: unknown;
    progress: number | null;
    message: string | null;
    error: string | null;
    updated_at: Date | string;
  }): JobUpdate => ({
    job_id: row.id,
    plugin: row.plugin,
    kind: row.kind,
    state: row.state,
    terminal: row.finished_at !== null,
    progress: row.progress,
    message: row.message,
    error: row.error,
    updated_at: formatTimestamp(row.updated_at)!,
  });

  const rowColumns = [...FINISHED_COLUMNS, "partner_id", "input"] as const;

  const waitsDeps: WaitsDeps = { db: background, clock: deps.clock, log, callbacks: deps.upstreamCallbacks };

  async function runAttempt(k: CompiledKind, qjob: QueueJob<QueuedJob>) {
    const { jobId } = qjob.data;
    const row = await background
      .selectFrom("jobs")
      .select(rowColumns)
      .select((eb) =>
        eb.selectFrom("job_waits").select("job_waits.seq").whereRef("job_waits.job_id", "=", "jobs.id").as("wait_seq"),
      )
      .where("id", "=", jobId)
      .executeTakeFirst();
    if (!row || row.finished_at !== null) return; // already ended: a retry after our commit
    const claim = await claimWait(background, jobId, qjob.data.seq ?? 0, qjob.id, row.wait_seq);
    if (!claim) return; // a poll another queue job now stands for (overtaken by a callback, or after a stop until the next poll)
    // Which process ran which attempt, for an operator following a job across workers (LOG_LEVEL=debug).
    log.debug(`${k.plugin}/${k.kind} job ${jobId}: attempt ${qjob.retryCount + 1} started`);
    // Aborted by the queue (expiry, shutdown) or by a stop until the next poll: either way this attempt writes nothing more.
    const attemptController = new AbortController();
    const signal = attemptController.signal;
    const abort = () => {
      attemptController.abort(qjob.signal?.reason);
      // Ran past the kind's timeout: a failed attempt, not a crash (a hung runner must not get the crash
      // budget); counted now, since a runner that ignores its signal may never return.
      if ((qjob.signal?.reason as { code?: string } | undefined)?.code === ATTEMPT_EXPIRED) {
        failedAttempt(qjob.signal!.reason).catch((err) =>
          log.warn(`${k.plugin}/${k.kind} job ${jobId}: counting its timed-out attempt failed`, err),
        );
      }
    };
    if (qjob.signal?.aborted) abort();
    else qjob.signal?.addEventListener("abort", abort, { once: true });
    let pollLaterWith: (next: NextPoll) => void = () => {};
    const pollLater = new Promise<NextPoll>((resolve) => (pollLaterWith = resolve));
    const waits = new AttemptWaits(
      waitsDeps,
      jobId,
      qjob.id,
      claim.wait,
      signal,
      (next) => {
        attemptController.abort(new Error(`job ${jobId}: stopped until its upstream's next poll`));
        pollLaterWith(next);
      },
      (reason) => attemptController.abort(reason),
    );
    let state = row.state;
    const alive = () => {
      if (signal.aborted) throw new Error(`job ${jobId}: attempt abandoned`);
    };
    const write = async (
      values: { state?: string; progress?: number | RawBuilder<number>; message?: string | null },
      from: string,
    ) => {
      alive();
      const updated = await background
        .updateTable("jobs")
        .set({ ...values, updated_at: sql`now()` })
        .where("id", "=", jobId)
        .where("state", "=", from)
        .where("finished_at", "is", null)
        .returning(rowColumns)
        .executeTakeFirst();
      // Someone else moved it (another attempt of a job the queue thought dead): this attempt stops.
      if (!updated) throw new Error(`job ${jobId}: state changed under this attempt`);
      await publish(updateOf(updated));
    };
    const assertLegal = (to: string) => {
      if (!k.legal.get(state)?.has(to))
        throw new IllegalTransition(`${k.plugin}/${k.kind} job ${jobId}: illegal transition ${state} -> ${to}`);
    };
    const ctx: JobRunContext = {
      jobId,
      partnerId: row.partner_id,
      input: row.input,
      attempt: qjob.retryCount,
      signal,
      get state() {
        return state;
      },
      config: deps.config,
      pluginConfig: deps.pluginConfigFor(k.plugin),
      clock: deps.clock,
      log,
      db: background,
      blobs: deps.blobsFor(k.plugin),
      capability: deps.capabilitiesFor(k.plugin),
      contributions: deps.contributionsFor(k.plugin),
      mediaUrl: (key) => deps.mediaUrl(k.plugin, key),
      get upstreamStep() {
        return waits.step;
      },
      awaitUpstream: (step, provider, build, options) => waits.awaitUpstream(step, provider, build, options),
      async progress(percent, message) {
        const p = Math.max(0, Math.min(100, Math.round(percent)));
        // Never backwards: a retry after a crash starts its work over, but a partner who saw 60 % must not
        // then see 20 %; the bar waits until the new attempt passes the old mark.
        await write(
          {
            progress: sql<number>`greatest(coalesce(progress, 0), ${p})`,
            ...(message !== undefined ? { message } : {}),
          },
          state,
        );
      },
      async refundShare(index) {
        alive();
        return deps.refundShare(jobId, index);
      },
      async moveTo(to, message) {
        assertLegal(to);
        if (k.decl.terminal[to])
          throw new IllegalTransition(
            `${k.plugin}/${k.kind} job ${jobId}: moveTo("${to}") is terminal; return it from run()`,
          );
        await write({ state: to, ...(message !== undefined ? { message } : {}) }, state);
        state = to;
      },
    };

    /**
     * Counts a failed attempt on the job; past the kind's `retries`, ends it failed and refunded. "retry" when
     * attempts are left, "ended" when this one was the last or the job had ended already.
     */
    async function failedAttempt(err: unknown): Promise<"retry" | "ended"> {
      const counted = await background
        .updateTable("jobs")
        .set({ failed_attempts: sql<number>`failed_attempts + 1` })
        .where("id", "=", jobId)
        .where("finished_at", "is", null)
        .returning("failed_attempts")
        .executeTakeFirst();
      if (!counted) return "ended"; // ended meanwhile (another attempt the queue thought dead)
      const last = counted.failed_attempts > (k.decl.retries ?? 2);
      log.error(
        `${k.plugin}/${k.kind} job ${jobId} attempt ${qjob.retryCount + 1} failed (failed attempt ${counted.failed_attempts} of ${(k.decl.retries ?? 2) + 1})${last ? ", the last" : ""}`,
        err,
      );
      if (!last) return "retry";
      await end(k, jobId, { state: k.decl.failState, refund: true, error: k.decl.failError }, waits.step !== null);
      await waits.release();
      return "ended";
    }

    let outcome: JobOutcome;
    try {
      const running = k.decl.run!(ctx); // queued kinds only (startWorkers)
      running.catch(() => {}); // stopped until the next poll, nothing awaits it
      const first = await Promise.race([
        running.then((o) => ({ outcome: o })),
        pollLater.then((nextPoll) => ({ nextPoll })),
      ]);
      if ("nextPoll" in first) {
        // Not when the queue gave up on this attempt meanwhile: another may hold the claim (it is fenced, too).
        if (!qjob.signal?.aborted) await queueNextPoll(k, jobId, qjob.id, first.nextPoll);
        return;
      }
      outcome = first.outcome;
    } catch (err) {
      if (err instanceof JobFailure) {
        const to = err.state ?? k.decl.failState;
        if (k.decl.terminal[to] !== "failure")
          throw new IllegalTransition(
            `${k.plugin}/${k.kind} job ${jobId}: JobFailure state "${to}" is not a terminal failure`,
          );
        await end(k, jobId, { state: to, refund: true, error: err.publicError }, waits.step !== null);
        await waits.release();
        return;
      }
      if (signal.aborted) throw err; // abandoned: pg-boss has failed this attempt already
      if (isTransient(err)) {
        // Not a failed attempt: the queue tries again after a back-off (its crash budget, not `retries`).
        log.warn(
          `${k.plugin}/${k.kind} job ${jobId} attempt ${qjob.retryCount + 1}: transient error, retried with back-off`,
          err,
        );
        throw err;
      }
      // A failed attempt (a crash or a transient error never reaches this line). When it cannot be counted
      // (the database just went), that error is transient and the attempt is retried.
      if ((await failedAttempt(err)) !== "retry") return;
      throw err; // pg-boss retries
    } finally {
      qjob.signal?.removeEventListener("abort", abort);
    }
    alive();
    if (!k.decl.terminal[outcome.state])
      throw new IllegalTransition(
        `${k.plugin}/${k.kind} job ${jobId}: run() returned non-terminal state "${outcome.state}"`,
      );
    assertLegal(outcome.state);
    const handOff = outcome.handOff;
    const next = handOff ? kinds.get(`${k.plugin}/${handOff.kind}`) : undefined;
    if (handOff) {
      if (k.decl.terminal[outcome.state] !== "success")
        throw new IllegalTransition(`${k.plugin}/${k.kind} job ${jobId}: only a success hands off`);
      if (!next?.decl.run)
        throw new IllegalTransition(
          `${k.plugin}/${k.kind} job ${jobId}: hands off to "${handOff.kind}", not a queued kind of its plugin`,
        );
      await ensureQueue(next); // outside the transaction (PGlite's one connection)
    }
    const finish: FinishPlan = {
      state: outcome.state,
      refund: k.decl.terminal[outcome.state] === "failure",
      error: null,
      output: outcome.output ?? null,
    };
    if (handOff && next) {
      const job = {
        id: handOff.jobId,
        kind: handOff.kind,
        state: next.decl.initial,
        input: handOff.input,
        partnerJobId: handOff.partnerJobId ?? null,
        callbackUrl: handOff.callbackUrl ?? null,
      };
      finish.handOff = {
        job,
        queue: next.queue,
        ...(handOff.insertRecords ? { insertRecords: handOff.insertRecords } : {}),
      };
    }
    const ended = await end(k, jobId, finish, waits.step !== null);
    if (ended && next) queue.wake(next.queue);
    await waits.release();
  }

  /** Ends an attempt that waits: the next poll is queued with the wait's next seq, in one transaction. */
  async function queueNextPoll(k: CompiledKind, jobId: string, queueJobId: string, p: NextPoll) {
    const nextPollAt = new Date(deps.clock.now() + p.delayMs);
    const delay = await scheduleNextPoll(background, p, queueJobId, nextPollAt, (trx, seq, delaySeconds) =>
      enqueue(trx, queue, k.queue, { jobId, seq }, delaySeconds),
    );
    if (delay === null)
      log.warn(`${k.plugin}/${k.kind} job ${jobId}: its wait moved under this attempt; another poll stands for it`);
    else queue.wake(k.queue, delay);
  }

  /** Ends a job; `waited`: it may have a job_waits row (a job that never waited skips that statement). */
  async function end(k: CompiledKind, jobId: string, finish: FinishPlan, waited = true) {
    const events = k.decl.events;
    const name = events?.[k.decl.terminal[finish.state] === "success" ? "success" : "failure"];
    const event = events && name ? { name, data: events.data } : undefined;
    const done = await deps.finishJob(jobId, { ...finish, ...(event ? { event } : {}), waited });
    // Committed: the delivery it may have made can be claimed now.
    if (done && event) await deps.webhooks.wake();
    // The finish's own update returned the row the event is made of.
    if (done) await publish(updateOf(done.row));
    else log.debug(`${k.plugin}/${k.kind} job ${jobId} had already ended`);
    return done !== null;
  }

  /** See JobRuntime.recoverOrphans. Jobs are taken one by one, each under its lease (taken over first). */
  async function recoverOrphans(): Promise<number> {
    const orphans = await background
      .selectFrom("leases")
      .innerJoin("jobs", (j) => j.on(sql<boolean>`leases.key = 'job:' || jobs.id`))
      .select(["jobs.id", "jobs.plugin", "jobs.kind", "jobs.state", "jobs.partner_id", "jobs.input", "leases.key"])
      .where("leases.key", "like", "job:%")
      .where("leases.expires_at", "<=", sql<Date>`now()`)
      // Not our own: this process lives, so a lease of ours that lapsed (renewals failing for a while) covers
      // work still under way here; another process may take it over, we do not fail our own live request.
      .where("leases.owner", "<>", deps.leases.owner)
      .limit(100)
      .execute();
    let ended = 0;
    for (const o of orphans) {
      // Take the lease over first: of two processes sweeping at once, one recovers the job.
      if (!(await background.transaction().execute((trx) => deps.leases.take(trx, o.key)))) continue;
      try {
        await recoverOrphan(o);
        ended++;
      } catch (err) {
        // A database blip mid-recovery: the lease we took must not live on with our heartbeat (the job would
        // wait for this process to die); expired again under no live owner, the next sweep of any process
        // (this one included) tries once more.
        log.warn(
          `${o.plugin}/${o.kind} job ${o.id}: its recovery failed, tried again on the next sweep (${err instanceof Error ? err.message : String(err)})`,
        );
        await background
          .updateTable("leases")
          .set({ owner: "recovery-interrupted", expires_at: sql<Date>`now() - interval '1 second'` })
          .where("key", "=", o.key)
          .execute()
          .catch(() => {});
      }
    }
    return ended;
  }

  /** Ends one orphaned synchronous job whose lease this process has just taken over. */
  async function recoverOrphan(o: {
    id: string;
    plugin: string;
    kind: string;
    state: string;
    partner_id: string;
    input: unknown;
  }): Promise<void> {
    const k = kinds.get(`${o.plugin}/${o.kind}`);
    let outcome: JobOutcome | null = null;
    if (k?.decl.recover) {
      try {
        outcome = await k.decl.recover({
          jobId: o.id,
          partnerId: o.partner_id,
          input: o.input,
          state: o.state,
          db: background,
          blobs: deps.blobsFor(o.plugin),
          log,
        });
        if (outcome && !k.decl.terminal[outcome.state])
          throw new IllegalTransition(
            `${o.plugin}/${o.kind} job ${o.id}: recover() returned non-terminal state "${outcome.state}"`,
          );
      } catch (err) {
        log.error(`${o.plugin}/${o.kind} job ${o.id}: recover failed; failing and refunding it`, err);
        outcome = null;
      }
    }
    log.warn(
      `${o.plugin}/${o.kind} job ${o.id}: its owner died in state "${o.state}"; ${outcome ? `recovered as "${outcome.state}"` : "failing and refunding it"}`,
    );
    if (k) {
      const finish: FinishPlan = outcome
        ? {
            state: outcome.state,
            refund: k.decl.terminal[outcome.state] === "failure",
            error: null,
            output: outcome.output ?? null,
          }
        : { state: k.decl.failState, refund: true, error: k.decl.failError };
      await end(k, o.id, finish, false);
    } else {
      // A kind no plugin declares: no state machine to consult; failed, refunded, with a sanitized sentence.
      const done = await deps.finishJob(o.id, { state: "failed", refund: true, error: ORPHAN_ERROR });
      if (done) await publish(updateOf(done.row));
    }
  }

  // Queues are made on first need, by workers or by a submit (an API-only process runs no workers but
  // still sends): declaring a kind is all a plugin does. Once per process; the settings are the kind's.
  const queuesMade = new Map<string, Promise<void>>();
  const ensureQueue = (k: CompiledKind) => {
    let made = queuesMade.get(k.queue);
    if (!made) {
      made = queue
        .createQueue(k.queue, {
          // The queue's budget holds the kind's failed attempts and the crash budget; the runtime ends a job
          // after its `retries` failed attempts itself (failed_attempts), whatever is left here.
          retryLimit: (k.decl.retries ?? 2) + JOB_CRASH_RETRIES,
          retryDelaySeconds: JOB_RETRY_DELAY_SECONDS,
          retryBackoff: true,
          retryDelayMaxSeconds: JOB_RETRY_DELAY_MAX_SECONDS,
          expireInSeconds: k.decl.timeoutSeconds ?? 600,
          heartbeatSeconds: 10,
          deadLetter: k.deadLetter,
        })
        // Its dead letter too: the worker that fails and refunds there may meet a database blip as well.
        .then(() =>
          queue.createQueue(k.deadLetter, {
            retryLimit: JOB_CRASH_RETRIES,
            retryDelaySeconds: JOB_RETRY_DELAY_SECONDS,
            retryBackoff: true,
            retryDelayMaxSeconds: JOB_RETRY_DELAY_MAX_SECONDS,
          }),
        )
        .then(() => queue.prepare(k.queue));
      made.catch(() => queuesMade.delete(k.queue));
      queuesMade.set(k.queue, made);
    }
    return made;
  };

  return {
    async wakeUpstream(provider, upstreamId) {
      const waiting = await db
        .selectFrom("job_waits")
        .innerJoin("jobs", "jobs.id", "job_waits.job_id")
        .select(["job_waits.job_id", "jobs.plugin", "jobs.kind"])
        .where("job_waits.provider", "=", provider)
        .where("job_waits.upstream_id", "=", upstreamId)
        .where("job_waits.done", "=", false)
        .where("jobs.finished_at", "is", null)
        .executeTakeFirst();
      const k = waiting && kinds.get(`${waiting.plugin}/${waiting.kind}`);
      if (!waiting || !k) return false;
      // Outside the transaction: on PGlite, pg-boss's statements would wait for the one connection it holds.
      await ensureQueue(k);
      const sent = await db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom("job_waits")
          .select(["seq", "parked", "done"])
          .where("job_id", "=", waiting.job_id)
          .forUpdate()
          .executeTakeFirst();
        if (!row || row.done) return null;
        if (!row.parked) {
          // Being polled now: the stop that ends that poll schedules the next one at once.
          await trx.updateTable("job_waits").set({ wake: true }).where("job_id", "=", waiting.job_id).execute();
          return false;
        }
        await trx
          .updateTable("job_waits")
          .set({ seq: row.seq + 1, next_poll_at: sql<Date>`now()` })
          .where("job_id", "=", waiting.job_id)
          .execute();
        await enqueue(trx, queue, k.queue, { jobId: waiting.job_id, seq: row.seq + 1 });
        return true;
      });
      if (sent) queue.wake(k.queue);
      return sent !== null;
    },

    async submit(req) {
      const k = kinds.get(`${req.plugin}/${req.kind}`);
      if (k && req.state !== k.decl.initial)
        throw new IllegalTransition(`${req.plugin}/${req.kind}: jobs start in "${k.decl.initial}", not "${req.state}"`);
      const runs = k?.decl.run && !req.terminal ? k : undefined;
      if (runs) await ensureQueue(runs);
      // A job left open with no runner (a synchronous kind, or a kind no plugin declares): this process owns
      // it, with the charge, until the request ends it (recoverOrphans if the process dies first).
      return deps.submitJobs({ ...req, queue: runs?.queue ?? null, lease: !runs && !req.terminal });
    },

    async current(jobId, partnerId) {
      const row = await db
        .selectFrom("jobs")
        .select(rowColumns)
        .where("id", "=", jobId)
        .where("partner_id", "=", partnerId)
        .executeTakeFirst();
      return row ? updateOf(row) : null;
    },

    recoverOrphans,

    async startWorkers() {
      // On an embedded database the attempts still active were this process's predecessor's, killed with it:
      // back to waiting at once, no attempt counted (a server database's are left to their heartbeat).
      const queued = [...kinds.values()].filter((k) => k.decl.run);
      const resumed = await queue.resumeOwnAttempts(queued.flatMap((k) => [k.queue, k.deadLetter]));
      if (resumed > 0)
        log.warn(`resumed ${resumed} job attempt(s) interrupted by the last stop of this embedded database's process`);
      for (const k of kinds.values()) {
        if (!k.decl.run) continue; // synchronous: no queue (recoverOrphans ends its orphans)
        await ensureQueue(k);
        await queue.work<QueuedJob>(k.queue, (qjob) => runAttempt(k, qjob), { concurrency: k.decl.concurrency ?? 4 });
        // Every attempt failed or its processes died: end the job as failed, refunded.
        await queue.work<QueuedJob>(k.deadLetter, async (qjob) => {
          // A poll that a later one stands for is not the job's last word.
          const wait = await background
            .selectFrom("job_waits")
            .select("seq")
            .where("job_id", "=", qjob.data.jobId)
            .executeTakeFirst();
          if (wait && wait.seq !== (qjob.data.seq ?? 0)) return;
          log.warn(`${k.plugin}/${k.kind} job ${qjob.data.jobId}: out of attempts, failing and refunding`);
          await end(k, qjob.data.jobId, { state: k.decl.failState, refund: true, error: k.decl.failError });
        });
      }
    },
  };
}
