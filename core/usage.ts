// Call counting for GET /usage ("every authenticated call, free ones included"). Counting must not cost a
// database write per request, so calls are summed in memory per (partner, endpoint, second) and written
// in one upsert every second, on stop, and before any read of the counts. A crash loses at most the
// last second of call counts; credits are never counted here (they come from the ledger).
import { type Kysely, sql } from "kysely";
import type { KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";

export class UsageRecorder {
  #pending = new Map<string, { partnerId: string; endpoint: string; second: number; calls: number }>();
  #lastSeen = new Map<string, number>();
  // Never cleared: one number per partner seen by this process, so `last_active` never goes back in time
  // between a flush and the cache's next read of the row.
  #latest = new Map<string, number>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<KernelTables>,
    private readonly clock: Clock,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.#timer ??= setInterval(() => void this.flush().catch(() => {}), this.intervalMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  record(partnerId: string, endpoint: string): void {
    const now = this.clock.now();
    const second = Math.floor(now / 1000);
    const key = `${partnerId}\n${endpoint}\n${second}`;
    const entry = this.#pending.get(key);
    if (entry) entry.calls++;
    else this.#pending.set(key, { partnerId, endpoint, second, calls: 1 });
    this.#lastSeen.set(partnerId, now);
    this.#latest.set(partnerId, now);
  }

  /** The latest call time not yet written, so GET /me's `last_active` is current without a flush. */
  pendingLastActive(partnerId: string): number | undefined {
    return this.#latest.get(partnerId);
  }

  /** Writes what is pending. Flushes run one after another so a row is never counted twice. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(
      () => this.#write(),
      () => this.#write(),
    );
    return this.#flushing;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0 && this.#lastSeen.size === 0) return;
    const rows = [...this.#pending.values()];
    const seen = [...this.#lastSeen.entries()];
    this.#pending = new Map();
    this.#lastSeen = new Map();
    try {
      await this.db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += 500) {
          await trx
            .insertInto("usage_calls")
            .values(
              rows.slice(i, i + 500).map((r) => ({
                partner_id: r.partnerId,
                endpoint: r.endpoint,
                second: new Date(r.second * 1000),
                calls: r.calls,
              })),
            )
            .onConflict((oc) =>
              oc
                .columns(["partner_id", "second", "endpoint"])
                .doUpdateSet({ calls: sql`usage_calls.calls + excluded.calls` }),
            )
            .execute();
        }
        for (const [partnerId, at] of seen) {
          await trx
            .updateTable("partners")
            .set({ last_active: sql`greatest(last_active, ${new Date(at)})` })
            .where("id", "=", partnerId)
            .execute();
        }
      });
    } catch (err) {
      // Put the counts back so the next flush retries them rather than losing them.
      for (const r of rows) {
        const key = `${r.partnerId}\n${r.endpoint}\n${r.second}`;
        const e = this.#pending.get(key);
        if (e) e.calls += r.calls;
        else this.#pending.set(key, r);
      }
      for (const [p, at] of seen) this.#lastSeen.set(p, Math.max(at, this.#lastSeen.get(p) ?? 0));
      throw err;
    }
  }
}
