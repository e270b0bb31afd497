// Operations compiled once at boot into transport-neutral invokers. REST and GraphQL both call these, so
// the pipeline (edge check, authentication, usage count, rate limit, feature switch, the screen of hostile
// input, validation, handler) and every error text are the same on both. A transport only says where the raw
// input comes from and how to render the outcome.

import { ApiError } from "../lib/api-error.ts";
import { KERNEL_ERRORS } from "../lib/errors.ts";
import { validate } from "../lib/standard-schema.ts";
import { authenticate } from "./auth.ts";
import { isEdgeRejected } from "./edge.ts";
import { EdgeRejection, outageError } from "./errors.ts";
import { screenInput } from "./hostile-input.ts";
import {
  defaultOrphanAnswer,
  IdempotencyRace,
  idempotencyKeyOf,
  type OrphanAnswer,
  requestHash,
  type StoredResponse,
} from "./idempotency.ts";
import { requestId as newRequestId } from "./ids.ts";
import type { Kernel } from "./kernel.ts";
import { isPaused } from "./pauses.ts";
import type { OperationContext, UploadedFile } from "./plugin.ts";
import { chargeFor } from "./pricing.ts";
import type { CompiledOperation } from "./registry.ts";

export interface OperationCall {
  authorization: string | null;
  userAgent: string | null;
  params: Record<string, string>;
  /** The raw input object (JSON body or query); called after the rate limit, so a refused call reads nothing. */
  readInput(): Promise<Record<string, unknown>>;
  /** File parts read with the input (multipart REST bodies only); called after `readInput`. */
  files?(): Record<string, UploadedFile>;
  /**
   * The raw body of an operation declaring `rawBody`, read by `readInput` (REST only); called after it. A
   * transport without one (GraphQL) cannot carry such an operation: it answers the operation's 415.
   */
  body?(): Uint8Array | null;
  /** The HTTP request when there is one (REST, or the GraphQL request that carried the call). */
  request: Request;
  /** The call's `request_id`, when the transport made it already (REST: it also goes in X-Request-Id). */
  requestId?: string;
  /** Told the partner's id once the key is accepted (REST's access log names the partner, never the key). */
  onAuthenticated?(partnerId: string): void;
}

export type OperationOutcome =
  /** `body` already carries `request_id`; a handler may also answer with its own Response (media, HTML). */
  | { ok: true; status: number; body: Record<string, unknown>; headers: Record<string, string> }
  | { ok: true; status: number; response: Response; headers: Record<string, string> }
  /** `error` is an ApiError, an EdgeRejection, or anything else (an internal error, never shown). */
  | { ok: false; error: unknown; headers: Record<string, string> };

export type Invoke = (call: OperationCall) => Promise<OperationOutcome>;

