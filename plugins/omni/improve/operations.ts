// Prompt repair: POST /omni/improve-prompt rewrites the prompt of a failed Omni video whose error is the
// prompt-fixable safety block, through `text.generate` (task "prompt-repair"), and resubmits the clip with it.
//
// Money, written down here (spec part 3: "Charged 2 credits (api_plus10); refunded on failure"):
// - The call costs the repair's price and nothing else: 1 credit standard basis (2 on api_plus10; a custom
//   account's `omni.prompt_repair` rate, its 400 without one), `credits_used` says that, and the 402 is
//   `Insufficient credits. This costs N credits.` with that N. Like the repair, it is not counted in the
//   in-flight cap (part 1 lists /omni/improve-prompt as not counted).
// - The resubmitted clip is part of the repair: it is not charged separately. It carries the repair's charge
//   (core/jobs.ts JobOutcome.handOff): the clip's status shows that charge as its `credits_used`, and when the
//   clip fails (error) it refunds it, once, through the kernel's usual ending; a clip that completes keeps it.
//   The clip has the failed job's model, duration, resolution, aspect ratio, characters, voices, references,
//   partner_job_id and callback, only the prompt new.
// - At any moment exactly one open job holds the charge, so it is refunded at most once: the repair job
//   until the clip exists, then the clip. The repair ends `complete` in the very transaction that creates
//   and queues the clip, so a repair is never refunded after its clip was created; before that, its failure
//   (the rewrite failed, or the endpoint gave up waiting, see below) refunds it and no clip ever follows.
//
// Surviving a crash: the repair is a queued job (kind `repair`), charged and queued in one transaction by the
// request; the worker calls the text model and hands the clip on. A process killed anywhere leaves either
// the queued repair (the queue runs it again after the restart: its attempt's heartbeat lapses, or an
// embedded database's restart takes it back at once) or the ended repair with its queued clip.
//
// The endpoint stays synchronous (spec: "synchronous"): it waits for its repair job, up to REPAIR_WAIT_MS,
// then answers 200 with the new clip's `job_id`, `source_job_id`, `improved_prompt`, `credits_used` and
// `credits_remaining` (the balance right after the charge). A rewrite that failed answers 502 `Prompt
// improver temporarily unavailable. Credits refunded.` (the spec's "prompt improver temporarily unavailable
// (credits refunded)"). When the wait passes, or the partner hung up, the endpoint ends the repair itself,
// failed and refunded, unless the worker ended it first; the job's `finished_at` guard lets exactly one of
// the two end it. Then it answers what the job became: the 502 only when the repair was refunded, 200 with
// the clip when the worker had already handed it on. So the 502's "Credits refunded" is always true, and
// no clip is ever made for a call answered with an error.

import { ApiError, isJobId, notFound, operation, type PluginDb } from "mediagate/plugin";
import { z } from "zod";
import { charged } from "../answer-fields.ts";
import { OMNI_ERRORS } from "../errors.ts";
import { OMNI_FEATURE, OMNI_PAUSE, repairPrice } from "../prices.ts";
import { omniVideos } from "../records.ts";
import { isPromptFixable } from "../videos/records.ts";
import { parsed, type RepairInput, type RepairOutput } from "./job.ts";

/**
 * How long the request waits for its repair job: the text model's default deadline (60 s, plugins/text
 * TEXT_GENERATE_TIMEOUT_MS) with room for the queue to pick the job up. Ours; the spec gives none.
 */
export const REPAIR_WAIT_MS = 90_000;

interface RepairRow {
  state: string;
  finished_at: unknown;
  output: RepairOutput | null;
}

async function readRepair(db: PluginDb, jobId: string, partnerId: string): Promise<RepairRow> {
  const row = await db
    .selectFrom("jobs")
    .select(["state", "finished_at", "output"])
    .where("id", "=", jobId)
    .where("partner_id", "=", partnerId)
    .executeTakeFirstOrThrow();
  return {
    state: row.state,
    finished_at: row.finished_at,
    output: row.output === null ? null : parsed<RepairOutput>(row.output),
  };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const improvePrompt = operation({
  method: "POST",
  path: "/omni/improve-prompt",
  feature: OMNI_FEATURE,
  summary: "Rewrite a blocked Omni prompt and resubmit the video",
  input: z
    .object({ job_id: z.unknown().optional().meta({ type: "string" }) })
    .meta({ required: ["job_id"] })
    .transform((raw, c) => {
      if (typeof raw.job_id !== "string" || raw.job_id.trim() === "") {
        c.addIssue({ code: "custom", message: OMNI_ERRORS.jobIdRequired });
        return z.NEVER;
      }
      return { jobId: raw.job_id.trim() };
    }),
  output: z.object({
    job_id: z.string(),
    source_job_id: z.string(),
    improved_prompt: z.string(),
    ...charged,
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.unavailable);
    const { jobId } = ctx.input;
    const source = isJobId(jobId) ? await omniVideos.find(ctx.db, ctx.partner.id, jobId) : undefined;
    if (!source) throw notFound();
    if (source.state !== "error") throw new ApiError(400, OMNI_ERRORS.notFailed);
    if (!isPromptFixable(source)) throw new ApiError(400, OMNI_ERRORS.notFixable);
    if (ctx.capability("omni.generate").serves?.(source.model) === false)
      throw new ApiError(503, OMNI_ERRORS.unavailable);

    const credits = ctx.priceFor({ ...repairPrice(), customRateMissing: OMNI_ERRORS.customNoRate });
    const repair = await ctx.submitJob({
      kind: "repair",
      state: "processing",
      credits,
      description: `Omni prompt repair (${jobId})`,
      insufficientCredits: OMNI_ERRORS.repairInsufficient,
      input: { source_job_id: jobId } satisfies RepairInput,
    });

    // Wait for the worker (module header): a poll with a deadline, quick at first (the sandbox answers at
    // once), then every half second.
    const deadline = Date.now() + REPAIR_WAIT_MS;
    let every = 25;
    let row = await readRepair(ctx.db, repair.jobId, ctx.partner.id);
    while (row.finished_at === null) {
      if (Date.now() >= deadline || ctx.request.signal.aborted) {
        // Ends it only if the worker has not: one of the two endings wins, the other does nothing.
        await ctx.finishJob(repair.jobId, { state: "failed", refund: true, error: OMNI_ERRORS.repairFailed });
        ctx.log.warn(
          `omni repair ${repair.jobId} of ${jobId}: ${ctx.request.signal.aborted ? "the partner hung up" : `not done in ${REPAIR_WAIT_MS} ms`}; ended by its request unless its worker had ended it`,
        );
        row = await readRepair(ctx.db, repair.jobId, ctx.partner.id);
        break;
      }
      await pause(Math.min(every, Math.max(1, deadline - Date.now())));
      every = Math.min(every * 2, 500);
      row = await readRepair(ctx.db, repair.jobId, ctx.partner.id);
    }
    if (row.state !== "complete" || !row.output) throw new ApiError(502, OMNI_ERRORS.repairFailed);
    return {
      job_id: row.output.job_id,
      source_job_id: jobId,
      improved_prompt: row.output.improved_prompt,
      credits_used: repair.creditsUsed,
      credits_remaining: repair.creditsRemaining,
    };
  },
});

export const improveOperations = [improvePrompt];
