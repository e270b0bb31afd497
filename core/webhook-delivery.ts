// The webhook delivery loop: one per worker process. The delivery rows are the schedule (a pending row is due
// at `next_attempt_at`), so nothing else has to be queued, and a loop that dies loses nothing:
// - a tick claims due rows in one statement, as many as there are free sending slots, at most PER_HOST per
//   destination (host and port) counting what this process is already sending there, by setting a short
//   lease (`claimed_until`) and counting the attempt before it is sent (so the record never counts fewer
//   attempts than requests made). The UPDATE re-checks the lease on each row it locks, so two processes never
//   claim the same row; a process killed mid-send leaves a lease that runs out, and the row is sent again
//   (at least once, as the spec's receivers expect: they drop repeated event ids), its lost attempt counted;
// - each claimed row is sent at once, concurrently (a receiver that hangs holds only its own slots for its
//   10 s), and its outcome joins a buffer that one UPDATE writes for the whole batch. The write is fenced on
//   the attempt it answers (`attempt = n`, counted by its claim, and still pending), so a late or repeated outcome changes
//   nothing and at most one attempt marks a delivery delivered;
// - a failed attempt with attempts left sets `next_attempt_at` by WEBHOOK_RETRY_DELAYS and drops the lease.
// It ticks when woken (a job that ended with an event, a resend: `wake()`, over the kernel's pub/sub so
// every instance hears it), when a send ends while more may be due, when a retry it scheduled comes due, and
// otherwise every `idleMs` for rows nobody announced to it (a lease run out after a crash, a retry another
// process scheduled and then died, a wake-up that could not reach it: without Redis the pub/sub is per
// process). So a process at rest makes one small query every few seconds.
import { type Kysely, sql } from "kysely";
import type { PubSub } from "../storage/pubsub.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { Logger } from "./log.ts";

/** Bounds of one process's sending, and its pace. */
export const DELIVERY_LIMITS = {
  /** Sends in flight at once in this process. */
  total: 128,
  /** Sends in flight at once to one destination (host and port) from this process. */
  perHost: 16,
  /** How often due rows are looked for when nothing said any would be due. */
  idleMs: 10_000,
  /** A claim's lease: longer than an attempt may take (10 s) plus the time to record it. */
  leaseSeconds: 30,
  /** Outcomes written per statement. */
  flushBatch: 200,
  /** How long stop() waits for sends in flight before handing their rows back. */
  stopWaitMs: 2_000,
} as const;

const WEBHOOK_WAKE_CHANNEL = "kernel:webhooks-due";

/** `last_error` of an attempt whose sender stopped (a kill) before it recorded an outcome: counted, unanswered. */
export const LOST_ATTEMPT_ERROR = "No outcome was recorded (the sender stopped)";

/** A claimed delivery, with what its attempt sends. */
export interface ClaimedDelivery {
  id: string;
  url: string;
  authority: string;
  /** The attempt about to be made (1-based). */
  attempt: number;
  max_attempts: number;
  event_id: string;
  event: string;
  body: string;
  secret: string | null;
}

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

export interface DeliveryLoopDeps {
  /** The background lane (Database.background): claims and outcomes go before a burst of requests'. */
  db: Kysely<KernelTables>;
  pubsub: PubSub;
  log: Logger;
  /** Seconds before attempt n + 1 after a failed attempt n (WEBHOOK_RETRY_DELAYS). */
  retryDelays: readonly number[];
  /** One signed POST of a claimed delivery; never throws. */
  send(delivery: ClaimedDelivery): Promise<AttemptResult>;
  limits?: Partial<typeof DELIVERY_LIMITS>;
  /**
   * The database is embedded (PGlite): no other process can be sending once this one starts, so a claim left
   * by the last process (killed mid-send) is taken back at start instead of after its lease.
   */
  embedded?: boolean;
}

interface Outcome {
  id: string;
  attempt: number;
  status: "delivered" | "failed" | "pending";
  code: number | null;
  error: string | null;
  delay: number;
}

// The destination of a stored URL as the claim groups it: what lies between "://" and the next "/" (URLs
// are stored as the URL parser's href, which always has that "/").
const AUTHORITY = sql`split_part(split_part(d.url, '://', 2), '/', 1)`;

