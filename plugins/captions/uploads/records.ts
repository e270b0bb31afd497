// Chunked upload sessions in the database (tables: upload-migrations.ts). Every change of a session that
// another request could race (a part, finalize, abort, the sweep) runs in a transaction that first locks the
// session's row, so they take turns per session; blobs are written before and removed after those
// transactions, never inside them.
//
// States: `open` (parts accepted) → `finalizing` (one finalize is checking the file and charging) →
// `finalized` (`job_id` set, in the charge's own transaction). A finalize that fails before the charge puts
// the session back to `open`. A finalize holds the lease `captions-finalize:<session>` of its process
// (core/leases.ts) from taking the session to releasing or completing it: one whose process died is taken
// over once that lease expired (LEASE_SECONDS), not held for minutes. An aborted or abandoned session is
// deleted with its parts.
import { randomBytes } from "node:crypto";
import type { Kysely, Selectable, Transaction } from "kysely";
import { allocateServiceId, type OperationLeases } from "mediagate/plugin";
import { LIMITS } from "../limits.ts";
import type { UploadTables } from "../upload-migrations.ts";

export const SESSIONS_TABLE = "captions_upload_sessions";
export const PARTS_TABLE = "captions_upload_parts";

/** The lease a finalize holds while it works (core/leases.ts). */
export const finalizeLeaseKey = (sessionId: string) => `captions-finalize:${sessionId}`;

export interface SessionRow {
  id: string;
  partner_id: string;
  filename: string;
  size_bytes: number;
  part_count: number;
  partner_job_id: string | null;
  /** JSON of the checked partial style given at init. */
  style: string;
  state: "open" | "finalizing" | "finalized";
  open_slot: number | null;
  finalize_token: string | null;
  finalizing_since: Date | string | null;
  job_id: string | null;
  /** Until then the session takes parts; after it, it is abandoned (open) or forgotten (finalized). */
  expires_at: Date | string;
  /** The expiry every part blob is stored with (the kernel's retention sweeper removes them then). */
  parts_expire_at: Date | string;
}

export interface PartRow {
  idx: number;
  key: string;
  bytes: number;
}

const time = (d: Date | string | null) => (d === null ? 0 : new Date(d).getTime());
/** The upload tables' database (upload-migrations.ts); the request's `ctx.db` or a transaction of it. */
type UploadsDb = Kysely<UploadTables>;

/** Runs `work` in one transaction on the upload tables (a session locked in it stays locked until it ends). */
export function inUploadTransaction<T>(
  db: UploadsDb,
  work: (trx: Transaction<UploadTables>) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(work);
}

/** A session row as read: bigint columns come back as text on Postgres, the state as its declared words. */
const normalize = (row: Selectable<UploadTables[typeof SESSIONS_TABLE]>): SessionRow => ({
  ...row,
  state: row.state as SessionRow["state"],
  size_bytes: Number(row.size_bytes),
  part_count: Number(row.part_count),
  open_slot: row.open_slot === null ? null : Number(row.open_slot),
});

export const partCountOf = (size: number) => Math.ceil(size / LIMITS.chunkSize);
/** Every part is chunk_size bytes except the last, which is the exact remainder. */
export const partSizeOf = (s: Pick<SessionRow, "size_bytes" | "part_count">, index: number) =>
  index < s.part_count - 1 ? LIMITS.chunkSize : s.size_bytes - LIMITS.chunkSize * (s.part_count - 1);

export const isExpired = (s: SessionRow, now: number) => time(s.expires_at) <= now;
/** A finalize is under way (not one whose process died): its lease is alive. `db`: the transaction, inside one. */
export const isFinalizing = async (leases: OperationLeases, db: UploadsDb, s: SessionRow) =>
  s.state === "finalizing" && (await leases.isHeld(finalizeLeaseKey(s.id), db));

/** The session of this account, or undefined (another account's, or none). */
export async function findSession(db: UploadsDb, partnerId: string, id: string): Promise<SessionRow | undefined> {
  const row = await db
    .selectFrom(SESSIONS_TABLE)
    .selectAll()
    .where("id", "=", id)
    .where("partner_id", "=", partnerId)
    .executeTakeFirst();
  return row ? normalize(row) : undefined;
}

