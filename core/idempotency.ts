// Idempotency-Key on every POST that creates a job (docs/api-choices.md "Idempotency-Key"; beyond the spec, non-breaking under
// its versioning rule). The same key and the same request within 24 h answers the first response again,
// status and body, without a second charge; the same key with another request answers 409; keys are per
// account. An operation with a rule of its own (POST /extend-music, whose key the spec defines) opts out with
// `idempotency: "own"`.
//
// How it holds under races and crashes: the key's row is inserted inside the transaction that charges and
// creates the job (the first submitJob of the request), so a key names a job exactly when the charge
// committed. Of two identical requests racing, the second's insert fails on the primary key, its whole
// transaction (charge included) rolls back, and it waits for the first's response and answers it. The
// response is written after the handler returns; a retry arriving before that waits for it (up to
// WAIT_MS), then answers 409 "still being processed". A request refused before any charge (a 400, a 402)
// leaves no row: a retry with the same key runs again. What a request is: the operation, its path
// parameters, its input as sent (JSON compared by value, key order ignored) and the bytes of its files.
//
// A request that dies before answering (its process killed) must not lock its key: the claim also takes the
// lease `idem:<partner>:<key>` (core/leases.ts) of the process serving it, released when the answer is stored
// (or when the request ends without one). A row without an answer whose lease expired is resolved by the
// retry: it answers the job that request created, in its current state, as a replay (`idempotent-replayed:
// true`), and does not store that answer (the job may still change). The body is the operation's own
// (`replay` on its declaration) or, by default, 200 `{request_id, job_id, status, error, credits_used}`:
// `status` the job's state, `error` its stored error or null. A row whose job no longer exists is freed, and the
// retry runs as a first request. While the lease is alive the retry waits (up to WAIT_MS) and then answers
// 409 "still being processed", as before.
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { ApiError } from "../lib/api-error.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import type { Leases } from "./leases.ts";
import type { UploadedFile } from "./plugin.ts";

export const IDEMPOTENCY_TABLE = "idempotency_keys";
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/** How long a retry waits for the first request's response before answering 409. */
const WAIT_MS = 10_000;
const WAIT_STEP_MS = 100;
/** Visible ASCII, as HTTP header values are; long enough for a UUID with a prefix. */
const KEY = /^[\x21-\x7e]{1,255}$/;

export const IDEMPOTENCY_ERRORS = {
  badKey: "Idempotency-Key must be 1-255 visible ASCII characters.",
  conflict: "This Idempotency-Key was already used with a different request.",
  inProgress: "A request with this Idempotency-Key is still being processed. Retry in a few seconds.",
} as const;

/** A stored first response. */
export interface StoredResponse {
  status: number;
  body: Record<string, unknown>;
}

interface Row {
  job_id: string | null;
  request_hash: string;
  status: number | null;
  body: string | null;
}

/** The header's key, or null when the request has none; a malformed one is a 400. */
export function idempotencyKeyOf(request: Request): string | null {
  const key = request.headers.get("idempotency-key");
  if (key === null) return null;
  if (!KEY.test(key)) throw new ApiError(400, IDEMPOTENCY_ERRORS.badKey);
  return key;
}

/** JSON with object keys sorted at every level, so two bodies equal by value hash alike. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** What makes two requests the same one. */
export function requestHash(
  endpoint: string,
  params: Record<string, string>,
  raw: unknown,
  files: Record<string, UploadedFile>,
): string {
  const h = createHash("sha256").update(endpoint).update("\0").update(stable(params)).update("\0").update(stable(raw));
  for (const name of Object.keys(files).sort()) {
    const f = files[name]!;
    h.update("\0")
      .update(name)
      .update("\0")
      .update(f.filename ?? "")
      .update("\0")
      .update(f.bytes);
  }
  return h.digest("hex");
}

export interface IdempotencyStore {
  /** The first response to replay, or null when this request is the first (or the key's window passed). */
  replay(partnerId: string, key: string, hash: string, orphan?: OrphanAnswer): Promise<StoredResponse | null>;
  /** Inside the charge's transaction: claims the key for `jobId`. A lost race throws {@link IdempotencyRace}. */
  claim(
    trx: Kysely<KernelTables>,
    partnerId: string,
    key: string,
    endpoint: string,
    hash: string,
    jobId: string,
  ): Promise<void>;
  /** Keeps the response of a request that claimed its key. */
  store(partnerId: string, key: string, response: StoredResponse): Promise<void>;
  /** A request that claimed its key ends without storing an answer (an outage, its own Response): its lease goes. */
  release(partnerId: string, key: string): Promise<void>;
  /** Removes keys past their window (called by the retention sweeper's pass). */
  sweep(): Promise<number>;
}

