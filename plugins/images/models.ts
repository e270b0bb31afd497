// The image models: the one table of what each model accepts and which providers it tries (spec part 1,
// "Image generation"); what each costs is in prices.ts.

export type Quality = "1K" | "2K" | "4K";

export interface ImageModel {
  /** Shown as `model` by GET /image-status (the spec calls it a display label without giving one). */
  label: string;
  qualities: readonly Quality[];
  defaultQuality: Quality;
  aspectRatios: readonly string[];
  defaultAspectRatio: string;
  /** Ratios this model renders at 1K only. */
  oneKOnly: readonly string[];
  /** Combinations the model cannot render at all: quality -> ratios. */
  impossible: Partial<Record<Quality, readonly string[]>>;
  /** Honours `background` (other models ignore it). */
  background: boolean;
  /**
   * Provider routes tried in order: a transient failure of one moves to the next (the spec's "retried on a
   * second provider" for image-a-pro and image-b-2). Route names are internal and never reach a partner.
   */
  providers: readonly string[];
}

const B25_RATIOS = [
  "auto",
  "1:1",
  "3:2",
  "2:3",
  "4:3",
  "3:4",
  "16:9",
  "9:16",
  "21:9",
  "27:16",
  "16:27",
  "9:8",
  "8:9",
] as const;

const b25 = (label: string): ImageModel => ({
  label,
  qualities: ["1K", "2K", "4K"],
  defaultQuality: "1K",
  aspectRatios: B25_RATIOS,
  defaultAspectRatio: "auto",
  oneKOnly: ["27:16", "16:27", "9:8", "8:9"],
  impossible: {},
  background: true,
  providers: ["primary"],
});

export const MODELS = {
  "image-a-pro": {
    label: "Image A Pro",
    qualities: ["2K", "4K"],
    defaultQuality: "2K",
    aspectRatios: ["1:1", "9:16", "16:9", "3:4", "4:3"],
    defaultAspectRatio: "1:1",
    oneKOnly: [],
    impossible: {},
    background: false,
    providers: ["primary", "secondary"],
  },
  "image-b-2": {
    label: "Image B 2",
    qualities: ["1K", "2K", "4K"],
    defaultQuality: "1K",
    aspectRatios: ["1:1", "16:9", "9:16"],
    defaultAspectRatio: "1:1",
    oneKOnly: [],
    impossible: { "4K": ["1:1"] },
    background: false,
    providers: ["primary", "secondary"],
  },
  "image-b-2-5-flare": b25("Image B 2.5 Flare"),
  "image-b-2-5-sunburst": b25("Image B 2.5 Sunburst"),
} as const satisfies Record<string, ImageModel>;

export type ModelId = keyof typeof MODELS;
export const MODEL_IDS = Object.keys(MODELS) as ModelId[];
export const DEFAULT_MODEL: ModelId = "image-a-pro";

export const BACKGROUNDS = ["auto", "transparent", "opaque"] as const;
export type Background = (typeof BACKGROUNDS)[number];

const LONG_EDGE: Record<Quality, number> = { "1K": 1024, "2K": 2048, "4K": 4096 };

/**
 * Pixel size of a result (docs/architecture.md "Sizes"): the quality names the long edge, the short edge follows the
 * ratio, rounded to a multiple of 8. `auto` renders square (the sandbox has no subject to frame).
 */
export function pixelSize(quality: Quality, aspectRatio: string): { width: number; height: number } {
  const long = LONG_EDGE[quality];
  if (aspectRatio === "auto") return { width: long, height: long };
  const [w, h] = aspectRatio.split(":").map(Number) as [number, number];
  const short = Math.max(8, Math.round((long * Math.min(w, h)) / Math.max(w, h) / 8) * 8);
  return w >= h ? { width: long, height: short } : { width: short, height: long };
}

/**
 * The routes a model is drawn through: the provider of its own id when one answers for it (an upstream
 * gateway, which fails over between its services itself), else the model's `providers` (the sandbox's
 * primary/secondary failover).
 */
export function imageRoutes(providers: { route(name: string): unknown }, model: ModelId): string[] {
  if (providers.route(model)) return [model];
  return MODELS[model].providers.filter((route) => providers.route(route));
}
