// Where captions sit on the frame and how big they are, in pixels of the source's picture. The card maker
// (cards.ts) measures lines against these numbers and the ASS writer (ass.ts) draws with the same ones, so a
// card that was measured to fit on one line is drawn on one line. Every size follows the frame, so a caption
// looks the same on a 1080x1920 portrait clip, a 1920x1080 landscape clip and a 480x480 square.
//
// The ASS file is written with PlayResX/PlayResY equal to the frame's width and height (and
// ScaledBorderAndShadow: yes), so these pixel numbers are the ASS numbers as they are.
import type { CaptionStyle, Frame } from "../types.ts";

/**
 * Font size as a fraction of the frame's shorter side (the ASS `Fontsize`; libass sizes a face so that its
 * ascender plus descender fill it, see metrics.ts). Medium on a 1080x1920 portrait clip is 59 px, a
 * TikTok-like caption (about 35 px capital height); on a 1920x1080 landscape clip it is the same 59 px,
 * 5.5 % of the height, close to broadcast subtitle sizes. Using the shorter side keeps portrait captions from
 * growing with the tall side and landscape captions from shrinking with the short one.
 */
export const SIZE_FRACTION: Readonly<Record<CaptionStyle["size"], number>> = {
  small: 0.045,
  medium: 0.055,
  large: 0.07,
};

/** No caption is drawn smaller than this, whatever the frame (a thumbnail-sized clip still gets legible text). */
export const MIN_FONT_PX = 10;

/** Left and right margins, each a fraction of the frame width: the safe text width is the 90 % between them. */
export const SIDE_MARGIN_FRACTION = 0.05;

/**
 * Distance from the frame's bottom (position `bottom`) or top (position `top`) edge to the caption, as a fraction
 * of the frame height. Portrait clips keep their captions above the bottom fifth, where TikTok, Reels and Shorts
 * draw the account name, description and buttons; landscape and square clips use the usual subtitle margin.
 */
export const VERTICAL_MARGIN_FRACTION = { portrait: 0.2, other: 0.08 } as const;

/** `position_y` (0-100, percent of the height from the top) is clamped to this band when drawn (spec: 5-95). */
export const SAFE_Y_PERCENT = { min: 5, max: 95 } as const;

/**
 * Outline (the ASS border, drawn in `outline_color`) thickness as a fraction of the font size: at medium on
 * 1080 px that is 2, 4 and 6 px, a hairline, the usual caption outline and a heavy TikTok-style one.
 */
export const OUTLINE_FRACTION: Readonly<Record<CaptionStyle["outline"], number>> = {
  none: 0,
  thin: 0.035,
  medium: 0.07,
  thick: 0.11,
};

function dimension(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** The ASS `Fontsize` in frame pixels for a style size (an integer, at least MIN_FONT_PX). */
export function fontPixels(size: CaptionStyle["size"], frame: Frame): number {
  const fraction = SIZE_FRACTION[size] ?? SIZE_FRACTION.medium;
  const shorter = Math.min(dimension(frame.width), dimension(frame.height));
  return Math.max(MIN_FONT_PX, Math.round(shorter * fraction));
}

/** Outline thickness in pixels (the ASS `Outline`), rounded to a tenth of a pixel. */
export function outlinePixels(outline: CaptionStyle["outline"], fontPx: number): number {
  return Math.round((OUTLINE_FRACTION[outline] ?? 0) * fontPx * 10) / 10;
}

/** The stroke of a font whose `embolden` is non-zero (spec: that fraction of the font size), in pixels. */
export function strokePixels(embolden: number, fontPx: number): number {
  return Number.isFinite(embolden) && embolden > 0 ? Math.round(embolden * fontPx * 10) / 10 : 0;
}

export interface Layout {
  /** ASS MarginL and MarginR. */
  marginX: number;
  /** ASS MarginV for positions `bottom` and `top`. */
  marginV: number;
  /** The width one caption line may take, outline and stroke included: width - 2 * marginX. */
  safeWidth: number;
  /** Pixel rows of the 5-95 % band `position_y` is clamped to. */
  safeTop: number;
  safeBottom: number;
}

export function layoutFor(frame: Frame): Layout {
  const width = dimension(frame.width);
  const height = dimension(frame.height);
  const marginX = Math.round(width * SIDE_MARGIN_FRACTION);
  const portrait = height > width;
  const marginV = Math.round(height * (portrait ? VERTICAL_MARGIN_FRACTION.portrait : VERTICAL_MARGIN_FRACTION.other));
  return {
    marginX,
    marginV,
    safeWidth: Math.max(0, width - 2 * marginX),
    safeTop: Math.round((height * SAFE_Y_PERCENT.min) / 100),
    safeBottom: Math.round((height * SAFE_Y_PERCENT.max) / 100),
  };
}

/** The safe text width in pixels (layoutFor(frame).safeWidth). */
export function safeWidth(frame: Frame): number {
  return layoutFor(frame).safeWidth;
}

/** `position_y` clamped to the safe band, as it is drawn (percent of the height from the top). */
export function clampPositionY(positionY: number): number {
  if (!Number.isFinite(positionY)) return 50;
  return Math.min(SAFE_Y_PERCENT.max, Math.max(SAFE_Y_PERCENT.min, positionY));
}
