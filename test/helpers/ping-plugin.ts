// A plugin of one job kind for tests of the job runtime itself: `POST /ping` charges 1 credit and submits a
// `ping` job, whose attempt calls `onRun` and ends `done`.
import { z } from "zod";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, type OperationContext, operation } from "../../core/plugin.ts";
import { queuedThen } from "../../lib/job-states.ts";

/** An operation's handler that charges 1 credit for a queued job of `kind` (no input) and answers its id. */
export function oneCreditJob(kind: string) {
  return async (ctx: OperationContext<unknown>) => {
    const job = await ctx.submitJob({
      kind,
      credits: 1,
      state: "queued",
      input: {},
      insufficientCredits: () => "Insufficient credits",
    });
    return { job_id: job.jobId };
  };
}

export function pingPlugin(name: string, options: { limitPerMinute: number; onRun?: (jobId: string) => void }) {
  const ping: JobKindDeclaration<Record<string, never>> = {
    ...queuedThen("done", "failed"),
    failError: "failed",
    async run(ctx) {
      options.onRun?.(ctx.jobId);
      return { state: "done" };
    },
  };
  return definePlugin({
    name,
    rateLimits: { "POST /ping": [{ limit: options.limitPerMinute, windowSeconds: 60 }] },
    jobs: { ping },
    operations: [
      operation({
        method: "POST",
        path: "/ping",
        status: 202,
        input: z.object({}),
        handle: oneCreditJob("ping"),
      }),
    ],
  });
}