/** In a transaction: the session row, locked until the transaction ends, if it is the partner's or has expired by then. */
function lockRow(trx: UploadsDb, id: string, { partnerId, expiredBy }: { partnerId?: string; expiredBy?: Date }) {
  return trx
    .selectFrom(SESSIONS_TABLE)
    .selectAll()
    .where("id", "=", id)
    .$if(partnerId !== undefined, (q) => q.where("partner_id", "=", partnerId!))
    .$if(expiredBy !== undefined, (q) => q.where("expires_at", "<=", expiredBy!))
    .forUpdate()
    .executeTakeFirst();
}

/** In a transaction: the session row, locked until the transaction ends. */
export async function lockSession(trx: UploadsDb, partnerId: string, id: string): Promise<SessionRow | undefined> {
  const row = await lockRow(trx, id, { partnerId });
  return row ? normalize(row) : undefined;
}

export interface NewSession {
  partnerId: string;
  filename: string;
  sizeBytes: number;
  partnerJobId: string | null;
  style: string;
  expiresAt: Date;
  partsExpireAt: Date;
}

/** Creates an open session in a free slot of the account; null when both slots are taken. */
export async function createSession(db: UploadsDb, s: NewSession): Promise<SessionRow | null> {
  // `svc-` + 8 hex like every id (spec part 1, convention 4), reserved in the kernel's one id table so it is
  // never reused. 32 bits can be guessed: the session stays private by its owner (findSession, lockSession),
  // not by its length. An id reserved for an account whose slots are both taken is simply never used.
  const id = await allocateServiceId(db);
  for (let slot = 0; slot < LIMITS.openSessions; slot++) {
    const row = await db
      .insertInto(SESSIONS_TABLE)
      .values({
        id,
        partner_id: s.partnerId,
        filename: s.filename,
        size_bytes: s.sizeBytes,
        part_count: partCountOf(s.sizeBytes),
        partner_job_id: s.partnerJobId,
        style: s.style,
        state: "open",
        open_slot: slot,
        expires_at: s.expiresAt,
        parts_expire_at: s.partsExpireAt,
      })
      .onConflict((oc) => oc.columns(["partner_id", "open_slot"]).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (row) return normalize(row);
  }
  return null;
}

export async function partsOf(db: UploadsDb, sessionId: string): Promise<PartRow[]> {
  const rows = await db
    .selectFrom(PARTS_TABLE)
    .select(["idx", "key", "bytes"])
    .where("session_id", "=", sessionId)
    .orderBy("idx")
    .execute();
  return rows.map((r) => ({ idx: Number(r.idx), key: r.key, bytes: Number(r.bytes) }));
}

/**
 * In the session's locked transaction: records `key` as part `idx`, returning the key it replaces (to be
 * removed once committed) and the session's totals after it.
 */
export async function recordPart(
  trx: UploadsDb,
  sessionId: string,
  part: PartRow,
): Promise<{ replaced: string | null; parts: number; bytes: number }> {
  const old = await trx
    .selectFrom(PARTS_TABLE)
    .select("key")
    .where("session_id", "=", sessionId)
    .where("idx", "=", part.idx)
    .executeTakeFirst();
  if (old)
    await trx
      .updateTable(PARTS_TABLE)
      .set({ key: part.key, bytes: part.bytes })
      .where("session_id", "=", sessionId)
      .where("idx", "=", part.idx)
      .execute();
  else
    await trx
      .insertInto(PARTS_TABLE)
      .values({ session_id: sessionId, idx: part.idx, key: part.key, bytes: part.bytes })
      .execute();
  const totals = await trx
    .selectFrom(PARTS_TABLE)
    .select((eb) => [eb.fn.countAll().as("parts"), eb.fn.sum("bytes").as("bytes")])
    .where("session_id", "=", sessionId)
    .executeTakeFirstOrThrow();
  return {
    replaced: old && old.key !== part.key ? old.key : null,
    parts: Number(totals.parts),
    bytes: Number(totals.bytes ?? 0),
  };
}

/** Drops the rows of parts whose files are gone (each only if it still names that file). */
export async function forgetParts(db: UploadsDb, sessionId: string, parts: readonly PartRow[]): Promise<void> {
  for (const p of parts)
    await db
      .deleteFrom(PARTS_TABLE)
      .where("session_id", "=", sessionId)
      .where("idx", "=", p.idx)
      .where("key", "=", p.key)
      .execute();
}

/** The indexes below part_count with no stored part. */
export function missingParts(s: SessionRow, parts: readonly PartRow[]): number[] {
  const have = new Set(parts.map((p) => p.idx));
  const missing: number[] = [];
  for (let i = 0; i < s.part_count; i++) if (!have.has(i)) missing.push(i);
  return missing;
}

/** In the locked transaction: takes the session for one finalize; the token proves it is still this one's. */
export async function beginFinalize(trx: UploadsDb, leases: OperationLeases, id: string, now: Date): Promise<string> {
  const token = randomBytes(8).toString("hex");
  await trx
    .updateTable(SESSIONS_TABLE)
    .set({ state: "finalizing", finalize_token: token, finalizing_since: now })
    .where("id", "=", id)
    .execute();
  await leases.take(trx, finalizeLeaseKey(id));
  return token;
}

/** Gives the session back to `open` (a finalize refused before the charge), if still this finalize's. */
export async function releaseFinalize(
  db: UploadsDb,
  leases: OperationLeases,
  id: string,
  token: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const released = await trx
      .updateTable(SESSIONS_TABLE)
      .set({ state: "open", finalize_token: null, finalizing_since: null })
      .where("id", "=", id)
      .where("finalize_token", "=", token)
      .where("state", "=", "finalizing")
      .executeTakeFirst();
    if (Number(released.numUpdatedRows) === 1) await leases.release(trx, finalizeLeaseKey(id));
  });
}

