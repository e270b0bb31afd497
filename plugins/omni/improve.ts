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
import { z } from "zod";
import { allocateServiceId, ApiError, cleanUpstreamText, type JobKindDeclaration, JobFailure, notFound, operation, type PluginDb, TextGenerationError } from "mediagate/plugin";
import { OMNI_ERRORS as E } from "./errors.ts";
import { LIMITS, OMNI_FEATURE, OMNI_PAUSE, repairPrice } from "./limits.ts";
import { omniVideos } from "./records.ts";
import type { OmniJobInput } from "./types.ts";
import { insertVideoRecord, isPromptFixable } from "./video.ts";

const JOB_ID = /^svc-[0-9a-f]{8}$/;

/**
 * How long the request waits for its repair job: the text model's default deadline (60 s, plugins/text
 * TEXT_GENERATE_TIMEOUT_MS) with room for the queue to pick the job up. Ours; the spec gives none.
 */
export const REPAIR_WAIT_MS = 90_000;

/** What the text model is told. The sandbox (plugins/text) answers the task by name, deterministically. */
const INSTRUCTIONS = [
  "You rewrite prompts for a video generation model whose safety filter blocked them.",
  "Remove or soften only what breaks content guidelines (violence, gore, sexual content, real people's likeness, hate).",
  "Keep every other detail: characters, setting, camera, style, and every quoted line of dialogue that is safe.",
  "Answer with the rewritten prompt only, no commentary.",
].join(" ");

/** The repair job's input and, once it handed the clip on, its output. */
interface RepairInput {
  source_job_id: string;
}
interface RepairOutput {
  source_job_id: string;
  job_id: string;
  improved_prompt: string;
}

const parsed = <T>(v: unknown): T => (typeof v === "string" ? (JSON.parse(v) as T) : (v as T));

/**
 * The repair job: rewrites the source's prompt, then ends `complete` handing the new clip on (created, with
 * its record, and queued in the transaction that ends the repair, carrying the repair's charge). Any failure
 * of the text model is the repair's failure (no retry: the partner waits for the answer); a crash or a
 * database error is retried by the queue, from the top (nothing is written before the ending).
 */
export const repairJob: JobKindDeclaration<RepairInput> = {
  states: ["processing", "complete", "failed"],
  initial: "processing",
  transitions: { processing: ["complete", "failed"] },
  terminal: { complete: "success", failed: "failure" },
  failState: "failed",
  failError: E.repairFailed,
  // An attempt is one text call (60 s by default) and two statements.
  timeoutSeconds: 300,
  async run(ctx) {
    const sourceId = ctx.input.source_job_id;
    const source = await omniVideos.find(ctx.db, ctx.partnerId, sourceId);
    if (!source) throw new JobFailure(E.repairFailed);
    let improved: string;
    try {
      const answer = await ctx.capability("text.generate").generate({
        task: "prompt-repair",
        instructions: INSTRUCTIONS,
        input: source.prompt,
        maxChars: LIMITS.promptChars,
        signal: ctx.signal,
      });
      // Upstream text, checked like partner input before it is stored as the new clip's prompt: whatever
      // provider answers, a NUL or an unpaired surrogate never reaches Postgres (lib/upstream-text.ts).
      improved = cleanUpstreamText(answer.text, LIMITS.promptChars).trim();
      if (improved === "") throw new TextGenerationError("empty rewrite");
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      ctx.log.warn(`omni repair ${ctx.jobId} of ${sourceId} failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new JobFailure(E.repairFailed);
    }

    const input = parsed<OmniJobInput>(source.input);
    const clipId = await allocateServiceId(ctx.db);
    return {
      state: "complete",
      output: { source_job_id: sourceId, job_id: clipId, improved_prompt: improved } satisfies RepairOutput,
      handOff: {
        kind: "video",
        jobId: clipId,
        input: input as unknown as Record<string, unknown>,
        partnerJobId: source.partner_job_id,
        callbackUrl: input.callback_url ?? null,
        within: (trx, id) =>
          insertVideoRecord(trx, id, ctx.partnerId, {
            model: source.model as OmniJobInput["model"],
            prompt: improved,
            character_ids: parsed<string[]>(source.character_ids),
            voice_ids: parsed<string[]>(source.voice_ids),
            first_frame_url: source.first_frame_url,
            last_frame_url: source.last_frame_url,
            duration: input.seconds,
            aspect_ratio: source.aspect_ratio as never,
            resolution: source.resolution as never,
            reference_video: source.reference_video,
            input,
          }),
      },
    };
  },
};

interface RepairRow {
  state: string;
  finished_at: unknown;
  output: RepairOutput | null;
}

async function readRepair(db: PluginDb, jobId: string, partnerId: string): Promise<RepairRow> {
  const row = await db.selectFrom("jobs").select(["state", "finished_at", "output"]).where("id", "=", jobId).where("partner_id", "=", partnerId).executeTakeFirstOrThrow();
  return { state: row.state, finished_at: row.finished_at, output: row.output === null ? null : parsed<RepairOutput>(row.output) };
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
        c.addIssue({ code: "custom", message: E.jobIdRequired });
        return z.NEVER;
      }
      return { jobId: raw.job_id.trim() };
    }),
  output: z.object({
    job_id: z.string(),
    source_job_id: z.string(),
    improved_prompt: z.string(),
    credits_used: z.number().int(),
    credits_remaining: z.number().int(),
  }),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, E.unavailable);
    const { jobId } = ctx.input;
    const source = JOB_ID.test(jobId) ? await omniVideos.find(ctx.db, ctx.partner.id, jobId) : undefined;
    if (!source) throw notFound();
    if (source.state !== "error") throw new ApiError(400, E.notFailed);
    if (!isPromptFixable(source)) throw new ApiError(400, E.notFixable);

    const credits = ctx.priceFor({ ...repairPrice(), customRateMissing: E.customNoRate });
    const repair = await ctx.submitJob({
      kind: "repair",
      state: "processing",
      credits,
      description: `Omni prompt repair (${jobId})`,
      insufficientCredits: E.repairInsufficient,
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
        await ctx.finishJob(repair.jobId, { state: "failed", refund: true, error: E.repairFailed });
        ctx.log.warn(`omni repair ${repair.jobId} of ${jobId}: ${ctx.request.signal.aborted ? "the partner hung up" : `not done in ${REPAIR_WAIT_MS} ms`}; ended by its request unless its worker had ended it`);
        row = await readRepair(ctx.db, repair.jobId, ctx.partner.id);
        break;
      }
      await pause(Math.min(every, Math.max(1, deadline - Date.now())));
      every = Math.min(every * 2, 500);
      row = await readRepair(ctx.db, repair.jobId, ctx.partner.id);
    }
    if (row.state !== "complete" || !row.output) throw new ApiError(502, E.repairFailed);
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
