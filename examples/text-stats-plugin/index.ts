// A third-party plugin, built only on the public plugin API (`mediagate/plugin`): one charged, synchronous
// operation with its own price, rate limit, feature switch and typed result. It is not registered in this
// server's plugins/index.ts; register it by adding it to the plugin list you give createKernel, and test it
// with the test kit (`mediagate/testing`) as text-stats.test.ts beside this file does, without a server.
import { z } from "zod";
import { definePlugin, operation, partnerJobIdField, type Price } from "mediagate/plugin";

// One place for the plugin's numbers and texts.
const PRICE_PER_TEXT = 2; // standard basis; an api_plus10 account pays ceil(2 * 1.1) = 3
const MAX_CHARS = 10_000;
export const ERRORS = {
  text: "Please provide a text",
  tooLong: `text must be at most ${MAX_CHARS} characters`,
} as const;

// The body. Zod 4 is a Standard Schema: the kernel validates with it (the first issue's message is the 400
// text) and documents it in OpenAPI and GraphQL from the same value.
const input = z.object({
  text: z.string({ error: ERRORS.text }).trim().min(1, { error: ERRORS.text }).max(MAX_CHARS, { error: ERRORS.tooLong }),
  partner_job_id: partnerJobIdField(),
});

// The success body (without `request_id`): not checked at run time, it types the GraphQL result (an object
// type, so a client selects fields) and documents the response.
const output = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  characters: z.number().int(),
  words: z.number().int(),
  sentences: z.number().int(),
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
});

// Prices are on the standard basis; the kernel applies the account's tier (no plugin does tier math).
const price = (): Price => ({ lines: [{ key: ["text_stats"], rate: PRICE_PER_TEXT }] });

/** What the plugin computes: code points, words and sentences of a text. */
export function textStats(text: string) {
  return {
    characters: [...text].length,
    words: text.split(/\s+/u).filter(Boolean).length,
    sentences: text.split(/[.!?]+/u).filter((s) => s.trim()).length,
  };
}

export default definePlugin({
  name: "text-stats",
  costs: { text_stats: PRICE_PER_TEXT },
  features: ["text_stats"],
  rateLimits: { "POST /text-stats": [{ limit: 30, windowSeconds: 60 }] },
  operations: [
    operation({
      method: "POST",
      path: "/text-stats",
      feature: "text_stats",
      summary: "Count the characters, words and sentences of a text",
      input,
      output,
      async handle(ctx) {
        const stats = textStats(ctx.input.text);
        // A charge, its ledger row and the job row in one transaction; 402 when the balance is short.
        const job = await ctx.submitJob({ kind: "text-stats", credits: ctx.priceFor(price()), state: "complete", terminal: true, partnerJobId: ctx.input.partner_job_id, input: stats });
        return { job_id: job.jobId, partner_job_id: ctx.input.partner_job_id, ...stats, credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining } satisfies z.infer<typeof output>;
      },
    }),
  ],
});
