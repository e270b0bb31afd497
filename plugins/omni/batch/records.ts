// Reading batches (spec part 3, "Omni batch"): a batch's status derived from its sections whenever it is read,
// and the one view GET /omni/script-runner/<batch_id> and the list both answer.
import type { Selectable } from "kysely";
import { listPage, type PageRequest, type PluginDb } from "mediagate/plugin";
import { z } from "zod";
import { clipOutcome, picture } from "../answer-fields.ts";
import { BATCHES_TABLE, type BatchRow, type OmniVideoRecord, omniVideos, timestamp } from "../records.ts";
import { isPromptFixable } from "../videos/records.ts";

type BatchStatus = "processing" | "complete" | "partial" | "error";

/** The rule of the header: derived from the sections. */
export function batchStatus(states: readonly { state: string; finished: boolean }[]): BatchStatus {
  if (states.some((s) => !s.finished)) return "processing";
  const complete = states.filter((s) => s.state === "complete").length;
  if (complete === states.length) return "complete";
  return complete === 0 ? "error" : "partial";
}

const sectionId = (row: OmniVideoRecord) => row.section_id ?? `section-${(row.section_index ?? 0) + 1}`;

export type Batch = Selectable<BatchRow>;

export function batchView(
  batch: Batch,
  sections: OmniVideoRecord[],
  mediaUrl: (key: string) => string,
  creditsRemaining: number,
) {
  return {
    batch_id: batch.batch_id,
    partner_job_id: batch.partner_job_id,
    status: batchStatus(sections.map((s) => ({ state: s.state, finished: s.finished_at !== null }))),
    aspect_ratio: batch.aspect_ratio,
    resolution: batch.resolution,
    section_count: Number(batch.section_count),
    sections_complete: sections.filter((s) => s.state === "complete").length,
    jobs: sections.map((s) => ({
      section_id: sectionId(s),
      title: s.section_title,
      job_id: s.job_id,
      duration: Number(s.duration),
      credits_used: Number(s.credits_used),
      status: s.state,
      video_url: s.state === "complete" && s.output ? mediaUrl(s.output.video_key) : null,
      error: s.error,
      prompt_fixable: isPromptFixable(s),
      credits_refunded: Number(s.credits_refunded),
    })),
    credits_used: Number(batch.credits_used),
    credits_refunded: sections.reduce((sum, s) => sum + Number(s.credits_refunded), 0),
    credits_remaining: creditsRemaining,
    created_at: timestamp(batch.created_at),
  };
}

export const sectionShape = z.object({
  section_id: z.string(),
  title: z.string().nullable(),
  job_id: z.string(),
  duration: z.number().int(),
  credits_used: z.number().int(),
  status: z.string(),
  ...clipOutcome,
  credits_refunded: z.number().int(),
});

export const batchShape = z.object({
  batch_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.enum(["processing", "complete", "partial", "error"]),
  ...picture,
  section_count: z.number().int(),
  sections_complete: z.number().int(),
  jobs: z.array(sectionShape),
  credits_used: z.number().int(),
  credits_refunded: z.number().int(),
  credits_remaining: z.number().int(),
  created_at: z.string(),
});

export async function sectionsOf(
  db: PluginDb,
  partnerId: string,
  batchIds: readonly string[],
): Promise<Map<string, OmniVideoRecord[]>> {
  const by = new Map<string, OmniVideoRecord[]>(batchIds.map((id) => [id, []]));
  if (batchIds.length === 0) return by;
  const rows = await omniVideos
    .owned(db, partnerId)
    .where("r.batch_id", "in", batchIds)
    .orderBy("r.section_index", "asc")
    .execute();
  for (const r of rows) by.get(r.batch_id!)?.push(r);
  return by;
}

/** The partner's batch `id`, or undefined when it is missing or another account's (the same 404). */
export async function findBatch(db: PluginDb, partnerId: string, id: string): Promise<Batch | undefined> {
  return (await db
    .selectFrom(BATCHES_TABLE)
    .selectAll()
    .where("partner_id", "=", partnerId)
    .where("batch_id", "=", id)
    .executeTakeFirst()) as Batch | undefined;
}

/** A page of the partner's batches, newest first. */
export async function batchPage(db: PluginDb, partnerId: string, page: PageRequest) {
  const query = db
    .selectFrom(BATCHES_TABLE)
    .selectAll()
    .where("partner_id", "=", partnerId)
    .orderBy("created_at", "desc")
    .orderBy("batch_id", "desc");
  return (await listPage(query, page)) as { rows: Batch[]; total: number };
}
