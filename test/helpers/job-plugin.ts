// A test-only plugin of one operation, `POST <path>`, that charges and records one job of one kind and answers
// its id: what the tests and benchmarks of the job runtime, the in-flight cap, the webhooks and the GraphQL
// subscriptions each need, written against the public plugin API only. And the state machine of the test
// job kinds that report a step before they end (`queued`, `running`, then `done` or `failed`).
import { z } from "zod";
import type { JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import type { StateMachine } from "../../lib/job-states.ts";

/** `queued`, then `running`, then `done` or `failed` (a step the subscriber sees between submit and end). */
export const QUEUED_RUNNING_DONE: StateMachine = {
  states: ["queued", "running", "done", "failed"],
  initial: "queued",
  transitions: { queued: ["running", "done", "failed"], running: ["done", "failed"] },
  terminal: { done: "success", failed: "failure" },
  failState: "failed",
};

export interface JobPluginOptions<Body> {
  /** The rate-limit row `POST <path>`: this many a minute. */
  limitPerMinute: number;
  /** The operation's path; default `/<kind>`. */
  path?: string;
  /** Counts against the account's in-flight job cap. */
  inflight?: boolean;
  /** The body's schema; default an empty object. */
  body?: z.ZodType<Body>;
  /** The charge and the job's input, from the body; default 1 credit and the input `{}`. */
  submit?: (body: Body) => { credits: number; input?: Record<string, unknown> };
  /** The answer carries `status: "queued"` and the charge (`credits_used`, `credits_remaining`) besides `job_id`. */
  charged?: boolean;
}

/**
 * The plugin `name`, whose `POST` operation submits a job of `kind`, run by `job` (declared by this plugin; a
 * job nothing runs when undefined). A refused charge answers the 402 "Insufficient credits".
 */
export function jobPlugin<Body = Record<string, never>>(
  name: string,
  kind: string,
  job: JobKindDeclaration | undefined,
  options: JobPluginOptions<Body>,
) {
  const { path = `/${kind}`, submit = () => ({ credits: 1, input: {} }) } = options;
  return definePlugin({
    name,
    rateLimits: { [`POST ${path}`]: [{ limit: options.limitPerMinute, windowSeconds: 60 }] },
    ...(job && { jobs: { [kind]: job } }),
    operations: [
      operation({
        method: "POST",
        path,
        status: 202,
        inflight: options.inflight,
        input: options.body ?? z.object({}),
        async handle(ctx) {
          const { credits, input } = submit(ctx.input as Body);
          const insufficientCredits = () => "Insufficient credits";
          const submitted = await ctx.submitJob({ kind, credits, state: "queued", input, insufficientCredits });
          if (!options.charged) return { job_id: submitted.jobId };
          const { creditsUsed, creditsRemaining } = submitted;
          return {
            job_id: submitted.jobId,
            status: "queued",
            credits_used: creditsUsed,
            credits_remaining: creditsRemaining,
          };
        },
      }),
    ],
  });
}
