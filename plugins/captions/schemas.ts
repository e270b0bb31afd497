// The response shapes of the caption endpoints (spec part 2 "Caption job"), for the documents and GraphQL
// (not checked at run time): shared by index.ts and uploads/operations.ts.
import { z } from "zod";

export const retentionOut = z.object({
  captioned_output_days: z.number().int(),
  uploaded_source_days: z.number().int().nullable(),
  guaranteed: z.boolean(),
});
/** The two ids every caption answer opens with. */
export const captionIds = {
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
};
/** Whether the job's text can be edited now, and whether its source is still kept for a re-burn. */
export const editState = {
  editable: z.boolean(),
  source_available: z.boolean(),
};
export const captionJobOut = {
  ...captionIds,
  status: z.enum(["pending", "processing", "complete", "no_speech", "failed"]),
  captioned_url: z.string().nullable(),
  media_pruned: z.boolean(),
  credits_used: z.number().int(),
  credits_refunded: z.boolean(),
  edit_count: z.number().int(),
  ...editState,
  retention: retentionOut,
  error: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
};
export const submittedOut = z.object({ ...captionJobOut, credits_remaining: z.number().int() });
