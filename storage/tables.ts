// Row types of the kernel's tables, for kysely. Plugins own their tables and declare their own row types;
// they reach these only through the kernel's services.
import type { ColumnType, Generated } from "kysely";
import type { JobsTable, Json, Timestamp } from "../contracts/jobs-table.ts";
import type { UpstreamHandle } from "../contracts/upstream.ts";

export type PricingTier = "api_plus10" | "standard" | "custom";
export type LedgerType = "usage" | "refund" | "purchase" | "adjustment";

export interface PartnerLimits {
  inflight_jobs?: number;
  caption_jobs?: number;
  rate_limits?: Record<string, number>;
}

export interface PartnersTable {
  id: string;
  name: string;
  api_key_hash: string;
  api_key_prefix: string;
  pricing_tier: PricingTier;
  credits_remaining: ColumnType<number, number | undefined, number>;
  is_active: ColumnType<boolean, boolean | undefined, boolean>;
  features: Json<Record<string, boolean>>;
  limits: Json<PartnerLimits>;
  custom_rates: Json<Record<string, unknown>>;
  created_at: Timestamp;
  last_active: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface LedgerTable {
  id: Generated<number>;
  partner_id: string;
  amount: number;
  type: LedgerType;
  description: string;
  endpoint: string | null;
  job_id: string | null;
  /** A refund of one refundable share of the job (its index); null for a job's own refund. */
  part: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
}

/** Parts of one job's charge it may refund one by one (core/ledger.ts refundShare). */
export interface JobSharesTable {
  job_id: string;
  idx: number;
  credits: number;
  refunded: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface WebhookSettingsTable {
  partner_id: string;
  url: string | null;
  secret: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface WebhookEventsTable {
  id: string;
  partner_id: string;
  job_id: string | null;
  event: string;
  body: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** `pending` until delivered or out of attempts (the spec's "in retry"), then `delivered` or `failed`. */
export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  event_id: string;
  partner_id: string;
  job_id: string | null;
  url: string;
  status: DeliveryStatus;
  attempt: ColumnType<number, number | undefined, number>;
  max_attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The delivery loop's lease on a row it is sending (core/webhook-delivery.ts). */
  claimed_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  delivered_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface UsageCallsTable {
  partner_id: string;
  endpoint: string;
  second: Timestamp;
  calls: number;
}

export interface ServiceIdsTable {
  id: string;
}

export interface SettingsTable {
  key: string;
  value: Json<unknown>;
}

export interface KernelTables {
  partners: PartnersTable;
  ledger: LedgerTable;
  jobs: JobsTable;
  job_shares: JobSharesTable;
  usage_calls: UsageCallsTable;
  service_ids: ServiceIdsTable;
  settings: SettingsTable;
  webhook_settings: WebhookSettingsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  idempotency_keys: IdempotencyKeysTable;
  job_waits: JobWaitsTable;
  leases: LeasesTable;
  retained_blobs: RetainedBlobsTable;
}

/** Files kept for a window (core/retention.ts): the full blob key and when the sweeper may remove it. */
export interface RetainedBlobsTable {
  key: string;
  expires_at: Timestamp;
}

/** Who works on what, until when (core/leases.ts). */
export interface LeasesTable {
  key: string;
  owner: string;
  expires_at: Timestamp;
}

/** A job waiting on an upstream provider (core/upstream-waits.ts). */
export interface JobWaitsTable {
  job_id: string;
  step: string;
  provider: string;
  upstream_id: string;
  /** The provider's handle as `submit` gave it, given back to each `poll`. */
  handle: Json<UpstreamHandle>;
  seq: number;
  parked: boolean;
  claimed_by: string | null;
  wake: boolean;
  done: boolean;
  polls: number;
  errors: number;
  submitted_at: Timestamp;
  deadline_at: Timestamp;
  next_poll_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** Idempotency-Key rows (core/idempotency.ts). */
export interface IdempotencyKeysTable {
  partner_id: string;
  key: string;
  endpoint: string;
  request_hash: string;
  job_id: string | null;
  status: number | null;
  body: string | null;
  created_at: Date;
}
