// A plugin of one job kind for tests of the job runtime itself: `POST /ping` charges 1 credit and submits a
// `ping` job, whose attempt calls `onRun` and ends `done`.
import { z } from "zod";
import { queuedThen } from "../../core/job-states.ts";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";

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
        async handle(ctx) {
          const job = await ctx.submitJob({
            kind: "ping",
            credits: 1,
            state: "queued",
            input: {},
            insufficientCredits: () => "Insufficient credits",
          });
          return { job_id: job.jobId };
        },
      }),
    ],
  });
}
