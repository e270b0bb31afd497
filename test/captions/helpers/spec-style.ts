// The caption styles as the spec writes them out (spec: captions, style): the default style and the tiktok
// preset. The style tests compare the plugin's values to these; the ASS and burn tests start from the default.
import { DEFAULT_FONT_KEY } from "../../../plugins/captions/render/fonts.ts";
import type { CaptionStyle } from "../../../plugins/captions/types.ts";

export const SPEC_DEFAULT_STYLE: CaptionStyle = {
  font: DEFAULT_FONT_KEY,
  size: "medium",
  color: "#FFFFFF",
  outline_color: "#000000",
  outline: "medium",
  shadow: "none",
  shadow_blur: 0,
  shadow_x: null,
  shadow_y: null,
  shadow_strength: 100,
  position: "bottom",
  position_y: 50,
  chunking: "words",
  case: "normal",
};

// The tiktok preset differs from the default in its shadow halo, no outline and phrase chunking.
export const SPEC_TIKTOK_STYLE: CaptionStyle = {
  ...SPEC_DEFAULT_STYLE,
  outline: "none",
  shadow: "thin",
  shadow_blur: 4,
  shadow_x: 2,
  shadow_y: 2.5,
  shadow_strength: 70,
  chunking: "phrases",
};
