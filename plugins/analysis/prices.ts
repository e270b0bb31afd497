// The price of ad analysis (spec part 1 "Credits and pricing tiers"); the kernel applies the tier.

/** Standard-basis credits (spec part 1 "Credits and pricing tiers", `costs` of GET /credits). */
export const COSTS = { analysis: 50, text_analysis: 5 } as const;

/** One analysis, standard basis. */
export const analysisPrice = { lines: [{ key: ["analysis"], rate: COSTS.analysis, units: 1 }] };
