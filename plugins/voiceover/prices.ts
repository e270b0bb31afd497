// What a voiceover costs (spec part 1, `costs.voiceover` of GET /credits; part 3, "Voiceover"): characters
// per credit by model, on the standard basis; the kernel applies the account's tier.
import { ApiError, DEFAULT_CUSTOM_RATE_MISSING, type OperationContext } from "mediagate/plugin";
import { DEFAULT_MODEL, MAX_TEXT_LENGTH, MODEL_IDS, MODELS, type ModelId } from "./models.ts";

export const MIN_CREDITS = 1;

/** The `costs` fragment of GET /credits (part 1: `voiceover`). */
export const VOICEOVER_COSTS = {
  voiceover: {
    models: Object.fromEntries(
      MODEL_IDS.map((id) => [id, { chars_per_credit: MODELS[id].charsPerCredit, label: MODELS[id].label }]),
    ),
    default_model: DEFAULT_MODEL,
    min_credits: MIN_CREDITS,
    max_text_length: MAX_TEXT_LENGTH,
  },
};

/** Standard-basis units of a text: `max(1, ceil(chars / chars_per_credit))`. */
export const standardCredits = (chars: number, charsPerCredit: number) =>
  Math.max(MIN_CREDITS, Math.ceil(chars / charsPerCredit));

/** Credits this account pays for `chars` on `model`. */
export function priceOf(ctx: Pick<OperationContext, "partner" | "priceFor">, model: ModelId, chars: number): number {
  const key = ["voiceover", "models", model, "chars_per_credit"] as const;
  if (ctx.partner.pricingTier === "custom") {
    // A negotiated rate here is characters per credit, not credits per unit, so the units follow from it.
    const rates = (ctx.partner.customRates as any)?.voiceover?.models?.[model]?.chars_per_credit;
    if (typeof rates !== "number" || !(rates > 0)) throw new ApiError(400, DEFAULT_CUSTOM_RATE_MISSING);
    return standardCredits(chars, rates);
  }
  return ctx.priceFor({ lines: [{ key, rate: 1, units: standardCredits(chars, MODELS[model].charsPerCredit) }] });
}
