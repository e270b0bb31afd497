// The job-record read model: a plugin keeps its own record table beside the kernel's `jobs` row (one row per
// job, keyed by the job id) and reads the two joined. The plugin declares its table's row type once; the
// kernel knows the `jobs` columns, so every read (status, list, events) comes back typed as
// `JobRecord<Table, Output>` = the record's columns and the job's, with `output` as the plugin stores it.
//
// In queries the record is `r` and its job `j`: `.where("j.state", "=", "complete")`, `.where("r.created_at",
// ">=", since)`, both typed against the declared columns.
import type { ColumnType, Selectable, SelectQueryBuilder, SelectType } from "kysely";
import type { JobsTable } from "../contracts/jobs-table.ts";
import type { PluginDb } from "../contracts/records.ts";
import { listPage, type Page, type PageRequest } from "./paging.ts";

/**
 * The job's columns a record read carries beside the record's own. Not the job's id, partner or creation
 * time (the record table has its own), nor its input, plugin, kind or bookkeeping.
 */
export const JOB_COLUMNS = [
  "state",
  "partner_job_id",
  "credits_used",
  "credits_refunded",
  "progress",
  "message",
  "output",
  "error",
  "finished_at",
  "updated_at",
] as const;
export type JobColumnName = (typeof JOB_COLUMNS)[number];

/** The job as a record read sees it, `output` typed as the plugin's job stores it. */
export type JobColumns<Output = Record<string, unknown>> = Omit<
  Pick<Selectable<JobsTable>, JobColumnName>,
  "output"
> & { output: Output | null };

/** One record joined to its job. A record column named like a job column is shadowed by the job's. */
export type JobRecord<Table, Output = Record<string, unknown>> = Omit<Selectable<Table>, JobColumnName> &
  JobColumns<Output>;

/** The tables of a record query, by alias: `r` the plugin's record, `j` its job. */
export interface RecordTables<Table, Output> {
  r: Table;
  j: Omit<JobsTable, "output"> & { output: ColumnType<Output | null, never, never> };
}

/** A query over records joined to their jobs, selecting `JobRecord` rows; filter and order it as any kysely query. */
export type RecordQuery<Table, Output = Record<string, unknown>> = SelectQueryBuilder<
  RecordTables<Table, Output>,
  "r" | "j",
  JobRecord<Table, Output>
>;

/** A filter added to a record query (`(q) => q.where("j.state", "=", "complete")`). */
export type RecordFilter<Table, Output = Record<string, unknown>> = (
  query: RecordQuery<Table, Output>,
) => RecordQuery<Table, Output>;

/** What every record table has: the owner (and the job id, under the column `JobRecordsOptions.jobId` names). */
export interface RecordTableBase {
  partner_id: unknown;
}

/** Columns whose selected value is a string (the job id column must be one). */
type StringColumn<Table> = {
  [K in keyof Table & string]: SelectType<Table[K]> extends string ? K : never;
}[keyof Table & string];

export interface JobRecordsOptions<Table> {
  /** The column holding the job's id (`jobs.id`): `job_id` for most tables. */
  jobId: StringColumn<Table>;
  /** What a page is ordered by, newest first: each column descending, the later ones breaking ties. */
  newestFirst: ReadonlyArray<keyof Table & string>;
}

export type { PluginDb };

type Db = PluginDb;

export interface JobRecords<Table, Output = Record<string, unknown>> {
  /** The record table's name. */
  readonly table: string;
  /** Every record joined to its job, unfiltered, unordered: the base of a read the methods below do not cover. */
  query(db: Db): RecordQuery<Table, Output>;
  /** The partner's records joined to their jobs. Another account's never appear (invariant 4). */
  owned(db: Db, partnerId: string): RecordQuery<Table, Output>;
  /** One of the partner's records by job id: undefined when it is missing and when it is another account's alike (both are the same 404). */
  find(db: Db, partnerId: string, jobId: string): Promise<JobRecord<Table, Output> | undefined>;
  /** The first of the partner's records a filter selects (another key: an integer id, an idempotency key). */
  findBy(db: Db, partnerId: string, filter: RecordFilter<Table, Output>): Promise<JobRecord<Table, Output> | undefined>;
  /** A page of the partner's records, newest first, and how many the same filter matches. */
  page(
    db: Db,
    partnerId: string,
    page: PageRequest,
    filter?: RecordFilter<Table, Output>,
  ): Promise<Page<JobRecord<Table, Output>>>;
  /** A job's record read through the transaction that ends it, so event data sees the job's final state. */
  inTransaction(trx: Db, jobId: string): Promise<JobRecord<Table, Output>>;
}

/**
 * The read model of one record table joined to `jobs`. `Table` is the table's row type as kysely takes it
 * (declared once beside the table's name); `Output` what the plugin's jobs keep on `jobs.output`.
 */
export function jobRecords<Table extends RecordTableBase, Output = Record<string, unknown>>(
  table: string,
  options: JobRecordsOptions<Table>,
): JobRecords<Table, Output> {
  type Row = JobRecord<Table, Output>;
  type Query = RecordQuery<Table, Output>;
  const jobColumns = JOB_COLUMNS.map((c) => `j.${c}` as const);
  const key = `r.${options.jobId}`;
  // Built untyped: the aliases and the table's columns are known only to the caller's types, which
  // RecordQuery states once for every method.
  const loose = (query: Query) => query as unknown as SelectQueryBuilder<any, any, any>;
  const typed = (query: SelectQueryBuilder<any, any, any>) => query as unknown as Query;
  const base = (db: Db) =>
    typed(db.selectFrom(`${table} as r`).innerJoin("jobs as j", "j.id", key).selectAll("r").select(jobColumns));
  const owned = (db: Db, partnerId: string) => typed(loose(base(db)).where("r.partner_id", "=", partnerId));
  const newestFirst = (query: Query) =>
    typed(options.newestFirst.reduce((q, column) => q.orderBy(`r.${column}`, "desc"), loose(query)));
  const first = async (query: Query) => (await loose(query).executeTakeFirst()) as Row | undefined;

  return {
    table,
    query: base,
    owned,
    find: (db, partnerId, jobId) => first(typed(loose(owned(db, partnerId)).where(key, "=", jobId))),
    findBy: (db, partnerId, filter) => first(filter(owned(db, partnerId))),
    page: (db, partnerId, page, filter = (q) => q) =>
      listPage(newestFirst(filter(owned(db, partnerId))), page) as Promise<Page<Row>>,
    inTransaction: async (trx, jobId) =>
      (await loose(base(trx)).where(key, "=", jobId).executeTakeFirstOrThrow()) as Row,
  };
}
