// Prices and tier math (invariant 1). Plugins state prices on the standard basis as lines of
// "rate x units" keyed like the `costs` object of GET /credits; only this module applies a tier, and it
// does so with integers: api_plus10 is ceil(standard * 11 / 10), rounded once per job.
import { ApiError } from "../lib/api-error.ts";
import type { PricingTier } from "../storage/tables.ts";

export interface PriceLine {
  /** Path into the `costs` object (and into a custom account's negotiated rates), e.g. ["image_models", "image-b-2", "2K"]. */
  key: readonly (string | number)[];
  /** Standard-basis credits per unit. */
  rate: number;
  /** Units billed (images, seconds, ...); default 1. At most two decimals (measured seconds). */
  units?: number;
}

export interface Price {
  lines: readonly PriceLine[];
  /** A flat add-on applied after the tier markup, the same on every tier (a surcharge). */
  addOn?: number;
  /**
   * Where a custom account's negotiated all-in rate for this price sits (e.g. a clip with a reference video):
   * an account with a rate there pays exactly that, instead of its line rates plus `addOn`. Other tiers and
   * custom accounts without it are unaffected.
   */
  allInKey?: readonly (string | number)[];
  /** The 400 text when a custom account has no negotiated rate for one of the lines. */
  customRateMissing?: string;
}

export const DEFAULT_CUSTOM_RATE_MISSING =
  "This option is not available on your plan - contact us for a negotiated rate.";

const ceilDiv = (a: number, b: number) => Math.floor((a + b - 1) / b);

// Rates are whole credits on the standard basis and may carry cents on negotiated plans, and units may be
// measured seconds with two decimals; summing in ten-thousandths of a credit keeps the arithmetic exact, so
// a price is rounded up once, after the tier markup (spec: "rounded up once").
const EXACT = 10_000;
function exactTotal(lines: readonly PriceLine[], rateOf: (line: PriceLine) => number): number {
  let total = 0;
  for (const line of lines) total += Math.round(rateOf(line) * 100) * Math.round((line.units ?? 1) * 100);
  return total;
}

export function standardBasis(price: Price): number {
  return ceilDiv(
    exactTotal(price.lines, (l) => l.rate),
    EXACT,
  );
}

function lookup(rates: unknown, key: readonly (string | number)[]): number | undefined {
  let node = rates;
  for (const part of key) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[String(part)];
  }
  return typeof node === "number" && Number.isFinite(node) && node >= 0 ? node : undefined;
}

/** Credits to charge an account of `tier` for `price`. A custom account without a rate gets a 400, before any charge. */
export function chargeFor(price: Price, tier: PricingTier, customRates: Record<string, unknown> = {}): number {
  const addOn = price.addOn ?? 0;
  switch (tier) {
    case "standard":
      return standardBasis(price) + addOn;
    case "api_plus10":
      return ceilDiv(exactTotal(price.lines, (l) => l.rate) * 11, EXACT * 10) + addOn;
    case "custom": {
      const allIn = price.allInKey ? lookup(customRates, price.allInKey) : undefined;
      if (allIn !== undefined) return ceilDiv(Math.round(allIn * 100) * 100, EXACT);
      for (const line of price.lines) {
        if (lookup(customRates, line.key) === undefined) {
          throw new ApiError(400, price.customRateMissing ?? DEFAULT_CUSTOM_RATE_MISSING);
        }
      }
      return (
        ceilDiv(
          exactTotal(price.lines, (l) => lookup(customRates, l.key)!),
          EXACT,
        ) + addOn
      );
    }
  }
}

/** Deep-merges plugins' `costs` fragments; two plugins claiming the same leaf is a boot error. */
export function mergeCosts(
  fragments: Array<{ plugin: string; costs: Record<string, unknown> }>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const owner = new Map<string, string>();
  const walk = (target: Record<string, unknown>, source: Record<string, unknown>, path: string, plugin: string) => {
    for (const [k, v] of Object.entries(source)) {
      const p = path ? `${path}.${k}` : k;
      if (v && typeof v === "object" && !Array.isArray(v)) {
        const existing = target[k];
        if (existing !== undefined && (typeof existing !== "object" || Array.isArray(existing))) {
          throw new Error(`costs.${p} is declared by plugins "${owner.get(p)}" and "${plugin}"`);
        }
        target[k] ??= {};
        owner.set(p, owner.get(p) ?? plugin);
        walk(target[k] as Record<string, unknown>, v as Record<string, unknown>, p, plugin);
      } else {
        if (k in target) throw new Error(`costs.${p} is declared by plugins "${owner.get(p)}" and "${plugin}"`);
        target[k] = v;
        owner.set(p, plugin);
      }
    }
  };
  for (const f of fragments) walk(out, f.costs, "", f.plugin);
  return out;
}
