// Row types of the kernel's tables, for kysely. Plugins own their tables and declare their own row types;
// they reach these only through the kernel's services.
import type { ColumnType, Generated } from "kysely";

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string | T, string | T>;

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
  created_at: Timestamp;
}

export interface JobsTable {
  id: string;
  partner_id: string;
  plugin: string;
  kind: string;
  endpoint: string;
  state: string;
  partner_job_id: string | null;
  credits_used: ColumnType<number, number | undefined, number>;
  credits_refunded: ColumnType<number, number | undefined, number>;
  holds_inflight_slot: ColumnType<boolean, boolean | undefined, boolean>;
  progress: number | null;
  message: string | null;
  input: Json<Record<string, unknown>> | null;
  output: Json<Record<string, unknown>> | null;
  error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
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
  usage_calls: UsageCallsTable;
  service_ids: ServiceIdsTable;
  settings: SettingsTable;
}