/**
 * In the charge's transaction: the session is finalized with its job, its slot freed, kept until its parts
 * expire (so a repeated finalize answers with the job). False if the finalize lost the session meanwhile.
 */
export async function completeFinalize(
  trx: UploadsDb,
  leases: OperationLeases,
  s: SessionRow,
  token: string,
  jobId: string,
): Promise<boolean> {
  const done = await trx
    .updateTable(SESSIONS_TABLE)
    .set({ state: "finalized", job_id: jobId, open_slot: null, finalize_token: null, expires_at: s.parts_expire_at })
    .where("id", "=", s.id)
    .where("finalize_token", "=", token)
    .where("state", "=", "finalizing")
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) !== 1) return false;
  await leases.release(trx, finalizeLeaseKey(s.id));
  return true;
}

/** In the locked transaction: deletes the session and its part rows, returning the part keys to remove. */
export async function deleteSession(trx: UploadsDb, id: string): Promise<string[]> {
  const keys = (await trx.selectFrom(PARTS_TABLE).select("key").where("session_id", "=", id).execute()).map(
    (r) => r.key,
  );
  await trx.deleteFrom(PARTS_TABLE).where("session_id", "=", id).execute();
  await trx.deleteFrom(SESSIONS_TABLE).where("id", "=", id).execute();
  return keys;
}

/**
 * Sessions past `expires_at`: this account's, and up to `others` of any account (so abandoned sessions go
 * even when their account never comes back). Each is locked and deleted on its own; the keys of an
 * unfinished session's parts are returned for removal (a finalized session's parts are its caption job's
 * source and stay until their own expiry).
 */
export async function expiredSessions(db: UploadsDb, partnerId: string, now: Date, others: number): Promise<string[]> {
  const mine = await db
    .selectFrom(SESSIONS_TABLE)
    .select("id")
    .where("partner_id", "=", partnerId)
    .where("expires_at", "<=", now)
    .execute();
  const rest = await db
    .selectFrom(SESSIONS_TABLE)
    .select("id")
    .where("expires_at", "<=", now)
    .orderBy("expires_at")
    .limit(others)
    .execute();
  const keys: string[] = [];
  for (const id of new Set([...mine, ...rest].map((r) => r.id as string))) {
    await db.transaction().execute(async (trx) => {
      const row = await lockRow(trx, id, { expiredBy: now });
      if (!row) return;
      const parts = await deleteSession(trx, id);
      if (row.state !== "finalized") keys.push(...parts);
    });
  }
  return keys;
}
