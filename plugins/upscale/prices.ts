// The upscaler's one table of prices and limits (spec part 1, "Credits and pricing tiers", "Upscaling",
// "Concurrency and payload limits", and `costs.upscale` of GET /credits). Prices are the standard basis; the
// kernel applies the account's tier once per job.
import { megabytes, type Price } from "mediagate/plugin";

export const FACTORS = [1, 2, 4] as const;
export type Factor = (typeof FACTORS)[number];
export const DEFAULT_FACTOR: Factor = 2;

export const TIERS = ["2K", "4K", "8K"] as const;
export type Tier = (typeof TIERS)[number];

export const IMAGE = {
  perImageByOutputTier: { "2K": 7, "4K": 14, "8K": 28 } as Record<Tier, number>,
  tierMaxLongEdge: { "2K": 2048, "4K": 4096, "8K": 8192 } as Record<Tier, number>,
  inputMaxBytes: 10_000_000,
  /** "payload cap about 20 MB" of image_base64 (decoded), in the spec's decimal megabytes. */
  base64MaxBytes: megabytes(20),
  maxOutputLongEdge: 8192,
} as const;

export const VIDEO = {
  perSecondByFactor: { 1: 6, 2: 6, 4: 10 } as Record<Factor, number>,
  inputMaxBytes: 50_000_000,
  inputMaxSeconds: 120,
  maxOutputLongEdge: 4096,
} as const;

/** The fragment of `costs` this plugin declares, shaped as the spec lists `upscale.image` and `upscale.video`. */
export const UPSCALE_COSTS = {
  upscale: {
    image: {
      per_image_by_output_tier: IMAGE.perImageByOutputTier,
      tier_max_long_edge: IMAGE.tierMaxLongEdge,
      factors: [...FACTORS],
      input_max_bytes: IMAGE.inputMaxBytes,
      max_output_long_edge: IMAGE.maxOutputLongEdge,
    },
    video: {
      per_second_by_factor: VIDEO.perSecondByFactor,
      basis: "input_seconds_rounded_up",
      factors: [...FACTORS],
      input_max_bytes: VIDEO.inputMaxBytes,
      input_max_seconds: VIDEO.inputMaxSeconds,
      max_output_long_edge: VIDEO.maxOutputLongEdge,
    },
  },
};

/** The price tier of an output: the smallest whose long edge holds it; null beyond 8K. */
export function tierFor(width: number, height: number): Tier | null {
  const long = Math.max(width, height);
  return TIERS.find((t) => long <= IMAGE.tierMaxLongEdge[t]) ?? null;
}

export const imagePrice = (tier: Tier): Price => ({
  lines: [{ key: ["upscale", "image", "per_image_by_output_tier", tier], rate: IMAGE.perImageByOutputTier[tier] }],
});

export const videoPrice = (factor: Factor, inputSeconds: number): Price => ({
  lines: [
    {
      key: ["upscale", "video", "per_second_by_factor", factor],
      rate: VIDEO.perSecondByFactor[factor],
      units: inputSeconds,
    },
  ],
});

/**
 * Whole input seconds billed: rounded up once. The seconds are measured (video.ts: the stated duration, or the
 * picture's packets when they run longer); they are first rounded to the millisecond, so 5.0000001 s is billed 5,
 * not 6; anything shorter than a second is billed 1. The same number caps the job's work (`-t`).
 */
export const billedSeconds = (measured: number) => Math.max(1, Math.ceil(Math.round(measured * 1000) / 1000));
