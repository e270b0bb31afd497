// Account endpoints (spec part 1 "Account"): balance and cost table, the account record, usage, ledger.
// All free; every other plugin's prices reach GET /credits through the registry's `costs`.

import { formatTimestamp, operation, PAGE_BOUNDS, pageQuery, parseSince } from "mediagate/plugin";
import { z } from "zod";

// The spec fixes `credit_cost_per_analysis` at the standard-basis analysis price (50). The analysis plugin,
// when registered, declares that price in `costs.analysis`; until then this is the spec's number.
const SPEC_ANALYSIS_COST = 50;

// The success bodies (spec part 1 "Account"), declared so OpenAPI and GraphQL type them. `costs` stays an open
// object: its keys are the registered plugins' price tables.
const tier = z.enum(["api_plus10", "standard", "custom"]);
const timestamp = z.string().meta({ description: "UTC, `YYYY-MM-DD HH:MM:SS`" });
const creditsOutput = z.object({
  credits_remaining: z.number().int(),
  pricing_tier: tier,
  credit_cost_per_analysis: z.number().int(),
  costs: z
    .record(z.string(), z.unknown())
    .meta({ description: "Standard-basis prices of every registered product area" }),
});
const meOutput = z.object({
  name: z.string(),
  api_key_prefix: z.string(),
  pricing_tier: tier,
  credits_remaining: z.number().int(),
  is_active: z.boolean(),
  created_at: timestamp,
  last_active: timestamp.nullable(),
});
const usageOutput = z.object({
  since: timestamp.nullable(),
  credits_remaining: z.number().int(),
  total_calls: z.number().int(),
  total_credits_used: z.number().int(),
  per_endpoint: z.array(z.object({ endpoint: z.string(), calls: z.number().int(), credits_used: z.number().int() })),
});
const transactionsOutput = z.object({
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
  transactions: z.array(
    z.object({
      amount: z.number().int(),
      type: z.enum(["usage", "refund", "purchase", "adjustment"]),
      description: z.string().nullable(),
      created_at: timestamp,
    }),
  ),
});

export const credits = operation({
  method: "GET",
  path: "/credits",
  summary: "Balance, pricing tier and the standard-basis cost table",
  output: creditsOutput,
  async handle(ctx) {
    const analysis = ctx.costs.analysis;
    return {
      credits_remaining: await ctx.account.balance(ctx.partner.id),
      pricing_tier: ctx.partner.pricingTier,
      credit_cost_per_analysis: typeof analysis === "number" ? analysis : SPEC_ANALYSIS_COST,
      costs: ctx.costs,
    };
  },
});

export const me = operation({
  method: "GET",
  path: "/me",
  summary: "The account record",
  output: meOutput,
  async handle(ctx) {
    const p = ctx.partner;
    return {
      name: p.name,
      api_key_prefix: p.apiKeyPrefix,
      pricing_tier: p.pricingTier,
      credits_remaining: await ctx.account.balance(p.id),
      is_active: p.isActive,
      created_at: formatTimestamp(p.createdAt),
      last_active: formatTimestamp(ctx.account.lastActive(p)),
    };
  },
});

export const usage = operation({
  method: "GET",
  path: "/usage",
  summary: "Calls and credits per endpoint since a moment (ISO 8601), all time by default",
  output: usageOutput,
  input: z.object({
    since: z
      .unknown()
      .optional()
      .meta({ type: "string", format: "date-time", description: "ISO 8601 date or timestamp" })
      .transform((v) => parseSince(v)),
  }),
  async handle(ctx) {
    const since = ctx.input.since;
    const [summary, balance] = await Promise.all([
      ctx.account.usage(ctx.partner.id, since),
      ctx.account.balance(ctx.partner.id),
    ]);
    return {
      since: since ? formatTimestamp(since) : null,
      credits_remaining: balance,
      ...summary,
    };
  },
});

export const transactions = operation({
  method: "GET",
  path: "/transactions",
  summary: "Credit ledger, newest first",
  output: transactionsOutput,
  input: pageQuery(PAGE_BOUNDS.transactions),
  async handle(ctx) {
    const { limit, offset } = ctx.input;
    const page = await ctx.account.transactions(ctx.partner.id, { limit, offset });
    return {
      total: page.total,
      limit,
      offset,
      transactions: page.entries.map((e) => ({
        amount: e.amount,
        type: e.type,
        description: e.description,
        created_at: formatTimestamp(e.created_at),
      })),
    };
  },
});
