// The prompt-repair job (operations.ts tells the whole story: money, crash, the endpoint's wait): it rewrites
// a failed clip's prompt through `text.generate` and hands the new clip on in the transaction that ends it.
import {
  allocateServiceId,
  cleanUpstreamText,
  JobFailure,
  type JobKindDeclaration,
  oneStepStates,
  TextGenerationError,
} from "mediagate/plugin";
import { OMNI_ERRORS } from "../errors.ts";
import { LIMITS } from "../prices.ts";
import { omniVideos } from "../records.ts";
import { insertVideoRecord } from "../videos/submit.ts";
import type { OmniJobInput } from "../videos/types.ts";

/** What the text model is told. The sandbox (plugins/text) answers the task by name, deterministically. */
const INSTRUCTIONS = [
  "You rewrite prompts for a video generation model whose safety filter blocked them.",
  "Remove or soften only what breaks content guidelines (violence, gore, sexual content, real people's likeness, hate).",
  "Keep every other detail: characters, setting, camera, style, and every quoted line of dialogue that is safe.",
  "Answer with the rewritten prompt only, no commentary.",
].join(" ");

/** The repair job's input and, once it handed the clip on, its output. */
export interface RepairInput {
  source_job_id: string;
}
export interface RepairOutput {
  source_job_id: string;
  job_id: string;
  improved_prompt: string;
}

export const parsed = <T>(v: unknown): T => (typeof v === "string" ? (JSON.parse(v) as T) : (v as T));

/**
 * The repair job: rewrites the source's prompt, then ends `complete` handing the new clip on (created, with
 * its record, and queued in the transaction that ends the repair, carrying the repair's charge). Any failure
 * of the text model is the repair's failure (no retry: the partner waits for the answer); a crash or a
 * database error is retried by the queue, from the top (nothing is written before the ending).
 */
export const repairJob: JobKindDeclaration<RepairInput> = {
  ...oneStepStates("processing", "complete", "failed"),
  failError: OMNI_ERRORS.repairFailed,
  // An attempt is one text call (60 s by default) and two statements.
  timeoutSeconds: 300,
  async run(ctx) {
    const sourceId = ctx.input.source_job_id;
    const source = await omniVideos.find(ctx.db, ctx.partnerId, sourceId);
    if (!source) throw new JobFailure(OMNI_ERRORS.repairFailed);
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
      ctx.log.warn(
        `omni repair ${ctx.jobId} of ${sourceId} failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      throw new JobFailure(OMNI_ERRORS.repairFailed);
    }

    const input = parsed<OmniJobInput>(source.input);
    const clipId = await allocateServiceId(ctx.db);
    return {
      state: "complete",
      output: { source_job_id: sourceId, job_id: clipId, improved_prompt: improved } satisfies RepairOutput,
      handOff: {
        kind: "video",
        jobId: clipId,
        input: { ...input },
        partnerJobId: source.partner_job_id,
        callbackUrl: input.callback_url ?? null,
        insertRecords: (trx, id) =>
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
