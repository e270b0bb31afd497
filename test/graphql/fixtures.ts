// Test-only plugins for the GraphQL transport, written against the public plugin API only:
// - `probe`: operations whose declarations exercise the schema derivation (typed output, query args,
//   a handler that throws, handlers that answer with their own Response);
// - `ticker`: a job kind whose runner waits at a gate the test opens, so a subscriber is attached before
//   the job moves, then reports progress and ends.
import { z } from "zod";
import { JobFailure, type JobKindDeclaration } from "../../core/jobs.ts";
import { definePlugin, operation } from "../../core/plugin.ts";
import { jobPlugin, QUEUED_RUNNING_DONE } from "../helpers/job-plugin.ts";

const perMinute = (limit: number) => [{ limit, windowSeconds: 60 }];

export const PROBE_OUTPUT = z.object({
  id: z.string(),
  kind: z.enum(["small", "large"]),
  shape: z.enum(["1:1", "16:9"]),
  count: z.number().int(),
  ratio: z.number().nullable(),
  note: z.string().optional(),
  tags: z.array(z.string()),
  nested: z.object({ label: z.string(), flag: z.boolean().optional() }),
  items: z.array(z.object({ n: z.number().int() })),
  extra: z.record(z.string(), z.unknown()),
});

export const probe = definePlugin({
  name: "probe",
  rateLimits: {
    "GET /probe/<id>": perMinute(1000),
    "GET /probe-echo": perMinute(1000),
    "POST /probe-fail": perMinute(1000),
    "GET /probe-file": perMinute(1000),
    "GET /probe-json-response": perMinute(1000),
  },
  operations: [
    operation({
      method: "GET",
      path: "/probe/<id>",
      summary: "A typed body",
      output: PROBE_OUTPUT,
      async handle(ctx) {
        return {
          id: ctx.params.id,
          kind: "small",
          shape: "16:9",
          count: 3,
          ratio: null,
          tags: ["a", "b"],
          nested: { label: "hello" },
          items: [{ n: 1 }, { n: 2 }],
          extra: { anything: { goes: [1, "two"] } },
        };
      },
    }),
    operation({
      method: "GET",
      path: "/probe-echo",
      input: z.object({
        word: z.string({ error: "word must be text" }).min(2, { error: "word is too short" }),
        times: z.string().optional(),
      }),
      async handle(ctx) {
        return { echoed: ctx.input.word.repeat(Number(ctx.input.times ?? 1)), raw_times: ctx.input.times ?? null };
      },
    }),
    operation({
      method: "POST",
      path: "/probe-fail",
      async handle() {
        throw new Error("secret upstream detail from provider-x");
      },
    }),
    operation({
      method: "GET",
      path: "/probe-file",
      async handle() {
        return new Response(new Uint8Array([137, 80, 78, 71]), { headers: { "content-type": "image/png" } });
      },
    }),
    operation({
      method: "GET",
      path: "/probe-json-response",
      async handle() {
        return Response.json({ hello: "world" });
      },
    }),
  ],
});

/** Gates by job id: a job's runner waits at its gate until the test opens it, or `timeoutMs` pass when given. */
export function jobGates(timeoutMs?: number) {
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  function gate(jobId: string) {
    let g = gates.get(jobId);
    if (!g) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      const timer = timeoutMs === undefined ? undefined : setTimeout(open, timeoutMs);
      g = {
        promise,
        open: () => {
          clearTimeout(timer);
          open();
        },
      };
      gates.set(jobId, g);
    }
    return g;
  }
  return {
    wait: (jobId: string) => gate(jobId).promise,
    open: (jobId: string) => gate(jobId).open(),
    forget: (jobId: string) => gates.delete(jobId),
    openAll() {
      for (const g of gates.values()) g.open();
      gates.clear();
    },
  };
}

// The ticker's gates open by themselves after 20 s, so a failed test cannot hold a worker, and the kernel's
// shutdown, forever.
const tickGates = jobGates(20_000);
export const openGate = tickGates.open;

const tick: JobKindDeclaration<{ fail?: boolean }> = {
  ...QUEUED_RUNNING_DONE,
  failError: "The tick failed.",
  retries: 0,
  async run(ctx) {
    await tickGates.wait(ctx.jobId);
    tickGates.forget(ctx.jobId);
    await ctx.moveTo("running", "started");
    await ctx.progress(50, "halfway");
    if (ctx.input.fail) throw new JobFailure("The tick failed.");
    return { state: "done" };
  },
};

export const ticker = jobPlugin("ticker", "tick", tick, {
  limitPerMinute: 1000,
  body: z.object({ credits: z.number().int().min(0).optional(), fail: z.boolean().optional() }),
  submit: (body) => ({ credits: body.credits ?? 1, input: { fail: body.fail === true } }),
  charged: true,
});
