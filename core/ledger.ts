// The credit ledger (invariant 1). Every change of a balance is a conditional update of the partner row and
// a ledger row, in one transaction; a job's charge is written with its job row, and its refund with its
// terminal state, exactly once. The ledger therefore always sums to the balance. The transactions that
// charge and refund a job are core/job-transactions.ts; this file holds their money steps.
import { type Kysely, sql, type Transaction } from "kysely";
import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";
import type { PluginDb } from "../lib/records.ts";
import { allocateServiceId } from "../lib/service-ids.ts";
import type { KernelTables, LedgerType } from "../storage/tables.ts";

const DEFAULT_INFLIGHT_CAP = 10;

export interface JobSubmission {
  /** Job kind as the plugin declares it, e.g. "image". */
  kind: string;
  /** Credits to charge (already through the tier math: see OperationContext.priceFor). 0 is allowed. */
  credits: number;
  /** First state of the job. */
  state: string;
  partnerJobId?: string | null;
  /** Where the job's events go instead of the account's webhook URL (already checked by the outbound guard). */
  callbackUrl?: string | null;
  input?: Record<string, unknown>;
  description?: string;
  /** The job is finished at creation (a synchronous operation that keeps a record). */
  terminal?: boolean;
  /** The 402 text; the spec words it per endpoint. Default `Insufficient credits. Need N credits.` */
  insufficientCredits?: (need: number) => string;
  /**
   * Jobs made by this one charge (default 1), e.g. one per image of a `quantity` request. `credits` is
   * the total, rounded once; each job carries its share (the remainder on the first ones), so a job
   * refunds exactly what it holds and the shares sum to the charge.
   */
  count?: number;
  /**
   * Unequal shares instead of `count`: one job per share, each charged (and later refunded, once) exactly its
   * share, e.g. a batch's sections priced by their own durations. They must sum to `credits`; still one
   * ledger line for the whole charge.
   */
  shares?: readonly number[];
  /**
   * One job whose charge is made of parts it may refund one by one while it runs (JobRunContext.refundShare,
   * each part at most once), e.g. a run's scenes. They must sum to `credits`; one job, one ledger line.
   */
  refundableShares?: readonly number[];
  /** One input per job (with `count` or `shares`, in the jobs' order) instead of `input` for all. */
  inputs?: readonly Record<string, unknown>[];
  /**
   * The jobs form one group whose id is allocated here (SubmittedJob.groupId, a `svc-` id like any job's):
   * an in-flight group holds one slot of the cap, not one per job, until its last job ends.
   */
  group?: boolean;
  /**
   * Runs inside the charge's transaction after the job rows exist (core/job-transactions.ts submitJobs): the
   * plugin's own rows commit or vanish together with the charge. Database work only.
   */
  insertRecords?: (trx: PluginDb, jobIds: readonly string[], groupId: string | null) => Promise<void>;
}

export interface SubmittedJob {
  /** The first (usually only) job. */
  jobId: string;
  jobIds: string[];
  /** With `group`: the group's id. */
  groupId: string | null;
  creditsUsed: number;
  creditsRemaining: number;
}

/** Splits a total into `count` integer shares that sum to it, larger ones first. */
function splitCredits(total: number, count: number): number[] {
  const base = Math.floor(total / count);
  return Array.from({ length: count }, (_, i) => base + (i < total - base * count ? 1 : 0));
}

/** Each job's share of the charge: `shares` as given (checked), or `count` equal shares. */
function jobShares(req: JobSubmission): number[] {
  if (req.shares) {
    if (req.count !== undefined) throw new Error("a submission has either count or shares");
    const sum = req.shares.reduce((a, b) => a + b, 0);
    if (req.shares.length < 1 || req.shares.some((s) => !Number.isSafeInteger(s) || s < 0) || sum !== req.credits) {
      throw new Error(
        `shares must be non-negative integers summing to the charge (${req.credits}), got ${req.shares.join(", ")}`,
      );
    }
    return [...req.shares];
  }
  const count = req.count ?? 1;
  if (!Number.isSafeInteger(count) || count < 1) throw new Error(`job count must be a positive integer, got ${count}`);
  return splitCredits(req.credits, count);
}

