// The Script Runner's prices (spec part 3 "Script Runner run", "Script Runner"): the video models with their
// fixed cost and default clip, the image models with their frame cost, and how a run's charge is split.
// Costs are standard basis; the kernel's tier math applies the tier to the run total, once.

export interface RunnerVideoModel {
  /** Standard-basis cost of one clip at the model's default duration and quality (720p, no sound). */
  cost: number;
  seconds: number;
}

export const VIDEO_MODELS = {
  "gamma-3.1-fast": { cost: 41, seconds: 8 },
  "gamma-3.1-quality": { cost: 150, seconds: 8 },
  "alpha-v3-text-to-video": { cost: 100, seconds: 10 },
  "beta-2-direct": { cost: 145, seconds: 5 },
  "beta-2-5": { cost: 225, seconds: 5 },
} as const satisfies Record<string, RunnerVideoModel>;
export type RunnerModel = keyof typeof VIDEO_MODELS;
export const MODEL_IDS = Object.keys(VIDEO_MODELS) as RunnerModel[];
export const DEFAULT_MODEL: RunnerModel = "gamma-3.1-fast";

/**
 * Frame cost and the `image.generate` route that draws it (the route names of the image capability's
 * providers: the sandbox's, or a deployment's adapter registered under the same names).
 */
export const IMAGE_MODELS = {
  "image-a-pro": { frame: 14, route: "primary" },
  "image-b-2": { frame: 24, route: "primary" },
} as const;
export type RunnerImageModel = keyof typeof IMAGE_MODELS;
export const IMAGE_MODEL_IDS = Object.keys(IMAGE_MODELS) as RunnerImageModel[];
export const DEFAULT_IMAGE_MODEL: RunnerImageModel = "image-a-pro";

export const costPerScene = (model: RunnerModel, imageModel: RunnerImageModel) =>
  IMAGE_MODELS[imageModel].frame + VIDEO_MODELS[model].cost;

/**
 * The run's price: cost_per_scene x scenes, plus one frame when the character is drawn from a description.
 * Custom accounts' rates (ours, the spec names none): `script_runner.scene.<model>.<image_model>` per scene
 * and `script_runner.frame.<image_model>` for the character frame.
 */
export function runPrice(model: RunnerModel, imageModel: RunnerImageModel, scenes: number, characterFrame: boolean) {
  return {
    lines: [
      { key: ["script_runner", "scene", model, imageModel], rate: costPerScene(model, imageModel), units: scenes },
      ...(characterFrame
        ? [{ key: ["script_runner", "frame", imageModel], rate: IMAGE_MODELS[imageModel].frame }]
        : []),
    ],
  };
}

/**
 * What each part of a run refunds (the kernel's refundable shares), from the charged `total` and the parts'
 * standard-basis costs (each scene, then the character frame when drawn). Spec part 3: "A failed scene refunds
 * its standard-basis share": on api_plus10 two scenes of 55 bill 121, and a failed scene returns 55, not a
 * share of the tiered total. What the tier adds (the 11) is one more part, the last, returned only with the
 * whole run (a run that ends `error`, nothing delivered, gets everything back). Where the standard costs
 * exceed the charge (a custom rate below the standard), a part cannot return more than was paid: the charge is
 * split over the parts in proportion to their costs instead, so all refunds together stay within it.
 */
export function refundParts(total: number, costs: readonly number[]): number[] {
  const standard = costs.reduce((a, b) => a + b, 0);
  if (standard <= total) return [...costs, total - standard];
  return [...apportion(total, costs), 0];
}

/** `total` split over the parts in proportion to their costs (largest remainder); the parts sum to it exactly. */
export function apportion(total: number, parts: readonly number[]): number[] {
  const sum = parts.reduce((a, b) => a + b, 0);
  if (sum === 0) return parts.map(() => 0);
  const exact = parts.map((p) => (total * p) / sum);
  const shares = exact.map(Math.floor);
  let left = total - shares.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    shares[i]!++;
    left--;
  }
  return shares;
}
