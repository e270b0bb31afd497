// Partner accounts: the repository, the short-lived cache that keeps authentication off the database, and
// the read services the account endpoints need (balance, ledger page, usage summary).
//
// Cache invalidation: every write to a partner row made through this module evicts that partner at once in
// this process and publishes `partner.changed`, which every other process (on Redis pub/sub when
// REDIS_URL is set) turns into the same eviction. A rotated or deactivated key therefore stops working at
// once on every node; the TTL only bounds the damage of a lost message.
//
// The cached row also answers balance reads (GET /me, /credits, /usage), because every balance change goes
// through `changed()` too: the kernel's charge and refund (core/kernel.ts) and the admin API's credits call it
// after their transaction commits. A charge never reads this cache: core/ledger.ts decides it inside its
// transaction with a conditional update of the row.
//
// A rotation or a deactivation also ends what still holds the old key open (GraphQL subscriptions), on
// every process: see core/revocations.ts (`revocations`, KEY_REVOKED).
//
// A read that was already on its way to the database when an eviction arrived may carry the row as it was
// before the write; it answers its own callers (who asked before the write was announced) but never fills
// the cache, and no later caller joins it. Evictions are numbered for that (`#seq`).
import { randomUUID } from "node:crypto";
import { type Kysely, type Selectable, sql } from "kysely";
import { listPage, type PageRequest } from "../lib/paging.ts";
import { isTransient } from "../lib/transient.ts";
import type { PubSub } from "../storage/pubsub.ts";
import type { KernelTables, PartnerLimits, PartnersTable, PricingTier } from "../storage/tables.ts";
import type { Clock } from "./clock.ts";
import { newApiKey, partnerId as newPartnerId } from "./ids.ts";
import { KEY_REVOKED, Revocations } from "./revocations.ts";
import type { UsageRecorder } from "./usage.ts";

export interface Partner {
  id: string;
  name: string;
  apiKeyPrefix: string;
  pricingTier: PricingTier;
  creditsRemaining: number;
  isActive: boolean;
  features: Readonly<Record<string, boolean>>;
  limits: Readonly<PartnerLimits>;
  customRates: Readonly<Record<string, unknown>>;
  createdAt: Date;
  lastActive: Date | null;
}

const PARTNER_CHANGED = "partner.changed";
const CACHE_TTL_MS = 5000;

function toPartner(row: Selectable<PartnersTable>): Partner {
  return {
    id: row.id,
    name: row.name,
    apiKeyPrefix: row.api_key_prefix,
    pricingTier: row.pricing_tier,
    creditsRemaining: Number(row.credits_remaining),
    isActive: row.is_active,
    features: row.features ?? {},
    limits: row.limits ?? {},
    customRates: row.custom_rates ?? {},
    createdAt: row.created_at,
    lastActive: row.last_active,
  };
}

export interface UsageSummary {
  total_calls: number;
  total_credits_used: number;
  per_endpoint: Array<{ endpoint: string; calls: number; credits_used: number }>;
}

export interface LedgerEntry {
  amount: number;
  type: string;
  description: string;
  created_at: Date;
}

export interface AccountService {
  /**
   * Current balance: from the key cache's copy of the partner row while that is fresh (it is evicted after
   * every ledger write, in every process), else from the database. Never use it to decide a charge.
   */
  balance(partnerId: string): Promise<number>;
  transactions(
    partnerId: string,
    page: { limit: number; offset: number },
  ): Promise<{ total: number; entries: LedgerEntry[] }>;
  usage(partnerId: string, since: Date | undefined): Promise<UsageSummary>;
  /** Latest known activity, including calls not yet written. */
  lastActive(partner: Partner): Date | null;
}

export class Accounts implements AccountService {
  #byHash = new Map<string, { partner: Partner; expires: number }>();
  #hashOf = new Map<string, string>();
  /** Reads of a key hash on their way to the database, shared by the callers that arrive meanwhile. */
  #loading = new Map<string, { seq: number; promise: Promise<Partner | undefined> }>();
  /** Evictions so far, in this process (local writes and other processes' messages alike). */
  #seq = 0;
  /** Partner id -> `#seq` of its latest eviction, kept only while some read is in flight. */
  #evictedAt = new Map<string, number>();
  #reads = 0;
  /** This process's open holders of keys (GraphQL subscriptions), told when a key may have been revoked. */
  readonly revocations = new Revocations();
  /** Marks our own KEY_REVOKED messages, whose holders were rechecked before publishing. */
  readonly #origin = randomUUID();

  constructor(
    private readonly db: Kysely<KernelTables>,
    private readonly clock: Clock,
    private readonly pubsub: PubSub,
    private readonly usageRecorder: UsageRecorder,
  ) {}

