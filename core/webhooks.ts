// Events and webhook delivery (spec part 1 "Events", "Webhook settings and delivery records", the
// webhook-delivery state table). The kernel owns them because a job's terminal transition makes the event:
// - An event is created inside the transaction that ends its job (core/job-transactions.ts finishJob): the
//   envelope is serialized once and stored, with a delivery row due at once, so an event is never lost and
//   never made twice, whatever crashes.
// - The delivery rows are the schedule: the delivery loop (core/webhook-delivery.ts) claims due rows in
//   batches, sends them concurrently and records the outcomes in batches, each with the next attempt's time
//   (WEBHOOK_RETRY_DELAYS), so a restart mid-schedule continues it.
// - Every attempt goes through the outbound guard, which resolves DNS again and pins the connection to the
//   checked address: a URL that became private since it was saved is refused at delivery time.
// Delivery status values (the spec names `delivered` and `failed` and leaves the retrying one unnamed):
// `pending` until the first 2xx or the last attempt.
import { createHmac } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { isOutboundError, type OutboundGuard } from "../lib/outbound/index.ts";
import type { PubSub } from "../storage/pubsub.ts";
import type { KernelTables } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import { eventId, newSecret } from "./ids.ts";
import type { Logger } from "./log.ts";
import { type ClaimedDelivery, createDeliveryLoop } from "./webhook-delivery.ts";

const MAX_ATTEMPTS = 6;
const SIGNATURE_HEADER = "X-Service-Signature";
const ATTEMPT_TIMEOUT_MS = 10_000;
/** The fixed identifying User-Agent of deliveries (the spec asks for one without naming it). */
const WEBHOOK_USER_AGENT = "mediagate-webhooks/1.0";
export const TEST_EVENT = "webhook.test";