export function createDeliveryLoop(deps: DeliveryLoopDeps) {
  const limits = { ...DELIVERY_LIMITS, ...deps.limits };
  const { db, log } = deps;
  const sending = new Map<string, ClaimedDelivery>();
  const perHost = new Map<string, number>();
  const outcomes: Outcome[] = [];
  let running = false;
  let ticking: Promise<void> | null = null;
  let looping = false;
  let tickAgain = false;
  // Whether more may be due after the last claim: a send that ends then ticks, since its slot is free. After a
  // claim that found nothing with no bound reached, only a wake-up or the poll can change that.
  let mayHaveMore = false;
  let flushing: Promise<void> | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = Infinity;
  let unsubscribe: (() => Promise<void>) | undefined;
  let drained: (() => void) | undefined;

  /**
   * Claims up to `free` due rows, within each destination's allowance, and returns them with their bodies.
   * The claim is the attempt's record: it counts the attempt (and stamps its time) before the request is sent,
   * so a process killed after sending can never leave the record counting fewer attempts than requests made.
   * A row whose lease ran out with no outcome (its sender died) says so in `last_error` when it is claimed
   * again, or, when that was its last attempt, ends `failed` in the same statement.
   */
  async function claim(free: number): Promise<ClaimedDelivery[]> {
    const busy = JSON.stringify(Object.fromEntries(perHost));
    const { rows } = await sql<ClaimedDelivery>`
      with lost_last as (
        update webhook_deliveries d
        set status = 'failed', claimed_until = null, next_attempt_at = null, last_status_code = null, last_error = ${LOST_ATTEMPT_ERROR}
        where d.status = 'pending' and d.attempt >= d.max_attempts and d.claimed_until < now()
      ), ranked as (
        select d.id, ${AUTHORITY} as authority,
               row_number() over (partition by ${AUTHORITY} order by d.next_attempt_at, d.id) as n
        from webhook_deliveries d
        where d.status = 'pending' and d.attempt < d.max_attempts and d.next_attempt_at <= now() and (d.claimed_until is null or d.claimed_until < now())
      ), due as (
        select id, authority from ranked
        where n <= ${limits.perHost} - coalesce((${busy}::jsonb ->> authority)::int, 0)
        order by n, id
        limit ${free}
      )
      update webhook_deliveries w
      set claimed_until = now() + make_interval(secs => ${limits.leaseSeconds}),
          attempt = w.attempt + 1,
          last_attempt_at = now(),
          -- SET reads the row as it was: a lease still set here ran out under a sender that recorded nothing.
          last_status_code = case when w.claimed_until is null then w.last_status_code else null end,
          last_error = case when w.claimed_until is null then w.last_error else ${LOST_ATTEMPT_ERROR} end
      from due, webhook_events e
      where w.id = due.id and e.id = w.event_id
        and w.status = 'pending' and w.attempt < w.max_attempts and (w.claimed_until is null or w.claimed_until < now())
      returning w.id::text as id, w.url, due.authority, w.attempt, w.max_attempts, e.id as event_id, e.event, e.body,
        (select s.secret from webhook_settings s where s.partner_id = w.partner_id) as secret`.execute(db);
    return rows;
  }

  function start(d: ClaimedDelivery): void {
    sending.set(d.id, d);
    perHost.set(d.authority, (perHost.get(d.authority) ?? 0) + 1);
    void deps
      .send(d)
      .then((result) => {
        if (!running && !sending.has(d.id)) return; // handed back by stop()
        const last = d.attempt >= d.max_attempts;
        const status = result.ok ? "delivered" : last ? "failed" : "pending";
        const delay = deps.retryDelays[d.attempt - 1] ?? deps.retryDelays.at(-1) ?? 60;
        outcomes.push({ id: d.id, attempt: d.attempt, status, code: result.status, error: result.error, delay });
        void flush();
      })
      .finally(() => {
        sending.delete(d.id);
        const left = (perHost.get(d.authority) ?? 1) - 1;
        if (left > 0) perHost.set(d.authority, left);
        else perHost.delete(d.authority);
        if (sending.size === 0) drained?.();
        if (mayHaveMore) void tick();
      });
  }

  /** Writes the buffered outcomes, a batch per statement, fenced on the attempt each one answers. */
  function flush(): Promise<void> {
    if (flushing) return flushing;
    flushing = (async () => {
      // Let the sends that end in the same turn join this batch.
      await new Promise((r) => setImmediate(r));
      while (outcomes.length > 0) {
        const batch = outcomes.splice(0, limits.flushBatch);
        // The retries this batch schedules: look again when the first comes due (a little after, so the
        // database's now() has passed it too).
        const retry = Math.min(...batch.filter((o) => o.status === "pending").map((o) => o.delay));
        const values = sql.join(
          batch.map(
            (o) =>
              sql`(${o.id}::bigint, ${o.status}::text, ${o.attempt}::int, ${o.code}::int, ${o.error}::text, ${o.delay}::int)`,
          ),
        );
        try {
          await sql`
            update webhook_deliveries d set
              status = v.status,
              last_status_code = v.code,
              last_error = v.error,
              last_attempt_at = now(),
              next_attempt_at = case when v.status = 'pending' then now() + make_interval(secs => v.delay) else null end,
              delivered_at = case when v.status = 'delivered' then now() else null end,
              claimed_until = null
            from (values ${values}) as v(id, status, attempt, code, error, delay)
            where d.id = v.id and d.attempt = v.attempt and d.status = 'pending'`.execute(db);
        } catch (err) {
          // Not recorded: each lease runs out and its attempt is made again (at least once).
          log.error(`webhooks: ${batch.length} attempt outcomes could not be recorded`, err);
        }
        if (Number.isFinite(retry)) tickIn(retry * 1000 + 50);
      }
    })().finally(() => (flushing = null));
    return flushing;
  }

  /** Claims and starts what is due while there are free slots; one tick at a time, a wake during it runs another. */
  function tick(): Promise<void> {
    if (!running) return Promise.resolve();
    // `looping` ends in the turn the loop decides to end (`ticking` is cleared a few turns later), so a wake
    // is either seen by the loop's last check or starts a new loop, never lost.
    if (looping) {
      tickAgain = true;
      return ticking ?? Promise.resolve();
    }
    looping = true;
    ticking = (async () => {
      try {
        await tickLoop();
      } finally {
        looping = false;
      }
    })().finally(() => {
      ticking = null;
      tickIn(limits.idleMs);
    });
    return ticking;
  }

  async function tickLoop(): Promise<void> {
    do {
      tickAgain = false;
      const free = limits.total - sending.size;
      if (free <= 0) break;
      try {
        const claimed = await claim(free);
        if (!running) {
          await handBack(
            claimed.map((d) => d.id),
            true,
          );
          break;
        }
        // An empty claim with a destination at its bound does not mean nothing is due: its rows wait for these sends.
        mayHaveMore = claimed.length > 0 || [...perHost.values()].some((n) => n >= limits.perHost);
        for (const d of claimed) start(d);
        // A full claim may have left more due rows behind.
        if (claimed.length === free) tickAgain = true;
      } catch (err) {
        log.warn("webhooks: could not claim due deliveries", err);
        break;
      }
    } while (tickAgain && running);
  }

  /** A tick within `ms`, unless one is already set sooner. */
  function tickIn(ms: number): void {
    if (!running) return;
    const at = Date.now() + ms;
    if (timer && at >= timerAt) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(() => {
      timer = undefined;
      timerAt = Infinity;
      void tick();
    }, ms);
    timer.unref?.();
  }

  /**
   * Drops the leases of rows this process will not send after all, so another process sends them now. Rows
   * claimed but never sent (`unsent`) give back the attempt their claim counted; a send still in flight at
   * stop may have reached its receiver, so its attempt stays counted.
   */
  async function handBack(ids: string[], unsent = false): Promise<void> {
    if (ids.length === 0) return;
    const attempt = unsent ? sql`attempt - 1` : sql`attempt`;
    await sql`update webhook_deliveries set claimed_until = null, attempt = ${attempt} where id = any(${ids}::bigint[]) and status = 'pending'`
      .execute(db)
      .catch((err) => log.warn("webhooks: could not hand back claimed deliveries", err));
  }

  return {
    async start(): Promise<void> {
      if (running) return;
      running = true;
      if (deps.embedded) {
        // The lease is left set (only moved into the past): the next claim reads it as an attempt whose
        // sender stopped, keeps it counted and says so in `last_error`.
        await sql`update webhook_deliveries set claimed_until = now() - interval '1 second' where status = 'pending' and claimed_until >= now()`
          .execute(db)
          .catch((err) =>
            log.warn("webhooks: could not take back the last process's claims (their lease will run out)", err),
          );
      }
      unsubscribe = await deps.pubsub.subscribe(WEBHOOK_WAKE_CHANNEL, () => void tick());
      void tick();
    },

    /** Tells every instance's loop that deliveries may be due now (after the transaction that made them committed). */
    async wake(): Promise<void> {
      await deps.pubsub
        .publish(WEBHOOK_WAKE_CHANNEL, 1)
        .catch((err) => log.warn("webhooks: wake-up not published", err));
    },

    /**
     * Claims nothing more, waits a little for the sends in flight, records what ended, and hands back the
     * rows still being sent (their attempt is made again elsewhere: at least once).
     */
    async stop(): Promise<void> {
      if (!running) return;
      running = false;
      clearTimeout(timer);
      timer = undefined;
      await unsubscribe?.().catch(() => {});
      await ticking;
      if (sending.size > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          new Promise<void>((r) => (drained = r)),
          new Promise<void>((r) => (timer = setTimeout(r, limits.stopWaitMs))),
        ]);
        clearTimeout(timer);
        drained = undefined;
      }
      const left = [...sending.keys()];
      sending.clear();
      await flush();
      await handBack(left);
    },
  };
}
