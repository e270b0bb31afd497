// Every number of the Omni area (spec part 3 "Omni ..." sections and "Limits", part 1's rows), in one place:
// models, durations, sizes, prices and caps. Prices are standard basis; the kernel's tier math applies the tier.

/** The area's feature switch (admin API, 403 when off) and its service-wide pause switch (503). */
export const OMNI_FEATURE = "omni";
export const OMNI_PAUSE = "omni";

export const OMNI_MODELS = ["omni", "omni-1.1"] as const;
export type OmniModel = (typeof OMNI_MODELS)[number];
/** Models that take first and last frames. */
export const FRAME_MODELS: readonly OmniModel[] = ["omni-1.1"];

export const DURATIONS = [4, 6, 8, 10] as const;
export type OmniDuration = (typeof DURATIONS)[number];
export const DEFAULT_DURATION: OmniDuration = 8;
/** Batch sections default to 10 s (billed at the 8 s price). */
export const DEFAULT_SECTION_DURATION: OmniDuration = 10;

export const ASPECT_RATIOS = ["9:16", "16:9"] as const;
export type OmniAspectRatio = (typeof ASPECT_RATIOS)[number];
export const RESOLUTIONS = ["1080p", "4k"] as const;
export type OmniResolution = (typeof RESOLUTIONS)[number];

/** Output frame size: the resolution is the short edge (1080 or 2160), the aspect ratio says which edge. */
export function frameSize(resolution: OmniResolution, aspect: OmniAspectRatio): { width: number; height: number } {
  const short = resolution === "4k" ? 2160 : 1080;
  const long = (short * 16) / 9;
  return aspect === "9:16" ? { width: short, height: long } : { width: long, height: short };
}

/** Standard-basis Omni video price by resolution and duration (spec "Omni video prices"; `costs.omni.video_price`). */
export const VIDEO_PRICE: Record<OmniResolution, Record<OmniDuration, number>> = {
  "1080p": { 4: 120, 6: 130, 8: 140, 10: 150 },
  "4k": { 4: 180, 6: 190, 8: 200, 10: 210 },
};
/** Reference-video surcharge: a flat add-on after the tier markup, the same on every tier. */
export const REFERENCE_VIDEO_SURCHARGE: Record<OmniDuration, number> = { 4: 79, 6: 63, 8: 47, 10: 32 };
/** Batch sections are 1080p; a 10 s section is capped at the 8 s price. */
export const SECTION_PRICE: Record<OmniDuration, number> = { 4: 120, 6: 130, 8: 140, 10: 140 };
export const CHARACTER_PRICE = 30;
export const VOICE_PRICE = 0;
export const REPAIR_PRICE = 1;

export const LIMITS = {
  promptChars: 10_000,
  characters: 3,
  voices: 3,
  /** images + 2 x reference video + characters. */
  referenceBudget: 7,
  referenceVideoCost: 2,
  referenceVideoMaxSeconds: 30,
  referenceVideoMaxBytes: 90_000_000,
  trimWindowMaxSeconds: 10,
  imageMaxBytes: 20 * 1024 * 1024,
  imagesMaxTotalBytes: 72 * 1024 * 1024,
  /** Character and voice texts. */
  nameChars: 120,
  descriptionChars: 2000,
  exampleDialogueChars: 120,
  /** Batch runner. */
  sectionsMin: 1,
  sectionsMax: 30,
  sectionContentChars: 10_000,
} as const;

/** The `costs.omni` object of GET /credits (part 1 "Account"). */
export const OMNI_COSTS = {
  omni: {
    character_creation: CHARACTER_PRICE,
    voice_creation: VOICE_PRICE,
    video_price: VIDEO_PRICE,
    models: [...OMNI_MODELS],
  },
} as const;

/**
 * Keys of a custom account's negotiated rates (admin `custom_rates`), ours: the spec names the rates, not
 * their keys. `omni.video_price.<res>.<s>` is the clip; `omni.reference_video_price.<res>.<s>` is the all-in
 * rate of a clip with a reference video (it replaces clip + surcharge); `omni.section_price.<s>`,
 * `omni.character_creation` and `omni.prompt_repair` the rest.
 */
export const PRICE_KEYS = {
  video: (res: OmniResolution, s: OmniDuration) => ["omni", "video_price", res, s] as const,
  referenceAllIn: (res: OmniResolution, s: OmniDuration) => ["omni", "reference_video_price", res, s] as const,
  section: (s: OmniDuration) => ["omni", "section_price", s] as const,
  character: ["omni", "character_creation"] as const,
  repair: ["omni", "prompt_repair"] as const,
};

/** An Omni clip's price: the table's line; with a reference video the flat surcharge, or a custom account's all-in rate. */
export function omniVideoPrice(res: OmniResolution, seconds: OmniDuration, referenceVideo: boolean) {
  return {
    lines: [{ key: PRICE_KEYS.video(res, seconds), rate: VIDEO_PRICE[res][seconds] }],
    ...(referenceVideo
      ? { addOn: REFERENCE_VIDEO_SURCHARGE[seconds], allInKey: PRICE_KEYS.referenceAllIn(res, seconds) }
      : {}),
  };
}

/** A batch section's price (1080p; 10 s billed as 8 s). */
export const sectionPrice = (seconds: OmniDuration) => ({
  lines: [{ key: PRICE_KEYS.section(seconds), rate: SECTION_PRICE[seconds] }],
});

export const repairPrice = () => ({ lines: [{ key: PRICE_KEYS.repair, rate: REPAIR_PRICE }] });
export const characterPrice = () => ({ lines: [{ key: PRICE_KEYS.character, rate: CHARACTER_PRICE }] });
