// Prompt repair: POST /omni/improve-prompt rewrites the prompt of a failed Omni video whose error is the
// prompt-fixable safety block, through `text.generate` (task "prompt-repair"), and resubmits the clip with it.
//
// Money, written down here since the spec leaves the resubmission open:
// - The repair costs 1 credit standard (2 on api_plus10), is not counted in the in-flight cap, and is
//   refunded when the rewrite fails (502) or the resubmission is refused (its 402/429 then answers).
// - The resubmitted clip is a new Omni video job charged at the clip's own price, like POST /omni/video
//   (the failed job was refunded): same model, duration, resolution, aspect ratio, characters, voices,
//   references and callback as the failed job, only the prompt new. Like the repair that makes it, it is
//   not counted in the in-flight cap (part 1 lists /omni/improve-prompt as not counted). `credits_used` of
//   the answer is the repair and the clip together.
// - Before anything is charged the balance must cover both (402 `Insufficient credits. This costs N
//   credits.` with N the two together), so a partner is never charged a repair whose clip cannot follow.
import { z } from "zod";
import { ApiError, cleanUpstreamText, type JobKindDeclaration, notFound, operation, TextGenerationError } from "mediagate/plugin";
import { OMNI_ERRORS as E } from "./errors.ts";
import { LIMITS, OMNI_FEATURE, OMNI_PAUSE, repairPrice } from "./limits.ts";
import { omniVideos } from "./records.ts";
import type { OmniJobInput } from "./types.ts";
import { insertVideoRecord, isPromptFixable, priceOf } from "./video.ts";

const JOB_ID = /^svc-[0-9a-f]{8}$/;

/** What the text model is told. The sandbox (plugins/text) answers the task by name, deterministically. */
const INSTRUCTIONS = [
  "You rewrite prompts for a video generation model whose safety filter blocked them.",
  "Remove or soften only what breaks content guidelines (violence, gore, sexual content, real people's likeness, hate).",
  "Keep every other detail: characters, setting, camera, style, and every quoted line of dialogue that is safe.",
  "Answer with the rewritten prompt only, no commentary.",
].join(" ");

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

    const input = (typeof source.input === "string" ? JSON.parse(source.input) : source.input) as OmniJobInput;
    const repairCredits = ctx.priceFor({ ...repairPrice(), customRateMissing: E.customNoRate });
    const videoCredits = priceOf(ctx, { resolution: source.resolution as never, duration: input.seconds }, input.reference_video !== null);
    const need = repairCredits + videoCredits;
    if ((await ctx.account.balance(ctx.partner.id)) < need) {
      throw new ApiError(402, E.repairInsufficient(need), { credits_remaining: await ctx.account.balance(ctx.partner.id) });
    }

    const repair = await ctx.submitJob({
      kind: "repair",
      state: "processing",
      credits: repairCredits,
      description: `Omni prompt repair (${jobId})`,
      insufficientCredits: () => E.repairInsufficient(need),
      input: { source_job_id: jobId },
    });
    const refund = () => ctx.finishJob(repair.jobId, { state: "failed", refund: true, error: E.repairFailed });

    let improved: string;
    try {
      const answer = await ctx.capability("text.generate").generate({
        task: "prompt-repair",
        instructions: INSTRUCTIONS,
        input: source.prompt,
        maxChars: LIMITS.promptChars,
        signal: ctx.request.signal,
      });
      // Upstream text, checked like partner input before it is stored as the new clip's prompt: whatever
      // provider answers, a NUL or an unpaired surrogate never reaches Postgres (lib/upstream-text.ts).
      improved = cleanUpstreamText(answer.text, LIMITS.promptChars).trim();
      if (improved === "") throw new TextGenerationError("empty rewrite");
    } catch (err) {
      await refund();
      ctx.log.warn(`omni repair of ${jobId} failed: ${err instanceof Error ? err.message : String(err)}`);
      throw new ApiError(502, E.repairFailed);
    }

    let video;
    try {
      video = await ctx.submitJob({
        kind: "video",
        state: "processing",
        credits: videoCredits,
        partnerJobId: source.partner_job_id,
        callbackUrl: input.callback_url ?? null,
        input: input as unknown as Record<string, unknown>,
        description: `Omni video (repaired prompt of ${jobId})`,
        insufficientCredits: () => E.repairInsufficient(need),
        within: (trx, [newId]) =>
          insertVideoRecord(trx, newId!, ctx.partner.id, {
            model: source.model as OmniJobInput["model"],
            prompt: improved,
            character_ids: typeof source.character_ids === "string" ? JSON.parse(source.character_ids) : source.character_ids,
            voice_ids: typeof source.voice_ids === "string" ? JSON.parse(source.voice_ids) : source.voice_ids,
            first_frame_url: source.first_frame_url,
            last_frame_url: source.last_frame_url,
            duration: input.seconds,
            aspect_ratio: source.aspect_ratio as never,
            resolution: source.resolution as never,
            reference_video: source.reference_video,
            input,
          }),
      });
    } catch (err) {
      await refund();
      throw err;
    }
    await ctx.finishJob(repair.jobId, { state: "complete", refund: false, output: { source_job_id: jobId, job_id: video.jobId, improved_prompt: improved } });
    return {
      job_id: video.jobId,
      source_job_id: jobId,
      improved_prompt: improved,
      credits_used: repair.creditsUsed + video.creditsUsed,
      credits_remaining: video.creditsRemaining,
    };
  },
});

export const improveOperations = [improvePrompt];

/**
 * The repair's own job runs inside its request (no queue); declared so that a repair whose process died
 * mid-request is failed and refunded by the kernel (core/jobs.ts recoverOrphans) with the text a failed repair
 * stores. (A clip it had submitted already is a queued job of its own and runs on.)
 */
export const repairJob: JobKindDeclaration = {
  states: ["processing", "complete", "failed"],
  initial: "processing",
  transitions: { processing: ["complete", "failed"] },
  terminal: { complete: "success", failed: "failure" },
  failState: "failed",
  failError: E.repairFailed,
};
