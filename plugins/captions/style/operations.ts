// GET /captions/style-options (spec part 2): the authoritative style whitelist, built from the very tables the
// check (input.ts), the card maker and the burn use (render/fonts.ts, types.ts, limits.ts), so nothing is listed
// twice. Field order as the spec lists them; `request_id` is added by the kernel.
import { operation } from "mediagate/plugin";
import { CAPTIONS_FEATURE } from "../config.ts";
import { LIMITS, RETENTION } from "../limits.ts";
import { captionPrice } from "../prices.ts";
import { FONTS } from "../render/fonts.ts";
import { CHOICES, DEFAULT_STYLE, NUMBER_RANGES, type NumberRange, POSITION_Y, PRESETS } from "./input.ts";

const range = (r: NumberRange) => ({ min: r.min, max: r.max, default: r.default, step: r.step });

/** The response body minus `request_id`; `credits` is the caption price for the calling account's tier. */
export function styleOptionsBody(credits: number): Record<string, unknown> {
  return {
    // Every column but `path` (where the file is on this machine).
    fonts: FONTS.map(({ path: _path, ...shown }) => shown),
    presets: PRESETS.map((p) => ({ key: p.key, label: p.label, style: { ...p.style } })),
    chunking: [...CHOICES.chunking],
    cases: [...CHOICES.case],
    sizes: [...CHOICES.size],
    outlines: [...CHOICES.outline],
    shadows: [...CHOICES.shadow],
    positions: [...CHOICES.position],
    position_y: { min: POSITION_Y.safe.min, max: POSITION_Y.safe.max, default: POSITION_Y.default },
    shadow_blur: range(NUMBER_RANGES.shadow_blur),
    shadow_x: range(NUMBER_RANGES.shadow_x),
    shadow_y: range(NUMBER_RANGES.shadow_y),
    shadow_strength: range(NUMBER_RANGES.shadow_strength),
    default: { ...DEFAULT_STYLE },
    credits,
    upload: {
      chunked: true,
      chunk_size: LIMITS.chunkSize,
      max_bytes: LIMITS.chunkedMaxBytes,
      max_seconds: LIMITS.maxSeconds,
      single_shot_max_bytes: LIMITS.singleUploadBytes,
    },
    retention: {
      captioned_output_days: RETENTION.captionedOutputDays,
      uploaded_source_days: RETENTION.uploadedSourceDays,
      guaranteed: false,
    },
  };
}

export const styleOptions = operation({
  method: "GET",
  path: "/captions/style-options",
  feature: CAPTIONS_FEATURE,
  summary: "The caption style whitelist: fonts, presets, allowed values and ranges, the price and the upload limits",
  async handle(ctx) {
    return styleOptionsBody(captionPrice(ctx));
  },
});