function compileOperation(kernel: Kernel, op: CompiledOperation): Invoke {
  const decl = op.declaration;
  const status = decl.status ?? 200;
  const scopedBlobs = kernel.blobs.scoped(op.plugin);
  const capability = kernel.capabilitiesFor(op.plugin);
  const contributions = kernel.contributionsFor(op.plugin);
  const pauses = new Set(kernel.registry.plugins.find((p) => p.name === op.plugin)?.pauses ?? []);
  const idempotent = decl.method === "POST" && decl.idempotency !== "own";

  return async (call) => {
    let headers: Record<string, string> = {};
    // Set once the request has an Idempotency-Key; `claimed` once its first job committed with the key.
    let idem: { partnerId: string; key: string; hash: string; claimed: boolean } | null = null;
    // Whether this request's charge committed: a full disk's 507 says "nothing was charged" only when it was not.
    let charged = false;
    // A key whose first request died answers that request's job as it is now (core/idempotency.ts).
    const orphanAnswer: OrphanAnswer = async (jobId) => {
      const partnerId = idem!.partnerId;
      const owned = await kernel.database.kysely
        .selectFrom("jobs")
        .select("id")
        .where("id", "=", jobId)
        .where("partner_id", "=", partnerId)
        .executeTakeFirst();
      if (!owned) return null;
      const requestId = call.requestId ?? newRequestId();
      const db = kernel.database.kysely;
      return (
        (await decl.replay?.({
          db,
          partnerId,
          jobId,
          requestId,
          mediaUrl: (key) => kernel.mediaUrl(op.plugin, key),
        })) ?? (await defaultOrphanAnswer(db, jobId, requestId))
      );
    };
    const replayed = (first: StoredResponse): OperationOutcome => ({
      ok: true,
      status: first.status,
      body: first.body,
      headers: { ...headers, "idempotent-replayed": "true" },
    });
    try {
      if (isEdgeRejected(call.userAgent)) throw new EdgeRejection();
      const partner = await authenticate(kernel.accounts, call.authorization);
      call.onAuthenticated?.(partner.id);
      kernel.usage.record(partner.id, op.endpoint);

      const decision = await kernel.limiter.check(
        partner.id,
        op.rateLimit,
        op.rateWindows,
        partner.limits.rate_limits?.[op.rateLimit],
      );
      headers = decision.headers;
      if (!decision.allowed) throw new ApiError(429, KERNEL_ERRORS.rateLimited);

      if (decl.feature && partner.features[decl.feature] === false) {
        throw new ApiError(403, KERNEL_ERRORS.featureDisabled(decl.feature), { feature: decl.feature });
      }

      for (const [name, rule] of Object.entries(decl.requiredHeaders ?? {})) {
        const value = call.request.headers.get(name);
        if (value === null || !rule.pattern.test(value)) throw new ApiError(400, rule.message);
      }
      if (decl.rawBody && !call.body) throw new ApiError(415, decl.rawBody.unsupportedType);
      const raw = await call.readInput();
      // Hostile values (control characters, unpaired surrogates, prototype keys, deep nesting) in the input or
      // the path, before any plugin rule and before anything is stored: one screen for both transports.
      const hostile = screenInput(call.params) ?? screenInput(raw);
      if (hostile !== null) throw new ApiError(400, hostile);
      let input: unknown;
      if (decl.input) {
        const result = await validate(decl.input, raw);
        if (!result.ok) throw new ApiError(400, result.message);
        input = result.value;
      }
      if (idempotent) {
        const key = idempotencyKeyOf(call.request);
        if (key !== null) {
          idem = {
            partnerId: partner.id,
            key,
            hash: requestHash(op.endpoint, call.params, raw, call.files?.() ?? {}),
            claimed: false,
          };
          const first = await kernel.idempotency.replay(partner.id, key, idem.hash, orphanAnswer);
          if (first) return replayed(first);
        }
      }

      const requestId = call.requestId ?? newRequestId();
      let answerStatus: number = status;
      const ctx: OperationContext<unknown> = {
        requestId,
        endpoint: op.endpoint,
        partner,
        input,
        params: call.params,
        request: call.request,
        config: kernel.config,
        pluginConfig: kernel.pluginConfig(op.plugin),
        clock: kernel.clock,
        log: kernel.log,
        db: kernel.database.kysely,
        costs: kernel.registry.costs,
        account: kernel.accounts,
        priceFor: (price) => {
          const credits = chargeFor(price, partner.pricingTier, partner.customRates);
          // A price no balance can hold is the request's 400 as soon as it is known (the ledger checks again).
          if (credits > Number.MAX_SAFE_INTEGER) throw new ApiError(400, KERNEL_ERRORS.chargeTooLarge);
          return credits;
        },
        submitJob: (submission) => {
          // The request's first job carries its key (claimed in the charge's transaction, before the plugin's
          // own rows); a request that makes several jobs (a repair, then its clip) is answered as one.
          const claim = idem && !idem.claimed ? idem : null;
          if (claim) claim.claimed = true;
          const idempotencyKey = claim && { partnerId: claim.partnerId, key: claim.key, hash: claim.hash };
          const submitted = kernel.jobs.submit({
            ...submission,
            idempotencyKey,
            partnerId: partner.id,
            plugin: op.plugin,
            endpoint: op.endpoint,
            inflight: decl.inflight === true,
          });
          // A charge refused or rolled back claimed nothing: a later job of this request may claim the key.
          if (claim) submitted.catch(() => void (claim.claimed = false));
          submitted.then(
            (job) => void (charged ||= job.creditsUsed > 0),
            () => {},
          );
          return submitted;
        },
        async finishJob(jobId, finish) {
          const job = await kernel.database.kysely
            .selectFrom("jobs")
            .select(["plugin", "partner_id"])
            .where("id", "=", jobId)
            .executeTakeFirst();
          if (!job || job.plugin !== op.plugin || job.partner_id !== partner.id)
            throw new Error(`finishJob: job ${jobId} is not one of this operation's`);
          await kernel.finishJob(jobId, finish);
        },
        capability,
        contributions,
        blobs: scopedBlobs,
        pubsub: kernel.pubsub,
        queue: kernel.queue,
        mediaUrl: (key) => kernel.mediaUrl(op.plugin, key),
        files: call.files?.() ?? {},
        body: call.body?.() ?? null,
        setStatus: (s) => void (answerStatus = s),
        isPaused: (name) => {
          if (!pauses.has(name))
            throw new Error(`plugin "${op.plugin}" reads pause switch "${name}" without declaring it in pauses`);
          return isPaused(kernel.database.kysely, name);
        },
        webhooks: kernel.webhooks,
        leases: { take: kernel.leases.take, release: kernel.leases.release, isHeld: kernel.leases.isHeld },
      };
      let result: Awaited<ReturnType<typeof decl.handle>>;
      try {
        result = await decl.handle(ctx);
      } catch (error) {
        // After the key's job committed, a failure is the first response too, so a retry is not charged again.
        // Not an outage's 503/507, which says to retry: the key keeps its job, whose state answers the retry.
        if (idem?.claimed && !outageError(error))
          await kernel.idempotency
            .store(idem.partnerId, idem.key, errorResponse(error, requestId))
            .catch((e) => kernel.log.error("idempotency: could not store a response", e));
        // Whatever was not stored is answered from the key's job by a retry, once this request's lease is gone.
        if (idem?.claimed) await kernel.idempotency.release(idem.partnerId, idem.key).catch(() => {});
        throw error;
      }
      if (result instanceof Response) {
        if (idem?.claimed) await kernel.idempotency.release(idem.partnerId, idem.key).catch(() => {});
        return { ok: true, status: result.status, response: result, headers };
      }
      const body = { request_id: requestId, ...result };
      if (idem?.claimed) await kernel.idempotency.store(idem.partnerId, idem.key, { status: answerStatus, body });
      return { ok: true, status: answerStatus, body, headers };
    } catch (error) {
      // Lost the race for the key to an identical request: its response is this one's.
      if (error instanceof IdempotencyRace && idem) {
        try {
          const first = await kernel.idempotency.replay(idem.partnerId, idem.key, idem.hash, orphanAnswer);
          if (first) return replayed(first);
        } catch (replayError) {
          return { ok: false, error: replayError, headers };
        }
      }
      // An outage becomes its 503 or 507 here, where it is known whether this request charged anything.
      const outage =
        error instanceof ApiError || error instanceof EdgeRejection
          ? null
          : outageError(error, { nothingCharged: decl.method === "POST" && !charged });
      if (outage) {
        kernel.log.warn(
          `${op.endpoint}: answered ${outage.status}, ${error instanceof Error ? error.message : String(error)}`,
        );
        return { ok: false, error: outage, headers };
      }
      return { ok: false, error, headers };
    }
  };
}

/** A failure as the partner saw it: an ApiError's status and body, anything else the fixed 500 (REST's shape). */
function errorResponse(error: unknown, requestId: string): StoredResponse {
  if (error instanceof ApiError) return { status: error.status, body: { ...error.body(), request_id: requestId } };
  return { status: 500, body: { error: KERNEL_ERRORS.internal, request_id: requestId } };
}

/** One row of the kernel's operation table: a registry operation and its invoker. */
export interface OperationEntry {
  readonly op: CompiledOperation;
  readonly invoke: Invoke;
}

/** Every operation of the registry, in registry order, each compiled once. */
export type OperationTable = readonly OperationEntry[];

/**
 * The kernel calls this once at boot and keeps the result as `kernel.operations`; REST and GraphQL both read
 * that table, so each operation has one invoker whichever transport carries the call.
 */
export function compileOperations(kernel: Kernel): OperationTable {
  return Object.freeze(
    kernel.registry.operations.map((op) => Object.freeze({ op, invoke: compileOperation(kernel, op) })),
  );
}
