// The daily quota and the in-flight cap of the social downloader (spec part 1 "Daily quotas": 200 per
// rolling 24 hours, failed ones not counted; 2 in flight), and the operator's pause switch.
//
// Counted from the records, inside the submit's transaction: the kernel locks the partner row (`for update`)
// before the submit's `within` runs (core/ledger.ts), so two concurrent submits of one account serialize on
// Postgres and on PGlite alike, and the second sees the first's row. A download counts from its
// `created_at` (the kernel clock) until it fails or leaves the window; `resets_in_seconds` is when the
// oldest counted one leaves it.
import { type Kysely, sql } from "kysely";
import type { SocialDownloadsTable } from "./records.ts";

export const QUOTA = Object.freeze({ limit: 200, windowHours: 24, inflight: 2 });
const WINDOW_MS = QUOTA.windowHours * 3600 * 1000;

export interface QuotaView {
  limit: number;
  used: number;
  remaining: number;
  window_hours: number;
  resets_in_seconds: number;
}

export interface QuotaState {
  /** Downloads in the window that have not failed. */
  used: number;
  /** `created_at` of the oldest of them. */
  oldest: Date | null;
  /** Downloads not finished yet. */
  running: number;
}

/** What the count reads: the downloads and, of the kernel's job rows, the columns it filters on. */
interface QuotaTables {
  social_downloads: SocialDownloadsTable;
  jobs: { id: string; partner_id: string; plugin: string; state: string; finished_at: Date | null };
}

/** `exclude`: a job being submitted in the same transaction, not yet one of the counted. */
export async function quotaState(
  db: Kysely<QuotaTables>,
  partnerId: string,
  now: number,
  exclude?: string,
): Promise<QuotaState> {
  const since = new Date(now - WINDOW_MS);
  const [counted, running] = await Promise.all([
    db
      .selectFrom("social_downloads as d")
      .innerJoin("jobs as j", "j.id", "d.download_id")
      .select([sql<string>`count(*)`.as("n"), sql<Date | string | null>`min(d.created_at)`.as("oldest")])
      .where("d.partner_id", "=", partnerId)
      .where("d.created_at", ">", since)
      .where("j.state", "<>", "failed")
      .executeTakeFirstOrThrow(),
    db
      .selectFrom("jobs")
      .select(sql<string>`count(*)`.as("n"))
      .where("partner_id", "=", partnerId)
      .where("plugin", "=", "social")
      .where("finished_at", "is", null)
      .$if(exclude !== undefined, (q) => q.where("id", "<>", exclude!))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    used: Number(counted.n),
    oldest: counted.oldest === null ? null : new Date(counted.oldest),
    running: Number(running.n),
  };
}

export function quotaView(state: Pick<QuotaState, "used" | "oldest">, now: number): QuotaView {
  const resets =
    state.used > 0 && state.oldest ? Math.max(0, Math.ceil((state.oldest.getTime() + WINDOW_MS - now) / 1000)) : 0;
  return {
    limit: QUOTA.limit,
    used: state.used,
    remaining: Math.max(0, QUOTA.limit - state.used),
    window_hours: QUOTA.windowHours,
    resets_in_seconds: resets,
  };
}