  /** Subscribes to other processes' changes and revocations; call once at boot. */
  async listen(): Promise<() => Promise<void>> {
    const offChanged = await this.pubsub.subscribe(PARTNER_CHANGED, (message) => {
      const id = (message as { partnerId?: string })?.partnerId;
      if (typeof id === "string") this.#evictLocal(id);
    });
    const offRevoked = await this.pubsub.subscribe(KEY_REVOKED, (message) => {
      const { partnerId, origin } = (message ?? {}) as { partnerId?: unknown; origin?: unknown };
      if (typeof partnerId !== "string" || origin === this.#origin) return;
      // Evict here too, so the recheck reads the row as written whatever order the two messages arrive in.
      this.#evictLocal(partnerId);
      void this.revocations.recheck(partnerId);
    });
    return async () => {
      await offChanged();
      await offRevoked();
    };
  }

  /** The partner holding this key hash, served from the cache when fresh. */
  byKeyHash(hash: string): Promise<Partner | undefined> {
    const now = this.clock.now();
    const hit = this.#byHash.get(hash);
    if (hit && hit.expires > now) return Promise.resolve(hit.partner);
    // A burst of requests after an eviction makes one query, not one each; a read that started before any
    // later eviction is not joined, since it may predate the write that eviction announced.
    const loading = this.#loading.get(hash);
    if (loading && loading.seq === this.#seq) return loading.promise;
    const seq = this.#seq;
    const promise = this.#load(hash, seq, now);
    this.#loading.set(hash, { seq, promise });
    return promise;
  }

  async #load(hash: string, seq: number, now: number): Promise<Partner | undefined> {
    this.#reads++;
    try {
      const row = await this.db.selectFrom("partners").selectAll().where("api_key_hash", "=", hash).executeTakeFirst();
      if (!row) {
        this.#byHash.delete(hash);
        return undefined;
      }
      const partner = toPartner(row);
      // Evicted while we read: the row may be older than the write, so it answers this read only.
      if ((this.#evictedAt.get(partner.id) ?? 0) <= seq) {
        this.#byHash.set(hash, { partner, expires: now + CACHE_TTL_MS });
        this.#hashOf.set(partner.id, hash);
      }
      return partner;
    } finally {
      if (this.#loading.get(hash)?.seq === seq) this.#loading.delete(hash);
      if (--this.#reads === 0) this.#evictedAt.clear();
    }
  }

  /** The cached copy of a partner's row, when one is fresh. */
  #cached(partnerId: string): Partner | undefined {
    const hash = this.#hashOf.get(partnerId);
    const hit = hash === undefined ? undefined : this.#byHash.get(hash);
    return hit && hit.expires > this.clock.now() ? hit.partner : undefined;
  }

  async get(id: string): Promise<Partner | undefined> {
    const row = await this.db.selectFrom("partners").selectAll().where("id", "=", id).executeTakeFirst();
    return row ? toPartner(row) : undefined;
  }

  /** Drops a partner from every process's cache; call after any write to its row. */
  async changed(partnerId: string): Promise<void> {
    this.#evictLocal(partnerId);
    // The write has committed: Redis out of reach must not make it look failed (a charge answered 503 would be
    // retried and charged again). Other processes' copies then expire within CACHE_TTL_MS.
    await this.pubsub.publish(PARTNER_CHANGED, { partnerId }).catch((err: unknown) => {
      if (!isTransient(err)) throw err;
    });
  }

  #evictLocal(partnerId: string): void {
    this.#seq++;
    if (this.#reads > 0) this.#evictedAt.set(partnerId, this.#seq);
    const hash = this.#hashOf.get(partnerId);
    if (hash) this.#byHash.delete(hash);
    this.#hashOf.delete(partnerId);
  }

  async create(input: {
    name: string;
    credits?: number;
    pricingTier?: PricingTier;
    features?: Record<string, boolean>;
  }): Promise<{ partner: Partner; apiKey: string }> {
    const key = newApiKey();
    const id = newPartnerId();
    const credits = input.credits ?? 0;
    const row = await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("partners")
        .values({
          id,
          name: input.name,
          api_key_hash: key.hash,
          api_key_prefix: key.prefix,
          pricing_tier: input.pricingTier ?? "api_plus10",
          credits_remaining: credits,
          features: JSON.stringify(input.features ?? {}),
          limits: JSON.stringify({}),
          custom_rates: JSON.stringify({}),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      // Opening credits are a purchase row, so the ledger sums to the balance from the first day.
      if (credits > 0) {
        await trx
          .insertInto("ledger")
          .values({
            partner_id: id,
            amount: credits,
            type: "purchase",
            description: "Initial credits",
            endpoint: null,
            job_id: null,
          })
          .execute();
      }
      return inserted;
    });
    return { partner: toPartner(row), apiKey: key.key };
  }

  async update(
    id: string,
    patch: Partial<{
      name: string;
      pricingTier: PricingTier;
      isActive: boolean;
      features: Record<string, boolean>;
      limits: PartnerLimits;
      customRates: Record<string, unknown>;
    }>,
  ): Promise<Partner | undefined> {
    const set: Record<string, unknown> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.pricingTier !== undefined) set.pricing_tier = patch.pricingTier;
    if (patch.isActive !== undefined) set.is_active = patch.isActive;
    // Switches and limits merge into what is stored; custom rates replace the negotiated table whole.
    if (patch.features !== undefined) set.features = sql`features || ${JSON.stringify(patch.features)}::jsonb`;
    if (patch.limits !== undefined) set.limits = sql`limits || ${JSON.stringify(patch.limits)}::jsonb`;
    if (patch.customRates !== undefined) set.custom_rates = JSON.stringify(patch.customRates);
    const row = Object.keys(set).length
      ? await this.db.updateTable("partners").set(set).where("id", "=", id).returningAll().executeTakeFirst()
      : await this.db.selectFrom("partners").selectAll().where("id", "=", id).executeTakeFirst();
    if (!row) return undefined;
    await this.changed(id);
    if (patch.isActive === false) await this.#revoked(id);
    return toPartner(row);
  }

  /**
   * After a write that may have made a key invalid (and its cache eviction): this process's holders of the
   * partner's keys re-check them now, and every other process's when KEY_REVOKED reaches it.
   */
  async #revoked(partnerId: string): Promise<void> {
    // Not awaited: the admin call that revoked does not wait for streams to end.
    void this.revocations.recheck(partnerId);
    await this.pubsub.publish(KEY_REVOKED, { partnerId, origin: this.#origin });
  }

  /** Issues a new key; the old one stops at once (spec Authentication 4: no grace period). */
  async rotateKey(id: string): Promise<string | undefined> {
    const key = newApiKey();
    const row = await this.db
      .updateTable("partners")
      .set({ api_key_hash: key.hash, api_key_prefix: key.prefix })
      .where("id", "=", id)
      .returning("id")
      .executeTakeFirst();
    if (!row) return undefined;
    await this.changed(id);
    await this.#revoked(id);
    return key.key;
  }

  async balance(partnerId: string): Promise<number> {
    const cached = this.#cached(partnerId);
    if (cached) return cached.creditsRemaining;
    const row = await this.db
      .selectFrom("partners")
      .select("credits_remaining")
      .where("id", "=", partnerId)
      .executeTakeFirstOrThrow();
    return Number(row.credits_remaining);
  }

  async transactions(partnerId: string, page: PageRequest) {
    const ledger = this.db
      .selectFrom("ledger")
      .select(["amount", "type", "description", "created_at"])
      .where("partner_id", "=", partnerId)
      .orderBy("id", "desc");
    const { rows, total } = await listPage(ledger, page);
    return { total, entries: rows.map((e) => ({ ...e, amount: Number(e.amount) })) };
  }

  async usage(partnerId: string, since: Date | undefined): Promise<UsageSummary> {
    await this.usageRecorder.flush();
    let calls = this.db
      .selectFrom("usage_calls")
      .select(["endpoint", (eb) => eb.fn.sum<number>("calls").as("calls")])
      .where("partner_id", "=", partnerId)
      .groupBy("endpoint");
    // Net credits per endpoint: charges minus refunds, so a refunded failure costs nothing here either.
    let credits = this.db
      .selectFrom("ledger")
      .select(["endpoint", (eb) => eb.fn.sum<number>(sql`-amount`).as("credits")])
      .where("partner_id", "=", partnerId)
      .where("type", "in", ["usage", "refund"])
      .where("endpoint", "is not", null)
      .groupBy("endpoint");
    if (since) {
      calls = calls.where("second", ">=", new Date(Math.floor(since.getTime() / 1000) * 1000));
      credits = credits.where("created_at", ">=", since);
    }
    const [callRows, creditRows] = await Promise.all([calls.execute(), credits.execute()]);
    const byEndpoint = new Map<string, { endpoint: string; calls: number; credits_used: number }>();
    for (const r of callRows)
      byEndpoint.set(r.endpoint, { endpoint: r.endpoint, calls: Number(r.calls), credits_used: 0 });
    for (const r of creditRows) {
      const e = byEndpoint.get(r.endpoint!) ?? { endpoint: r.endpoint!, calls: 0, credits_used: 0 };
      e.credits_used = Number(r.credits);
      byEndpoint.set(r.endpoint!, e);
    }
    const per_endpoint = [...byEndpoint.values()].sort(
      (a, b) => b.calls - a.calls || a.endpoint.localeCompare(b.endpoint),
    );
    return {
      total_calls: per_endpoint.reduce((s, e) => s + e.calls, 0),
      total_credits_used: per_endpoint.reduce((s, e) => s + e.credits_used, 0),
      per_endpoint,
    };
  }

  lastActive(partner: Partner): Date | null {
    const pending = this.usageRecorder.pendingLastActive(partner.id);
    const stored = partner.lastActive?.getTime() ?? 0;
    const latest = Math.max(pending ?? 0, stored);
    return latest ? new Date(latest) : null;
  }
}
