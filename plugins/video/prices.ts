// The video models and their prices: the one table of what each model accepts and what it costs (spec part 2, "Video models",
// "Video prices", "Animation prices"; part 1 `costs.video`). Prices are the standard basis; the kernel applies
// the account's tier (api_plus10 is the spec's headline column: 50 standard -> 55).
import type { Price } from "mediagate/plugin";

export type Quality = "480p" | "720p" | "1080p" | "4K";

export const ASPECT_RATIOS = ["9:16", "16:9", "1:1"] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];

/** Per-clip references a Beta model takes (spec "Video models", "Limits" 3). */
export interface ReferenceRules {
  images: number;
  videos: { count: number; minSeconds: number; maxSeconds: number; totalSeconds: number };
  audio: { count: number; minSeconds: number; maxSeconds: number; totalSeconds: number; needsImageOrVideo: boolean };
}

type Pricing =
  | { kind: "per_clip"; combos: Record<string, number> }
  | {
      kind: "per_second";
      rates: Partial<Record<Quality, number>>;
      withReferenceVideo?: Partial<Record<Quality, number>>;
    }
  | { kind: "flat"; flat: Partial<Record<Quality, number>> };

export interface VideoModel {
  family: "alpha" | "beta" | "gamma";
  qualities: readonly Quality[];
  /**
   * Accepted durations; `any` accepts every whole second from 1 to MAX_ANY_SECONDS (beta-2-direct: "no strict
   * limit"; ours: an hour, so a duration cannot overflow a price or a column nor ask for a year of video).
   */
  durations: readonly number[] | { min: number; max: number } | "any";
  /** The clip is always this long, whatever was asked (gamma). */
  fixedOutputSeconds?: number;
  frames: boolean;
  sound: boolean;
  references?: ReferenceRules;
  /** Refused outright with this rule (motion control). */
  unusable?: boolean;
  pricing: Pricing;
}

const alphaCombos = {
  "720p_5s_noaudio": 50,
  "720p_10s_noaudio": 100,
  "1080p_5s_noaudio": 65,
  "1080p_10s_noaudio": 150,
  "720p_5s_audio": 75,
  "720p_10s_audio": 145,
  "1080p_5s_audio": 100,
  "1080p_10s_audio": 200,
};

const alpha = (): VideoModel => ({
  family: "alpha",
  qualities: ["720p", "1080p"],
  durations: [5, 10],
  frames: true,
  sound: true,
  pricing: { kind: "per_clip", combos: alphaCombos },
});

/**
 * A Beta model: frames, no sound, priced per second (less with a reference video). Its reference videos and
 * audio share one rule: `clips.count` of each, 2 s to `clips.maxSeconds` each and in total.
 */
const beta = (o: {
  qualities: readonly Quality[];
  durations: VideoModel["durations"];
  images: number;
  clips: { count: number; maxSeconds: number };
  audioNeedsImageOrVideo: boolean;
  rates: Partial<Record<Quality, number>>;
  withReferenceVideo: Partial<Record<Quality, number>>;
}): VideoModel => {
  const clips = {
    count: o.clips.count,
    minSeconds: 2,
    maxSeconds: o.clips.maxSeconds,
    totalSeconds: o.clips.maxSeconds,
  };
  return {
    family: "beta",
    qualities: o.qualities,
    durations: o.durations,
    frames: true,
    sound: false,
    references: { images: o.images, videos: clips, audio: { ...clips, needsImageOrVideo: o.audioNeedsImageOrVideo } },
    pricing: { kind: "per_second", rates: o.rates, withReferenceVideo: o.withReferenceVideo },
  };
};

const gamma = (flat: Partial<Record<Quality, number>>): VideoModel => ({
  family: "gamma",
  qualities: ["720p", "1080p", "4K"],
  durations: [4, 6, 8],
  fixedOutputSeconds: 8,
  frames: true,
  sound: false,
  pricing: { kind: "flat", flat },
});

export const MODELS = {
  "alpha-v3-text-to-video": alpha(),
  "alpha-v3-image-to-video": alpha(),
  "alpha-v3-motion-control": {
    family: "alpha",
    qualities: ["720p", "1080p"],
    durations: "any",
    frames: false,
    sound: false,
    unusable: true,
    pricing: { kind: "per_second", rates: { "720p": 14, "1080p": 19 } },
  },
  "beta-2-direct": beta({
    qualities: ["480p", "720p", "1080p", "4K"],
    durations: "any",
    images: 9,
    clips: { count: 3, maxSeconds: 15 },
    audioNeedsImageOrVideo: true,
    rates: { "480p": 14, "720p": 29, "1080p": 72, "4K": 146 },
    withReferenceVideo: { "480p": 9, "720p": 18, "1080p": 44, "4K": 90 },
  }),
  "beta-2-5": beta({
    qualities: ["480p", "720p", "1080p"],
    durations: { min: 4, max: 30 },
    images: 30,
    clips: { count: 10, maxSeconds: 30 },
    audioNeedsImageOrVideo: false,
    rates: { "480p": 20, "720p": 45, "1080p": 111 },
    withReferenceVideo: { "480p": 12, "720p": 27, "1080p": 67 },
  }),
  "gamma-3.1-quality": gamma({ "720p": 150, "1080p": 178, "4K": 200 }),
  "gamma-3.1-fast": gamma({ "720p": 41, "1080p": 49, "4K": 120 }),
} as const satisfies Record<string, VideoModel>;

