// The status and the list of a plugin's job records, as GET /video-status and GET /videos (spec part 2) and
// GET /omni/video/<job_id> and GET /omni/videos (spec part 3) answer them: one id check, one `status` filter
// (`processing`, `complete`, `failed`), one `since`. Plugins reach it through mediagate/plugin.
import { z } from "zod";
import { notFound } from "./errors.ts";
import { limitParam, offsetParam, type PageBounds } from "./paging.ts";
import type { JobRecord, JobRecords, RecordQuery, RecordTableBase } from "./records.ts";
import { parseSince } from "./time.ts";

/** A job id as the kernel allocates it; anything else cannot name a job, so it is a 404 without a read. */
const JOB_ID = /^svc-[0-9a-f]{8}$/;

/** Whether `id` has the shape of a job id (`svc-` and 8 hex digits). */
export const isJobId = (id: unknown): id is string => typeof id === "string" && JOB_ID.test(id);

/** The list's `status` values and the job state each selects (`processing`: every job not yet finished). */
const LIST_STATUS = { processing: null, complete: "complete", failed: "error" } as const;
type ListStatus = keyof typeof LIST_STATUS;

/** The query of a job list: `limit`, `offset`, `status` (refused with `statusText`) and `since`. */
export function jobListInput(bounds: PageBounds, texts: { status: string; since: string }) {
  return z.object({
    limit: limitParam(bounds),
    offset: offsetParam,
    status: z
      .unknown()
      .optional()
      .meta({ type: "string", enum: Object.keys(LIST_STATUS) })
      .transform((v, c) => {
        if (v === undefined || v === "") return undefined;
        // Own keys only: `in` would take "toString" or "constructor" from Object.prototype (a 500 later).
        if (typeof v !== "string" || !Object.hasOwn(LIST_STATUS, v)) {
          c.addIssue({ code: "custom", message: texts.status });
          return z.NEVER;
        }
        return v as ListStatus;
      }),
    since: z.unknown().optional().meta({ type: "string", description: texts.since }),
  });
}

export type JobListQuery = z.infer<ReturnType<typeof jobListInput>>;

/** What a listed record table has beyond its owner: its creation time, which `since` compares. */
interface ListedTable extends RecordTableBase {
  created_at: unknown;
}

type Db = Parameters<JobRecords<ListedTable>["find"]>[0];

/** The partner's record of the job `id`, or the 404 a missing, malformed or another account's id all get. */
export async function findOwnRecord<Table extends ListedTable, Output>(
  records: JobRecords<Table, Output>,
  db: Db,
  partnerId: string,
  id: string | undefined,
): Promise<JobRecord<Table, Output>> {
  if (!isJobId(id)) throw notFound();
  const row = await records.find(db, partnerId, id);
  if (!row) throw notFound();
  return row;
}

/** A page of the partner's records, newest first, narrowed by the query's `status` and `since`. */
export function listOwnRecords<Table extends ListedTable, Output>(
  records: JobRecords<Table, Output>,
  db: Db,
  partnerId: string,
  query: JobListQuery,
) {
  const { status } = query;
  const since = parseSince(query.since);
  return records.page(db, partnerId, query, (q) => {
    // The filter names only the columns ListedTable promises; kysely cannot see them through a generic table.
    let listed = q as unknown as RecordQuery<ListedTable, Output>;
    if (status === "processing") listed = listed.where("j.finished_at", "is", null);
    else if (status) listed = listed.where("j.state", "=", LIST_STATUS[status]);
    if (since) listed = listed.where("r.created_at", ">=", since);
    return listed as unknown as RecordQuery<Table, Output>;
  });
}
