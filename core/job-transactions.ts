// The two transactions that move money with a job, each one function listing its steps in order: a submit
// (charge, job rows, ledger line, idempotency key, the plugin's records, lease or queue) and a finish (lease
// gone, job ended, refund, hand-off, event, wait gone). What a step needs from the plugin and the kernel
// comes in as data (a plan); the kernel's stores the steps write through come in as `JobServices`. So what
// happens inside a charge's transaction, and in which order, is read here and nowhere else (invariant 1:
// the charge commits with its job and queue job or not at all; the refund with the terminal state, once).
import { CompiledQuery, type Kysely, type Selectable, sql, type Transaction } from "kysely";
import type { PluginDb } from "../lib/records.ts";
import type { Queue } from "../storage/queue.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { IdempotencyStore } from "./idempotency.ts";
import { jobLeaseKey, type Leases } from "./leases.ts";
import {
  type ChargeRequest,
  checkCharge,
  debit,
  insertJobs,
  recordRefund,
  recordUsage,
  type SubmittedJob,
} from "./ledger.ts";
import type { Webhooks } from "./webhooks.ts";

/** The kernel's stores the transactions write through; a plan's data says which of them a transaction uses. */
export interface JobServices {
  queue: Pick<Queue, "sendWithin">;
  leases: Pick<Leases, "take">;
  idempotency: Pick<IdempotencyStore, "claim">;
  webhooks: Pick<Webhooks, "createEvent">;
}

/** What a queue job of a kind carries. */
export interface QueuedJob {
  jobId: string;
  /** The wait's sequence number this queue job polls at (absent: the job's first run, 0). */
  seq?: number;
}

/** A request's Idempotency-Key, claimed for its first job (core/idempotency.ts). */
export interface IdempotencyClaim {
  partnerId: string;
  key: string;
  hash: string;
}

/** A submit: the charge and jobs (ChargeRequest), the plugin's records (`insertRecords`), and where the jobs go. */
export interface SubmitPlan extends ChargeRequest {
  idempotencyKey?: IdempotencyClaim | null;
  /** A queued kind's queue: each job is sent there. */
  queue?: string | null;
  /** A job left open with no runner: this process owns it, by its lease, until the request ends it. */
  lease?: boolean;
}

/**
 * Charges and creates the job(s) in one transaction. The partner row is locked first, so concurrent submits of
 * one account serialize: the in-flight count and the balance check see every earlier commit.
 */
export async function submitJobs(
  db: Kysely<KernelTables>,
  plan: SubmitPlan,
  services?: Partial<JobServices>,
): Promise<SubmittedJob> {
  checkCharge(plan.credits);
  return db.transaction().execute(async (trx) => {
    const remaining = await debit(trx, plan);
    const { jobIds, groupId } = await insertJobs(trx, plan);
    await recordUsage(trx, plan, jobIds);
    const key = plan.idempotencyKey;
    // The request's key names its first job exactly when this charge commits.
    if (key)
      await need(services, "idempotency").claim(trx, key.partnerId, key.key, plan.endpoint, key.hash, jobIds[0]!);
    // The plugin's own rows commit or vanish with the charge. Database work only.
    await plan.insertRecords?.(trx, jobIds, groupId);
    if (plan.lease) for (const jobId of jobIds) await need(services, "leases").take(trx, jobLeaseKey(jobId));
    if (plan.queue) for (const jobId of jobIds) await enqueue(trx, need(services, "queue"), plan.queue, { jobId });
    return { jobId: jobIds[0]!, jobIds, groupId, creditsUsed: plan.credits, creditsRemaining: remaining };
  });
}

export interface FinishJob {
  state: string;
  /** Refund what the job was charged (a failure). */
  refund: boolean;
  error?: string | null;
  output?: Record<string, unknown> | null;
}

