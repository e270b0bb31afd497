// The shapes the captions modules pass between them, in one place: the style (style/input.ts validates it),
// a font of the table (render/fonts.ts), a card (render/cards.ts makes them, render/ass.ts draws them) and a source file.
import type { TimedWord } from "mediagate/plugin";

export type { TimedWord };

export const SIZES = ["small", "medium", "large"] as const;
export const OUTLINES = ["none", "thin", "medium", "thick"] as const;
export const SHADOWS = ["none", "thin", "medium", "thick"] as const;
export const POSITIONS = ["bottom", "middle", "top", "custom"] as const;
export const CHUNKING = ["words", "phrases", "line"] as const;
export const CASES = ["normal", "lower", "upper"] as const;
export const FONT_CATEGORIES = ["clean", "bold", "fun", "serif", "handwritten", "retro"] as const;

/** A complete caption style (spec part 2 "Caption style object"); a request's partial style is merged onto the default. */
export interface CaptionStyle {
  font: string;
  size: (typeof SIZES)[number];
  color: string;
  outline_color: string;
  outline: (typeof OUTLINES)[number];
  shadow: (typeof SHADOWS)[number];
  shadow_blur: number;
  shadow_x: number | null;
  shadow_y: number | null;
  shadow_strength: number;
  position: (typeof POSITIONS)[number];
  position_y: number;
  chunking: (typeof CHUNKING)[number];
  case: (typeof CASES)[number];
}

/** One font of the style-options table. `path` is where the file is on this machine; never shown. */
export interface FontEntry {
  key: string;
  label: string;
  /** The file name shown by style-options (e.g. `Roboto-Bold.ttf`). */
  file: string;
  /** The family name inside the file: what CSS and the ASS `Fontname` use. */
  css_family: string;
  /** Stroke in the text colour, as a fraction of the font size (0: none). */
  embolden: number;
  category: (typeof FONT_CATEGORIES)[number];
  path: string;
}

/** One caption on screen: shown from `start` to `end` seconds, `text` as transcribed or edited (case is applied when drawn). */
export interface Card {
  start: number;
  end: number;
  text: string;
}

/** Size and rate of the source's picture, what the cards are measured and drawn against. */
export interface Frame {
  width: number;
  height: number;
  fps: number;
}
