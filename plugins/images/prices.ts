// What each image costs (spec part 1, "Image generation" and "Credits and pricing tiers"): standard-basis
// credits per image by model and quality, the `costs.image_models` object of GET /credits; the kernel applies
// the account's tier.
import type { Price } from "mediagate/plugin";
import type { ModelId, Quality } from "./models.ts";

/** Standard-basis credits per image, by model and the qualities it renders. */
export const IMAGE_PRICES = {
  "image-a-pro": { "2K": 15, "4K": 22 },
  "image-b-2": { "1K": 19, "2K": 24, "4K": 29 },
  "image-b-2-5-flare": { "1K": 22, "2K": 28, "4K": 34 },
  "image-b-2-5-sunburst": { "1K": 22, "2K": 28, "4K": 34 },
} as const satisfies Record<ModelId, Partial<Record<Quality, number>>>;

/** The `costs` fragment of GET /credits: the spec's legacy per-image keys and the per-model table. */
export const IMAGE_COSTS = {
  image_per_image: IMAGE_PRICES["image-a-pro"]["2K"],
  image_per_image_2k: IMAGE_PRICES["image-a-pro"]["2K"],
  image_per_image_4k: IMAGE_PRICES["image-a-pro"]["4K"],
  image_models: Object.fromEntries(Object.entries(IMAGE_PRICES).map(([id, price]) => [id, { ...price }])),
};

/** The charge of `quantity` images (the input check has made sure the model renders `quality`). */
export const priceOf = (model: ModelId, quality: Quality, quantity: number): Price => ({
  lines: [
    {
      key: ["image_models", model, quality],
      rate: (IMAGE_PRICES[model] as Partial<Record<Quality, number>>)[quality]!,
      units: quantity,
    },
  ],
});
