// A third-party plugin built only on the public plugin API (core/plugin.ts, core/pricing.ts,
// core/validation.ts): one charged, synchronous operation with its own price, rate limit and feature switch.
// Register it by adding it to the plugin list given to createKernel (see plugins/index.ts), and test it
// with createTestKernel (see examples/text-stats-plugin/text-stats.test.ts).
import { z } from "zod";
import { definePlugin, operation, partnerJobIdField, type Price } from "mediagate/plugin";

// One place for the plugin's numbers and texts.
const PRICE_PER_TEXT = 2; // standard basis; an api_plus10 account pays ceil(2 * 1.1) = 3
const MAX_CHARS = 10_000;
const ERRORS = {
  text: "Please provide a text",
  tooLong: `text must be at most ${MAX_CHARS} characters`,
};

const input = z.object({
  text: z.string({ error: ERRORS.text }).trim().min(1, { error: ERRORS.text }).max(MAX_CHARS, { error: ERRORS.tooLong }),
  partner_job_id: partnerJobIdField(),
});

const price = (): Price => ({ lines: [{ key: ["text_stats"], rate: PRICE_PER_TEXT }] });

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
      input,
      async handle(ctx) {
        const credits = ctx.priceFor(price());
        const words = ctx.input.text.split(/\s+/u).filter(Boolean);
        const stats = { characters: [...ctx.input.text].length, words: words.length, sentences: ctx.input.text.split(/[.!?]+/u).filter((s) => s.trim()).length };
        const job = await ctx.submitJob({ kind: "text-stats", credits, state: "complete", terminal: true, partnerJobId: ctx.input.partner_job_id, input: stats });
        return { job_id: job.jobId, partner_job_id: ctx.input.partner_job_id, ...stats, credits_used: job.creditsUsed, credits_remaining: job.creditsRemaining };
      },
    }),
  ],
});
