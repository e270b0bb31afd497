// Account endpoints (spec part 1 "Account"): balance and cost table, the account record, usage, ledger.
// All free; every other plugin's prices reach GET /credits through the registry's `costs`.
import { z } from "zod";
import { definePlugin, formatTimestamp, operation, PAGE_BOUNDS, pageQuery, parseSince } from "mediagate/plugin";

// The spec fixes `credit_cost_per_analysis` at the standard-basis analysis price (50). The analysis plugin,
// when registered, declares that price in `costs.analysis`; until then this is the spec's number.
const SPEC_ANALYSIS_COST = 50;

const credits = operation({
  method: "GET",
  path: "/credits",
  summary: "Balance, pricing tier and the standard-basis cost table",
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

const me = operation({
  method: "GET",
  path: "/me",
  summary: "The account record",
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

const usage = operation({
  method: "GET",
  path: "/usage",
  summary: "Calls and credits per endpoint since a moment (ISO 8601), all time by default",
  input: z.object({ since: z.unknown().optional().meta({ type: "string", format: "date-time", description: "ISO 8601 date or timestamp" }).transform((v) => parseSince(v)) }),
  async handle(ctx) {
    const since = ctx.input.since;
    const [summary, balance] = await Promise.all([ctx.account.usage(ctx.partner.id, since), ctx.account.balance(ctx.partner.id)]);
    return {
      since: since ? formatTimestamp(since) : null,
      credits_remaining: balance,
      ...summary,
    };
  },
});

const transactions = operation({
  method: "GET",
  path: "/transactions",
  summary: "Credit ledger, newest first",
  input: pageQuery(PAGE_BOUNDS.transactions),
  async handle(ctx) {
    const { limit, offset } = ctx.input;
    const page = await ctx.account.transactions(ctx.partner.id, { limit, offset });
    return {
      total: page.total,
      limit,
      offset,
      transactions: page.entries.map((e) => ({ amount: e.amount, type: e.type, description: e.description, created_at: formatTimestamp(e.created_at) })),
    };
  },
});

export default definePlugin({
  name: "account",
  operations: [credits, me, usage, transactions],
});
