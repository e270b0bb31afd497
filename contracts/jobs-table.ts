// The kernel's `jobs` row as kysely types it: one row per job, which a plugin's record table joins by job id
// (lib/records.ts). On the floor so the record reads plugins use type against it without importing storage/;
// storage/tables.ts lists it with the kernel's other tables.
import type { ColumnType } from "kysely";

/** A timestamp column: read as a Date, written as a Date or an ISO string, filled by its default when omitted. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A jsonb column: read as the value, written as the value or its JSON text. */
export type Json<T> = ColumnType<T, string | T, string | T>;

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
  /** Where this job's events go instead of the account's webhook URL. */
  callback_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** Jobs charged together as one group (a batch): they hold one in-flight slot between them. */
  group_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Attempts whose runner threw a non-transient error (core/jobs.ts), against the kind's `retries`. */
  failed_attempts: ColumnType<number, number | undefined, number>;
}
