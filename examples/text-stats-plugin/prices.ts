// What the plugin charges, on the standard basis: the kernel applies the account's tier (no plugin does tier
// math), so an api_plus10 account pays ceil(2 * 1.1) = 3.
import type { Price } from "mediagate/plugin";

export const PRICE_PER_TEXT = 2;

/** Its part of the `costs` object of GET /credits. */
export const TEXT_STATS_COSTS = { text_stats: PRICE_PER_TEXT };

export const priceOfText = (): Price => ({ lines: [{ key: ["text_stats"], rate: PRICE_PER_TEXT }] });