/** The answer for a key whose request died: rebuilt from the job it created (null: the default body). */
export type OrphanAnswer = (jobId: string) => Promise<StoredResponse | null>;

/** The lease of the request that claimed a key (core/leases.ts). */
export const idempotencyLeaseKey = (partnerId: string, key: string) => `idem:${partnerId}:${key}`;

/** The default answer for a key whose request died (see the top of this file). */
export async function defaultOrphanAnswer(
  db: Kysely<KernelTables>,
  jobId: string,
  requestId: string,
): Promise<StoredResponse | null> {
  const job = await db
    .selectFrom("jobs")
    .select(["id", "state", "error", "credits_used"])
    .where("id", "=", jobId)
    .executeTakeFirst();
  if (!job) return null;
  return {
    status: 200,
    body: {
      request_id: requestId,
      job_id: job.id,
      status: job.state,
      error: job.error ?? null,
      credits_used: Number(job.credits_used),
    },
  };
}

/** Another request claimed the key first; its response is the answer. */
export class IdempotencyRace extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createIdempotencyStore(
  db: Kysely<KernelTables>,
  clock: Clock,
  leases: Pick<Leases, "take" | "release" | "isHeld">,
): IdempotencyStore {
  const since = () => new Date(clock.now() - IDEMPOTENCY_WINDOW_MS);
  const read = (partnerId: string, key: string) =>
    db
      .selectFrom(IDEMPOTENCY_TABLE)
      .select(["job_id", "request_hash", "status", "body"])
      .where("partner_id", "=", partnerId)
      .where("key", "=", key)
      .where("created_at", ">", since())
      .executeTakeFirst() as Promise<Row | undefined>;

  return {
    async replay(partnerId, key, hash, orphan) {
      const deadline = Date.now() + WAIT_MS;
      for (;;) {
        const row = await read(partnerId, key);
        if (!row) return null;
        if (row.request_hash !== hash) throw new ApiError(409, IDEMPOTENCY_ERRORS.conflict);
        if (row.status !== null && row.body !== null) return { status: row.status, body: JSON.parse(row.body) };
        if (!(await leases.isHeld(idempotencyLeaseKey(partnerId, key)))) {
          // Its request died (or ended without an answer). Read again: an answer stored just now wins.
          const again = await read(partnerId, key);
          if (!again) return null;
          if (again.status !== null && again.body !== null)
            return { status: again.status, body: JSON.parse(again.body) };
          const answer = again.job_id ? await orphan?.(again.job_id) : null;
          if (answer) return answer;
          // No job behind it (none was made, or it is gone): the key is free, this request runs as the first.
          await db
            .deleteFrom(IDEMPOTENCY_TABLE)
            .where("partner_id", "=", partnerId)
            .where("key", "=", key)
            .where("status", "is", null)
            .execute();
          return null;
        }
        if (Date.now() >= deadline) throw new ApiError(409, IDEMPOTENCY_ERRORS.inProgress, {}, { "Retry-After": "5" });
        await sleep(WAIT_STEP_MS);
      }
    },

    async claim(trx, partnerId, key, endpoint, hash, jobId) {
      // A row past its window is taken over; a live one makes the insert a no-op, and no row comes back.
      const claimed = await trx
        .insertInto(IDEMPOTENCY_TABLE)
        .values({
          partner_id: partnerId,
          key,
          endpoint,
          request_hash: hash,
          job_id: jobId,
          created_at: new Date(clock.now()),
        })
        .onConflict((oc) =>
          oc
            .columns(["partner_id", "key"])
            .doUpdateSet({
              endpoint,
              request_hash: hash,
              job_id: jobId,
              status: null,
              body: null,
              created_at: new Date(clock.now()),
            })
            .where(`${IDEMPOTENCY_TABLE}.created_at`, "<=", since()),
        )
        .returning("key")
        .executeTakeFirst();
      if (!claimed) throw new IdempotencyRace(`idempotency key taken by another request`);
      await leases.take(trx, idempotencyLeaseKey(partnerId, key));
    },

    async store(partnerId, key, response) {
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable(IDEMPOTENCY_TABLE)
          .set({ status: response.status, body: JSON.stringify(response.body) })
          .where("partner_id", "=", partnerId)
          .where("key", "=", key)
          .execute();
        await leases.release(trx, idempotencyLeaseKey(partnerId, key));
      });
    },

    async release(partnerId, key) {
      await leases.release(db, idempotencyLeaseKey(partnerId, key));
    },

    async sweep() {
      const r = await db.deleteFrom(IDEMPOTENCY_TABLE).where("created_at", "<=", since()).executeTakeFirst();
      return Number(r.numDeletedRows ?? 0);
    },
  };
}