export interface ChargeRequest extends JobSubmission {
  partnerId: string;
  plugin: string;
  endpoint: string;
  /** Hold one of the account's in-flight slots until the job ends. */
  inflight: boolean;
}

/**
 * The ledger's guard on a price. A price beyond what a balance can hold (above 2^53 - 1, or Infinity) comes
 * from a request that asked for too much (a duration of 10^16 seconds): the partner's 400, before any
 * charge. Anything else that is not a non-negative integer (NaN, -1, 2.5) is a plugin's bug: an internal error.
 */
export function checkCharge(credits: number): void {
  if (credits > Number.MAX_SAFE_INTEGER) throw new ApiError(400, KERNEL_ERRORS.chargeTooLarge);
  if (!Number.isSafeInteger(credits) || credits < 0)
    throw new Error(`charge must be a non-negative integer, got ${credits}`);
}

/**
 * The charge's first step (core/job-transactions.ts submitJobs): locks the partner row, checks the in-flight
 * cap and takes the credits. Returns the balance left.
 */
export async function debit(trx: Transaction<KernelTables>, req: ChargeRequest): Promise<number> {
  const partner = await trx
    .selectFrom("partners")
    .select(["credits_remaining", "limits"])
    .where("id", "=", req.partnerId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  if (req.inflight) {
    const cap = partner.limits?.inflight_jobs ?? DEFAULT_INFLIGHT_CAP;
    const { n } = await trx
      .selectFrom("jobs")
      // A group (a batch's sections) is one job of the cap, however many of its jobs still run.
      .select(sql<number>`count(distinct coalesce(group_id, id))`.as("n"))
      .where("partner_id", "=", req.partnerId)
      .where("holds_inflight_slot", "=", true)
      .executeTakeFirstOrThrow();
    if (Number(n) >= cap) throw new ApiError(429, KERNEL_ERRORS.inflightCap, {}, { "Retry-After": "10" });
  }
  if (req.credits <= 0) return partner.credits_remaining;
  const updated = await trx
    .updateTable("partners")
    .set({ credits_remaining: sql`credits_remaining - ${req.credits}` })
    .where("id", "=", req.partnerId)
    .where("credits_remaining", ">=", req.credits)
    .returning("credits_remaining")
    .executeTakeFirst();
  if (!updated) {
    const text = (req.insufficientCredits ?? KERNEL_ERRORS.insufficientCredits)(req.credits);
    throw new ApiError(402, text, { credits_remaining: partner.credits_remaining });
  }
  return updated.credits_remaining;
}

/** The charged job rows, each with its share of the charge, and a single job's refundable parts. */
export async function insertJobs(
  trx: Transaction<KernelTables>,
  req: ChargeRequest,
): Promise<{ jobIds: string[]; groupId: string | null }> {
  const shares = jobShares(req);
  const groupId = req.group ? await allocateServiceId(trx) : null;
  const jobIds: string[] = [];
  if (req.inputs && req.inputs.length !== shares.length)
    throw new Error(`${req.inputs.length} inputs for ${shares.length} jobs`);
  for (const [i, share] of shares.entries()) {
    const input = req.inputs ? req.inputs[i] : req.input;
    const id = await allocateServiceId(trx);
    jobIds.push(id);
    await trx
      .insertInto("jobs")
      .values({
        id,
        partner_id: req.partnerId,
        plugin: req.plugin,
        kind: req.kind,
        endpoint: req.endpoint,
        state: req.state,
        partner_job_id: req.partnerJobId ?? null,
        callback_url: req.callbackUrl ?? null,
        group_id: groupId,
        credits_used: share,
        holds_inflight_slot: req.inflight && !req.terminal,
        finished_at: req.terminal ? sql`now()` : null,
        input: input ? JSON.stringify(input) : null,
      })
      .execute();
  }
  if (req.refundableShares) {
    const parts = req.refundableShares;
    if (
      jobIds.length !== 1 ||
      parts.some((c) => !Number.isSafeInteger(c) || c < 0) ||
      parts.reduce((a, b) => a + b, 0) !== req.credits
    ) {
      throw new Error(
        `refundable shares must be one job's non-negative integers summing to the charge (${req.credits}), got ${parts.join(", ")}`,
      );
    }
    for (const [idx, credits] of parts.entries())
      await trx.insertInto("job_shares").values({ job_id: jobIds[0]!, idx, credits }).execute();
  }
  return { jobIds, groupId };
}

/** The charge's one ledger line, on the first job (none for a free submit). */
export async function recordUsage(
  trx: Transaction<KernelTables>,
  req: ChargeRequest,
  jobIds: readonly string[],
): Promise<void> {
  if (req.credits <= 0) return;
  await trx
    .insertInto("ledger")
    .values({
      partner_id: req.partnerId,
      amount: -req.credits,
      type: "usage",
      description: req.description ?? `${req.endpoint} (${jobIds.join(", ")})`,
      endpoint: req.endpoint,
      job_id: jobIds[0]!,
    })
    .execute();
}

/** Credits returned to the balance with their ledger row. */
export async function recordRefund(
  trx: Transaction<KernelTables>,
  partnerId: string,
  amount: number,
  endpoint: string,
  jobId: string,
  description: string,
  part: number | null = null,
) {
  await trx
    .updateTable("partners")
    .set({ credits_remaining: sql`credits_remaining + ${amount}` })
    .where("id", "=", partnerId)
    .execute();
  // The unique index on (job_id, part) of refund rows backs "at most once" in the database itself.
  await trx
    .insertInto("ledger")
    .values({ partner_id: partnerId, amount, type: "refund", description, endpoint, job_id: jobId, part })
    .execute();
}

/**
 * Refunds one part of a running job's charge (JobSubmission.refundableShares), at most once: the share's
 * flag, the job's `credits_refunded`, the balance and a ledger row change in one transaction. Nothing once
 * the job has ended (its ending settled the money). Returns the credits returned (0 when nothing was).
 */
export async function refundShare(
  db: Kysely<KernelTables>,
  jobId: string,
  idx: number,
): Promise<{ partnerId: string; credits: number }> {
  return db.transaction().execute(async (trx) => {
    const job = await trx
      .selectFrom("jobs")
      .select(["partner_id", "endpoint"])
      .where("id", "=", jobId)
      .where("finished_at", "is", null)
      .forUpdate()
      .executeTakeFirst();
    if (!job) return { partnerId: "", credits: 0 };
    const share = await trx
      .updateTable("job_shares")
      .set({ refunded: true })
      .where("job_id", "=", jobId)
      .where("idx", "=", idx)
      .where("refunded", "=", false)
      .returning("credits")
      .executeTakeFirst();
    const credits = Number(share?.credits ?? 0);
    if (credits > 0) {
      await trx
        .updateTable("jobs")
        .set({ credits_refunded: sql`credits_refunded + ${credits}`, updated_at: sql`now()` })
        .where("id", "=", jobId)
        .execute();
      await recordRefund(
        trx,
        job.partner_id,
        credits,
        job.endpoint,
        jobId,
        `Refund: ${job.endpoint} (${jobId}, part ${idx + 1})`,
        idx,
      );
    }
    return { partnerId: job.partner_id, credits };
  });
}

/**
 * Purchases and adjustments (admin API). An adjustment may not take the balance below zero, nor above 2^53 - 1,
 * the largest balance a JavaScript number holds exactly. Null when it would.
 */
export async function addCredits(
  db: Kysely<KernelTables>,
  partnerId: string,
  amount: number,
  type: Extract<LedgerType, "purchase" | "adjustment">,
  description: string,
): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable("partners")
      .set({ credits_remaining: sql`credits_remaining + ${amount}` })
      .where("id", "=", partnerId)
      .where(sql<boolean>`credits_remaining + ${amount} >= 0`)
      .where(sql<boolean>`credits_remaining + ${amount} <= ${Number.MAX_SAFE_INTEGER}`)
      .returning("credits_remaining")
      .executeTakeFirst();
    if (!updated) return null;
    await trx
      .insertInto("ledger")
      .values({ partner_id: partnerId, amount, type, description, endpoint: null, job_id: null })
      .execute();
    return updated.credits_remaining;
  });
}