/** The job a success hands its work on to (core/jobs.ts JobOutcome.handOff), carrying the ended job's charge. */
export interface HandOffPlan {
  job: {
    id: string;
    kind: string;
    state: string;
    input: Record<string, unknown>;
    partnerJobId: string | null;
    callbackUrl: string | null;
  };
  /** The new job's kind's queue. */
  queue: string;
  /** The plugin's own rows of the new job. Database work only. */
  insertRecords?: (trx: PluginDb, jobId: string) => Promise<void>;
}

/** The webhook event an ending emits: its name and its `data` (the kind's `events.data`, read through the transaction). */
export interface EventPlan {
  name: string;
  data(trx: PluginDb, job: { jobId: string; partnerId: string }): Promise<Record<string, unknown>>;
}

/** A finish: the terminal state and refund, and what else ends with the job. */
export interface FinishPlan extends FinishJob {
  handOff?: HandOffPlan;
  event?: EventPlan;
  /** The job may have a job_waits row (one that never waited skips that statement). */
  waited?: boolean;
}

export interface FinishedJob {
  partnerId: string;
  /** What this call refunded (0 unless asked to refund; a share refunded before it is not counted again). */
  creditsRefunded: number;
  /** The job's row as the finish left it: what its update event (JobUpdate) is made of, with no read after. */
  row: FinishedRow;
}

/** The columns of a finished job's row that FinishedJob carries. */
export const FINISHED_COLUMNS = [
  "id",
  "plugin",
  "kind",
  "state",
  "finished_at",
  "progress",
  "message",
  "error",
  "updated_at",
] as const;
export type FinishedRow = Pick<Selectable<KernelTables["jobs"]>, (typeof FINISHED_COLUMNS)[number]>;

/**
 * Moves a job to a terminal state, releases its in-flight slot and refunds it if asked: one transaction, and
 * only the first call for a job does anything (the `finished_at is null` guard, backed by the unique index on
 * refunds). Later calls return null.
 */
export async function finishJob(
  db: Kysely<KernelTables>,
  jobId: string,
  plan: FinishPlan,
  services?: Partial<JobServices>,
): Promise<FinishedJob | null> {
  return db.transaction().execute(async (trx) => {
    // A synchronous job's lease ends with it; gone whatever this call finds, so a lease never outlives its job.
    await trx.deleteFrom("leases").where("key", "=", jobLeaseKey(jobId)).execute();
    const ended = await endJob(trx, jobId, plan);
    if (!ended) return null;
    if (ended.refunded > 0)
      await recordRefund(
        trx,
        ended.partnerId,
        ended.refunded,
        ended.endpoint,
        jobId,
        `Refund: ${ended.endpoint} (${jobId})`,
      );
    if (plan.handOff) await handOff(trx, jobId, plan.handOff, need(services, "queue"));
    if (plan.event) await emitEvent(trx, jobId, ended.partnerId, plan.event, need(services, "webhooks"));
    // The wait is over with the job (its handle is no use to anyone now).
    if (plan.waited) await trx.deleteFrom("job_waits").where("job_id", "=", jobId).execute();
    return { partnerId: ended.partnerId, creditsRefunded: ended.refunded, row: ended.row };
  });
}

/**
 * The job's terminal update, and what it refunds: what the job's refundable shares (refundShare) have not
 * returned already, which needs the refunded sum as it was, read under the row's lock. Without a refund the
 * update alone is enough (it takes the lock, and its own `finished_at is null` decides whether this call ends
 * the job): a statement fewer for every job that succeeds.
 */
