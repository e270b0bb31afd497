// The handler of POST /text-stats: count, charge once, answer. `ctx.input` is typed from the input schema.
import { operation } from "mediagate/plugin";
import { TextStatsInput, TextStatsOutput } from "./input.ts";
import { priceOfText } from "./prices.ts";

export const FEATURE = "text_stats";

/** What the plugin computes: code points, words and sentences of a text. */
export function textStats(text: string) {
  return {
    characters: [...text].length,
    words: text.split(/\s+/u).filter(Boolean).length,
    sentences: text.split(/[.!?]+/u).filter((s) => s.trim()).length,
  };
}

export const textStatsOperation = operation({
  method: "POST",
  path: "/text-stats",
  feature: FEATURE,
  summary: "Count the characters, words and sentences of a text",
  input: TextStatsInput,
  output: TextStatsOutput,
  async handle(ctx) {
    const stats = textStats(ctx.input.text);
    const partnerJobId = ctx.input.partner_job_id;
    // A charge, its ledger row and the job row in one transaction; 402 when the balance is short.
    const job = await ctx.submitJob({
      kind: "text-stats",
      credits: ctx.priceFor(priceOfText()),
      state: "complete",
      terminal: true,
      partnerJobId,
      input: stats,
    });
    return {
      job_id: job.jobId,
      partner_job_id: partnerJobId,
      ...stats,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});
