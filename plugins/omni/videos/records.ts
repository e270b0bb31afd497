// Reading Omni videos: the status view, the list entries and the events' data are one view, so the three
// always agree.
//
// Choices where the spec is silent, written down here:
// - The status view and the list entries carry the same fields (the spec's list), plus `partner_job_id`,
//   and `progress` and `message` while the clip renders (non-breaking additions); `video_url` is null until
//   the job is complete; `duration` is the clip's measured length once complete, the requested one before.
// - The webhook `data` is the status view without `request_id` (part 1: "the fields of the Omni status response").

import type { PluginDb } from "mediagate/plugin";
import { z } from "zod";
import { clipOutcome, picture } from "../answer-fields.ts";
import { OMNI_ERRORS } from "../errors.ts";
import { type OmniVideoRecord, omniVideos, timestamp } from "../records.ts";

/** Whether a failed job's error is the prompt-fixable safety block (POST /omni/improve-prompt may repair it). */
export const isPromptFixable = (row: Pick<OmniVideoRecord, "state" | "error">) =>
  row.state === "error" && row.error === OMNI_ERRORS.videoUnsafe;

const ids = (v: unknown): string[] => (typeof v === "string" ? JSON.parse(v) : ((v as string[]) ?? []));

export function videoView(row: OmniVideoRecord, mediaUrl: (key: string) => string | null) {
  const out = row.state === "complete" ? row.output : null;
  const running = row.finished_at === null;
  return {
    job_id: row.job_id,
    partner_job_id: row.partner_job_id,
    status: row.state,
    model: row.model,
    prompt: row.prompt,
    character_ids: ids(row.character_ids),
    voice_ids: ids(row.voice_ids),
    first_frame_url: row.first_frame_url,
    last_frame_url: row.last_frame_url,
    duration: out ? out.duration : Number(row.duration),
    aspect_ratio: row.aspect_ratio,
    resolution: row.resolution,
    video_url: out ? mediaUrl(out.video_key) : null,
    error: row.error,
    prompt_fixable: isPromptFixable(row),
    credits_used: Number(row.credits_used),
    credits_refunded: Number(row.credits_refunded),
    created_at: timestamp(row.created_at),
    metadata_removed: out?.metadata_removed ?? false,
    progress: running ? (row.progress ?? 0) : null,
    message: running ? (row.message ?? "Queued") : null,
  };
}

export const videoViewShape = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  status: z.string(),
  model: z.string(),
  prompt: z.string(),
  character_ids: z.array(z.string()),
  voice_ids: z.array(z.string()),
  first_frame_url: z.string().nullable(),
  last_frame_url: z.string().nullable(),
  duration: z.number().int(),
  ...picture,
  ...clipOutcome,
  credits_used: z.number().int(),
  credits_refunded: z.number().int(),
  created_at: z.string(),
  metadata_removed: z.boolean(),
  progress: z.number().int().nullable(),
  message: z.string().nullable(),
});

/** The Omni events' `data`, read in the transaction that ends the job: the status view less its progress. */
export async function eventData(trx: PluginDb, jobId: string): Promise<Record<string, unknown>> {
  const row = await omniVideos.inTransaction(trx, jobId);
  // The link the job stored with its output: event data is built where no media link function is at hand.
  const { progress: _p, message: _m, ...view } = videoView(row, () => row.output?.video_url ?? null);
  return view;
}