async function endJob(trx: Transaction<KernelTables>, jobId: string, finish: FinishJob) {
  const before = finish.refund
    ? await trx
        .selectFrom("jobs")
        .select(["credits_refunded"])
        .where("id", "=", jobId)
        .where("finished_at", "is", null)
        .forUpdate()
        .executeTakeFirst()
    : undefined;
  if (finish.refund && !before) return null;
  const job = await trx
    .updateTable("jobs")
    .set({
      state: finish.state,
      finished_at: sql`now()`,
      updated_at: sql`now()`,
      holds_inflight_slot: false,
      credits_refunded: finish.refund ? sql`credits_used` : sql`credits_refunded`,
      error: finish.error ?? null,
      ...(finish.output ? { output: JSON.stringify(finish.output) } : {}),
    })
    .where("id", "=", jobId)
    .where("finished_at", "is", null)
    .returning(["partner_id", "credits_refunded", "endpoint", ...FINISHED_COLUMNS])
    .executeTakeFirst();
  if (!job) return null;
  const refunded = before ? Number(job.credits_refunded) - Number(before.credits_refunded) : 0;
  const row: FinishedRow = {
    id: job.id,
    plugin: job.plugin,
    kind: job.kind,
    state: job.state,
    finished_at: job.finished_at,
    progress: job.progress,
    message: job.message,
    error: job.error,
    updated_at: job.updated_at,
  };
  return { partnerId: job.partner_id, endpoint: job.endpoint, refunded, row };
}

/**
 * Creates the job a success hands its work on to, and queues it. The new job carries what the ended job holds
 * of its charge (its `credits_used` less what it refunded): no balance change and no ledger line, since that
 * charge is in the ledger already under the ended job; a failure of the new job refunds it through finishJob,
 * once, as any job's. The ended job can no longer refund (finishJob's `finished_at is null` guard), so the
 * charge is refundable through exactly one job. Same partner, plugin and endpoint; no in-flight slot.
 */
async function handOff(
  trx: Transaction<KernelTables>,
  fromJobId: string,
  plan: HandOffPlan,
  queue: JobServices["queue"],
): Promise<void> {
  const from = await trx
    .selectFrom("jobs")
    .select(["partner_id", "plugin", "endpoint", "credits_used", "credits_refunded"])
    .where("id", "=", fromJobId)
    .executeTakeFirstOrThrow();
  const { job } = plan;
  await trx
    .insertInto("jobs")
    .values({
      id: job.id,
      partner_id: from.partner_id,
      plugin: from.plugin,
      kind: job.kind,
      endpoint: from.endpoint,
      state: job.state,
      partner_job_id: job.partnerJobId,
      callback_url: job.callbackUrl,
      group_id: null,
      credits_used: Number(from.credits_used) - Number(from.credits_refunded),
      holds_inflight_slot: false,
      finished_at: null,
      input: JSON.stringify(job.input),
    })
    .execute();
  await plan.insertRecords?.(trx, job.id);
  await enqueue(trx, queue, plan.queue, { jobId: job.id });
}

/** The job's event and its delivery, fixed with the state change (core/webhooks.ts). */
async function emitEvent(
  trx: Transaction<KernelTables>,
  jobId: string,
  partnerId: string,
  event: EventPlan,
  webhooks: JobServices["webhooks"],
): Promise<void> {
  const row = await trx.selectFrom("jobs").select("callback_url").where("id", "=", jobId).executeTakeFirstOrThrow();
  const data = await event.data(trx, { jobId, partnerId });
  await webhooks.createEvent(trx, { partnerId, jobId, event: event.name, data, callbackUrl: row.callback_url });
}

/** Sends a queue job inside the transaction: it exists exactly when the transaction commits (Queue.sendWithin). */
export async function enqueue(
  trx: Transaction<KernelTables>,
  queue: JobServices["queue"],
  name: string,
  data: QueuedJob,
  delaySeconds = 0,
): Promise<void> {
  const executor = async (text: string, values: unknown[]) =>
    trx.executeQuery(CompiledQuery.raw(text, values as any[]));
  await queue.sendWithin(executor, name, data, delaySeconds > 0 ? { startAfterSeconds: delaySeconds } : {});
}

function need<K extends keyof JobServices>(services: Partial<JobServices> | undefined, name: K): JobServices[K] {
  const service = services?.[name];
  if (!service) throw new Error(`a job transaction needs the kernel's ${name} here`);
  return service;
}
