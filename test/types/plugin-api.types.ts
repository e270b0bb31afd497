// Type tests of the public plugin API (`mediagate/plugin`, core/plugin-api.ts), compiled by `tsc --noEmit -p .`
// (tsconfig.json includes test/) and never run. Each `@ts-expect-error` line is a mistake a plugin author can
// make that the types must refuse: should the API stop refusing it, tsc reports the directive as unused and
// the typecheck fails. The lines without one must keep compiling. test/types/types.test.ts keeps the folder
// honest (every directive says what it catches).

import {
  ApiError,
  type CapabilityHost,
  defineConfig,
  definePlugin,
  envVar,
  type JobKindDeclaration,
  type JobOutcome,
  type MediaEngine,
  megabytes,
  type OperationContext,
  operation,
  type Price,
  QUEUED_PROCESSING_COMPLETE,
} from "mediagate/plugin";
import { z } from "zod";

const input = z.object({ text: z.string(), count: z.number().int().optional() });

// An operation: the input type flows from its schema into `ctx.input`.
export const echo = operation({
  method: "POST",
  path: "/echo",
  input,
  async handle(ctx) {
    const text: string = ctx.input.text;
    const count: number | undefined = ctx.input.count;
    // @ts-expect-error a field the input schema does not declare
    void ctx.input.prompt;
    // @ts-expect-error `count` is optional: not a number until checked
    const sure: number = ctx.input.count;
    return { text, count: count ?? sure };
  },
});

operation({
  // @ts-expect-error an HTTP method the kernel does not route (HttpMethod: GET, POST, PATCH, DELETE)
  method: "PUT",
  path: "/echo",
  async handle() {
    return {};
  },
});

operation({
  method: "GET",
  path: "/no-body",
  async handle(ctx) {
    // @ts-expect-error an operation without an input schema has no input object
    void ctx.input.text;
    // @ts-expect-error a success status the spec never answers with
    ctx.setStatus(204);
    ctx.setStatus(201);
    return new Response("plain");
  },
});

operation({
  method: "GET",
  path: "/text",
  // @ts-expect-error a handler answers an object (the JSON body) or a Response, never bare text
  async handle() {
    return "done";
  },
});

// Capabilities: a name is one of CapabilityMap's, and its interface comes with it.
export async function capabilities(ctx: OperationContext<{ url: string }>) {
  const media: MediaEngine = ctx.capability("media");
  // @ts-expect-error a capability no contract declares in CapabilityMap
  ctx.capability("image.paint");
  // @ts-expect-error the outbound guard is no media engine
  const wrong: MediaEngine = ctx.capability("outbound");
  return { media, wrong };
}

definePlugin({
  name: "typed",
  requires: ["media", "outbound"],
  provides: { media: (host: CapabilityHost) => host.capability("media") },
});

definePlugin({
  name: "typed",
  // @ts-expect-error requiring a capability nobody can provide
  requires: ["telepathy"],
});

definePlugin({
  name: "typed",
  // @ts-expect-error a provider of `media` must answer a MediaEngine
  provides: { media: () => ({ probe: 1 }) },
});

// Prices: lines on the standard basis, each a key into `costs` and a rate.
export const price: Price = { lines: [{ key: ["text_stats", "2K"], rate: 2, units: 1.5 }], addOn: 1 };
// @ts-expect-error a price line's key is a path (an array), not one string
export const flatKey: Price = { lines: [{ key: "text_stats", rate: 2 }] };
// @ts-expect-error a price is lines, not a number of credits
export const bare: Price = 5;
export function charge(ctx: OperationContext<unknown>): number {
  // @ts-expect-error priceFor takes a Price, the kernel applies the tier
  ctx.priceFor(4);
  return ctx.priceFor(price);
}

// Job kinds: states, transitions, and terminal states that are a success or a failure.
export const kind: JobKindDeclaration<{ text: string }> = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: "Processing failed",
  async run(ctx): Promise<JobOutcome> {
    const text: string = ctx.input.text;
    await ctx.moveTo("processing");
    // @ts-expect-error a state is named, not numbered
    await ctx.moveTo(2);
    return { state: "completed", output: { length: text.length } };
  },
};

export const badTerminal: JobKindDeclaration = {
  states: ["queued", "done"],
  initial: "queued",
  transitions: { queued: ["done"] },
  // @ts-expect-error a terminal state is a "success" or a "failure", nothing else
  terminal: { done: "ok" },
  failState: "done",
  failError: "failed",
};

export const noState: JobKindDeclaration = {
  ...QUEUED_PROCESSING_COMPLETE,
  failError: "failed",
  // @ts-expect-error an outcome names the state the job ends in
  async run() {
    return { output: {} };
  },
};

// Configuration: declared once, read typed; no plugin reads process.env.
const config = defineConfig({
  retries: envVar("TYPED_RETRIES", z.coerce.number().int().default(3), "Attempts, default 3."),
  model: envVar("TYPED_MODEL", z.string().default("small"), "The model, default small."),
});
export function settings(ctx: OperationContext<unknown>) {
  const { retries, model } = config.of(ctx);
  const attempts: number = retries;
  const name: string = model;
  // @ts-expect-error TYPED_RETRIES is a number once read
  const asText: string = config.of(ctx).retries;
  // @ts-expect-error a variable the declaration does not name
  void config.of(ctx).timeout;
  return { attempts, name, asText };
}
// @ts-expect-error a variable's schema is a Standard Schema value, not a default
envVar("TYPED_LIMIT", 10, "A limit.");

// Errors and sizes in the spec's words.
export function refuse(bytes: number): never {
  if (bytes > megabytes(50)) throw new ApiError(413, "File too large", { max_mb: 50 });
  // @ts-expect-error the status comes first, as a number
  throw new ApiError("400", "Bad request");
}