export type ModelId = keyof typeof MODELS;
export const MODEL_IDS = Object.keys(MODELS) as ModelId[];
export const DEFAULT_MODEL: ModelId = "alpha-v3-text-to-video";
export const DEFAULT_DURATION = 10;
export const DEFAULT_QUALITY: Quality = "720p";
export const DEFAULT_ASPECT_RATIO: AspectRatio = "9:16";

/** Prompt length by family (spec "Limits" 2). */
export const MAX_PROMPT = { alpha: 2500, beta: 50000, gamma: 50000, animation: 2500 } as const;

/** docs/architecture.md "Sizes": a video quality names the short edge. */
export const SHORT_EDGE: Record<Quality, number> = { "480p": 480, "720p": 720, "1080p": 1080, "4K": 2160 };

export const ANIMATION = { price: 156, seconds: 8, quality: "1080p" as Quality };
export const MERGE_PRICE = 100;

/** The longest clip a model with `durations: "any"` accepts (our bound where the spec has none). */
export const MAX_ANY_SECONDS = 3600;

/** The durations text of the 400 ("Allowed: ..."). */
export function allowedDurations(model: VideoModel): string {
  if (model.durations === "any") return `any whole number of seconds up to ${MAX_ANY_SECONDS}`;
  if (Array.isArray(model.durations)) return model.durations.join(", ");
  const d = model.durations as { min: number; max: number };
  return `${d.min}-${d.max}`;
}

export function acceptsDuration(model: VideoModel, seconds: number): boolean {
  if (model.durations === "any") return seconds >= 1 && seconds <= MAX_ANY_SECONDS;
  if (Array.isArray(model.durations)) return model.durations.includes(seconds);
  const d = model.durations as { min: number; max: number };
  return seconds >= d.min && seconds <= d.max;
}

/**
 * The standard-basis price of a clip. Per-second models bill the output seconds, or, with at least one
 * reference video, the lower rate over the measured reference seconds plus the output seconds; the kernel
 * rounds once. Custom accounts are looked up under the same keys in their negotiated rates.
 */
export function videoPrice(
  id: ModelId,
  quality: Quality,
  outputSeconds: number,
  sound: boolean,
  referenceVideoSeconds: number | null,
  texts: { noReferenceRate: string; noRate: string },
): Price {
  const pricing = (MODELS[id] as VideoModel).pricing;
  switch (pricing.kind) {
    case "per_clip": {
      const combo = `${quality}_${outputSeconds}s_${sound ? "audio" : "noaudio"}`;
      return {
        lines: [{ key: ["video", id, "combos", combo], rate: pricing.combos[combo]! }],
        customRateMissing: texts.noRate,
      };
    }
    case "flat":
      return {
        lines: [{ key: ["video", id, "flat", quality], rate: pricing.flat[quality]! }],
        customRateMissing: texts.noRate,
      };
    case "per_second": {
      if (referenceVideoSeconds !== null && pricing.withReferenceVideo) {
        // Measured seconds keep their two decimals; the total is rounded up once (core/pricing.ts).
        const units = Math.round((referenceVideoSeconds + outputSeconds) * 100) / 100;
        return {
          lines: [
            { key: ["video", id, "with_reference_video", quality], rate: pricing.withReferenceVideo[quality]!, units },
          ],
          customRateMissing: texts.noReferenceRate,
        };
      }
      return {
        lines: [{ key: ["video", id, quality], rate: pricing.rates[quality]!, units: outputSeconds }],
        customRateMissing: texts.noRate,
      };
    }
  }
}

/** The `costs` fragment of GET /credits (part 1, `video`, `animation`, `merge_videos`). */
export const VIDEO_COSTS = {
  video: Object.fromEntries(
    MODEL_IDS.map((id) => {
      const p = (MODELS[id] as VideoModel).pricing;
      if (p.kind === "per_clip") return [id, { per_clip: true, combos: { ...p.combos } }];
      if (p.kind === "flat") return [id, { per_second: false, flat: { ...p.flat } }];
      return [
        id,
        {
          per_second: true,
          ...p.rates,
          ...(p.withReferenceVideo
            ? { with_reference_video: { basis: "reference_plus_output_seconds", ...p.withReferenceVideo } }
            : {}),
        },
      ];
    }),
  ),
  animation: ANIMATION.price,
  merge_videos: MERGE_PRICE,
};