/** `t=<unix>,v1=<hex HMAC-SHA256 over "<t>.<raw body>">`. */
export function signature(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

export interface EventToCreate {
  partnerId: string;
  jobId: string | null;
  event: string;
  data: Record<string, unknown>;
  /** The job's own callback_url, which overrides the account's URL. */
  callbackUrl?: string | null;
}

export interface WebhookSettingsView {
  url: string | null;
  secret: string | null;
  events: string[];
  max_attempts: number;
  retry_delays_seconds: number[];
  signature_header: string;
}

export interface TestDeliveryResult {
  delivered: boolean;
  status_code: number | null;
  error: string | null;
  event_id: string;
  url: string;
}

const unix = (d: Date | string | null) => (d === null ? null : Math.floor(new Date(d).getTime() / 1000));

/** Sanitized, fixed texts of a failed attempt (kept in `last_error`; no internal detail). */
const ATTEMPT_ERRORS = {
  timeout: "Timed out after 10 seconds",
  redirect: "Redirects are not followed",
  http_status: (code: number) => `Receiver answered ${code}`,
  not_public: "URL is not a public https URL",
  network: "Connection failed",
} as const;

export type ResendResult =
  | { outcome: "not_found" | "pending" | "no_url" }
  | { outcome: "queued"; event_id: string; event: string; url: string };

export interface WebhookDeps {
  /** The requests' lane: settings, resends (storage/connection-gate.ts). */
  db: Kysely<KernelTables>;
  /** The background lane: the delivery loop's claims and outcomes. */
  background: Kysely<KernelTables>;
  /** Wakes every instance's delivery loop when deliveries become due. */
  pubsub: PubSub;
  outbound: () => OutboundGuard;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Event names the registered job kinds emit, shown in the settings' `events`. */
  eventNames: readonly string[];
  /** The database is embedded (PGlite): a starting process takes back the claims of the last one at once. */
  embedded?: boolean;
}

export type Webhooks = ReturnType<typeof createWebhooks>;

export function createWebhooks(deps: WebhookDeps) {
  const { db, config, log } = deps;
  const delays = config.webhookRetryDelays;
  const nowSeconds = () => Math.floor(deps.clock.now() / 1000);

  async function settingsRow(partnerId: string) {
    return db.selectFrom("webhook_settings").selectAll().where("partner_id", "=", partnerId).executeTakeFirst();
  }

  function view(row: { url: string | null; secret: string | null } | undefined): WebhookSettingsView {
    return {
      url: row?.url ?? null,
      secret: row?.secret ?? null,
      events: [...deps.eventNames],
      max_attempts: MAX_ATTEMPTS,
      retry_delays_seconds: [...delays],
      signature_header: SIGNATURE_HEADER,
    };
  }

  /** One POST of a stored body; never throws. */
  async function post(url: string, secret: string, event: string, id: string, body: string, attempt: number) {
    try {
      // The guard resolves DNS for this attempt and connects only to the address it checked.
      const res = await deps.outbound().stream(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": WEBHOOK_USER_AGENT,
          "x-service-event": event,
          "x-service-event-id": id,
          "x-service-delivery-attempt": String(attempt),
          // Wall time, not the kernel's clock: the receiver compares `t` with its own clock (300 s window).
          [SIGNATURE_HEADER.toLowerCase()]: signature(secret, Math.floor(Date.now() / 1000), body),
        },
        body,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
        acceptStatus: (s) => s >= 200 && s < 300,
      });
      res.cancel(); // the response body is ignored
      return { ok: true as const, status: res.status, error: null };
    } catch (err) {
      if (isOutboundError(err, "http_status"))
        return { ok: false as const, status: err.status ?? null, error: ATTEMPT_ERRORS.http_status(err.status ?? 0) };
      if (isOutboundError(err, "redirect"))
        return { ok: false as const, status: err.status ?? null, error: ATTEMPT_ERRORS.redirect };
      if (isOutboundError(err, "timeout")) return { ok: false as const, status: null, error: ATTEMPT_ERRORS.timeout };
      if (isOutboundError(err, "not_public") || isOutboundError(err, "invalid_url"))
        return { ok: false as const, status: null, error: ATTEMPT_ERRORS.not_public };
      log.debug?.(`webhook attempt to ${url} failed`, err);
      return { ok: false as const, status: null, error: ATTEMPT_ERRORS.network };
    }
  }

  // Signed with the account's current secret at each attempt, so a rotation applies to retries too.
  const loop = createDeliveryLoop({
    db: deps.background,
    pubsub: deps.pubsub,
    log,
    retryDelays: delays,
    embedded: deps.embedded,
    send: (d: ClaimedDelivery) => post(d.url, d.secret ?? "", d.event, d.event_id, d.body, d.attempt),
  });

  return {
    /** Tells the delivery loops that deliveries are due; call after the transaction that made them committed. */
    wake: () => loop.wake(),

    /**
     * Inside the caller's transaction: stores the event with its body fixed, and, when there is a URL (the
     * job's callback_url, else the account's), a delivery due now. The caller wakes the loops after commit.
     */
    async createEvent(trx: Kysely<KernelTables>, e: EventToCreate): Promise<string> {
      const id = eventId();
      const body = JSON.stringify({ id, event: e.event, created_at: nowSeconds(), data: e.data });
      await trx
        .insertInto("webhook_events")
        .values({ id, partner_id: e.partnerId, job_id: e.jobId, event: e.event, body })
        .execute();
      const account = await trx
        .selectFrom("webhook_settings")
        .select("url")
        .where("partner_id", "=", e.partnerId)
        .executeTakeFirst();
      const url = e.callbackUrl || account?.url;
      if (!url) return id;
      await trx
        .insertInto("webhook_deliveries")
        .values({
          event_id: id,
          partner_id: e.partnerId,
          job_id: e.jobId,
          url,
          status: "pending",
          max_attempts: MAX_ATTEMPTS,
          next_attempt_at: sql`now()`,
        })
        .execute();
      // A secret exists from the first URL on; a callback_url on an account without one gets one now.
      await trx
        .insertInto("webhook_settings")
        .values({ partner_id: e.partnerId, url: null, secret: newSecret() })
        .onConflict((oc) =>
          oc.column("partner_id").doUpdateSet({ secret: sql`coalesce(webhook_settings.secret, excluded.secret)` }),
        )
        .execute();
      return id;
    },

    /** Starts this process's delivery loop (worker processes). */
    startWorkers: () => loop.start(),

    /** Stops the loop: sends in flight get a moment, then their rows are handed back for another attempt. */
    stopWorkers: () => loop.stop(),

    async settings(partnerId: string): Promise<WebhookSettingsView> {
      return view(await settingsRow(partnerId));
    },

    /** `url`: undefined leaves it, null or "" clears it. The caller has checked it with the guard. */
    async update(
      partnerId: string,
      patch: { url?: string | null; rotateSecret?: boolean },
    ): Promise<WebhookSettingsView> {
      const current = await settingsRow(partnerId);
      const url = patch.url === undefined ? (current?.url ?? null) : patch.url || null;
      let secret = current?.secret ?? null;
      if (patch.rotateSecret || (secret === null && url !== null)) secret = newSecret();
      await db
        .insertInto("webhook_settings")
        .values({ partner_id: partnerId, url, secret })
        .onConflict((oc) => oc.column("partner_id").doUpdateSet({ url, secret, updated_at: sql`now()` }))
        .execute();
      return view({ url, secret });
    },

    /** POST /webhook/test: one signed `webhook.test`, now, not retried; recorded like any delivery. */
    async test(partnerId: string, url: string): Promise<TestDeliveryResult> {
      const current = await settingsRow(partnerId);
      let secret = current?.secret;
      if (!secret) secret = (await this.update(partnerId, { url: current?.url ?? null, rotateSecret: true })).secret!;
      const id = eventId();
      const body = JSON.stringify({
        id,
        event: TEST_EVENT,
        created_at: nowSeconds(),
        data: { message: "This is a test event." },
      });
      const result = await post(url, secret, TEST_EVENT, id, body, 1);
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto("webhook_events")
          .values({ id, partner_id: partnerId, job_id: null, event: TEST_EVENT, body })
          .execute();
        await trx
          .insertInto("webhook_deliveries")
          .values({
            event_id: id,
            partner_id: partnerId,
            job_id: null,
            url,
            status: result.ok ? "delivered" : "failed",
            attempt: 1,
            max_attempts: 1,
            last_status_code: result.status,
            last_error: result.error,
            last_attempt_at: sql`now()`,
            delivered_at: result.ok ? sql`now()` : null,
          })
          .execute();
      });
      return { delivered: result.ok, status_code: result.status, error: result.error, event_id: id, url };
    },

    /**
     * A new delivery of a stored event, its body byte for byte (the envelope keeps its id, so a receiver that
     * deduplicates by id sees a repeat), to the account's URL now (else where the event last went), with
     * the usual attempts (one for `webhook.test`, which is never retried). Refused while a delivery of the
     * event is still pending: the event row is locked, so two resends at once make one delivery.
     */
    async resend(partnerId: string, eventId: string): Promise<ResendResult> {
      const result = await db.transaction().execute(async (trx) => {
        const event = await trx
          .selectFrom("webhook_events")
          .select(["id", "event"])
          .where("id", "=", eventId)
          .where("partner_id", "=", partnerId)
          .forUpdate()
          .executeTakeFirst();
        if (!event) return { outcome: "not_found" as const };
        const previous = await trx
          .selectFrom("webhook_deliveries")
          .select(["url", "status", "job_id"])
          .where("event_id", "=", eventId)
          .orderBy("id", "desc")
          .execute();
        if (previous.some((d) => d.status === "pending")) return { outcome: "pending" as const };
        const account = await trx
          .selectFrom("webhook_settings")
          .select("url")
          .where("partner_id", "=", partnerId)
          .executeTakeFirst();
        const url = account?.url ?? previous[0]?.url;
        if (!url) return { outcome: "no_url" as const };
        await trx
          .insertInto("webhook_deliveries")
          .values({
            event_id: eventId,
            partner_id: partnerId,
            job_id: previous[0]?.job_id ?? null,
            url,
            status: "pending",
            max_attempts: event.event === TEST_EVENT ? 1 : MAX_ATTEMPTS,
            next_attempt_at: sql`now()`,
          })
          .execute();
        return { outcome: "queued" as const, event_id: eventId, event: event.event, url };
      });
      if (result.outcome === "queued") await loop.wake();
      return result;
    },

    async deliveries(partnerId: string, q: { limit: number; jobId?: string }) {
      let query = db
        .selectFrom("webhook_deliveries as d")
        .innerJoin("webhook_events as e", "e.id", "d.event_id")
        .select([
          "d.event_id",
          "e.event",
          "d.job_id",
          "d.url",
          "d.status",
          "d.attempt",
          "d.max_attempts",
          "d.last_status_code",
          "d.last_error",
          "d.created_at",
          "d.last_attempt_at",
          "d.next_attempt_at",
          "d.delivered_at",
        ])
        .where("d.partner_id", "=", partnerId)
        .orderBy("d.id", "desc")
        .limit(q.limit);
      if (q.jobId) query = query.where("d.job_id", "=", q.jobId);
      const rows = await query.execute();
      return rows.map((r) => ({
        event_id: r.event_id,
        event: r.event,
        job_id: r.job_id,
        url: r.url,
        status: r.status,
        attempt: r.attempt,
        max_attempts: r.max_attempts,
        last_status_code: r.last_status_code,
        last_error: r.last_error,
        created_at: unix(r.created_at),
        last_attempt_at: unix(r.last_attempt_at),
        next_attempt_at: unix(r.next_attempt_at),
        delivered_at: unix(r.delivered_at),
      }));
    },
  };
}
