// The ASS subtitle script a burn draws (libass, through ffmpeg's `subtitles` filter): one script per job, built
// from the cards and the style, with every style field written where it can be read back (the tests parse it).
//
// The picture is drawn in up to three layers per card, bottom to top, each with a named style of its own:
// - Shadow  (only when `shadow` is not none): the text with transparent fill and border, so only its shadow
//   shows, offset by shadow_x/shadow_y and blurred by shadow_blur. A layer of its own because libass's \blur
//   blurs the glyph itself when a line has no border: the text must stay sharp when the shadow is soft.
// - Outline (only when `outline` is not none): the text with a border in `outline_color`, as wide as the
//   outline plus the font's stroke, so the outline shows around the stroked face.
// - Face: the text with a border in the text colour as wide as the font's stroke (`embolden` × font size, 0 for
//   most fonts): that border is the stroke that makes a light face look bolder (spec "Caption style object").
// Sizes follow layout.ts (the card maker measures lines with the same numbers), in frame pixels: the script's
// PlayResX/PlayResY are the frame's size and ScaledBorderAndShadow is on.

import type { CaptionStyle, Card, FontEntry, Frame } from "../types.ts";
import { displayText } from "./cards.ts";
import { clampPositionY, fontPixels, layoutFor, outlinePixels, strokePixels } from "./layout.ts";

/** Shadow depth when shadow_x/shadow_y are null, in pixels of a frame whose shorter side is 1080 (scaled to the frame). */
export const SHADOW_OFFSET_1080: Readonly<Record<CaptionStyle["shadow"], number>> = {
  none: 0,
  thin: 2,
  medium: 4,
  thick: 7,
};

/** shadow_x, shadow_y and shadow_blur are in pixels of a frame whose shorter side is this many pixels. */
export const REFERENCE_SHORT_SIDE = 1080;

/** The shadow's colour (the spec has no field for it): black, made transparent by shadow_strength. */
export const SHADOW_RGB = "#000000";

/** Style names, bottom layer first. */
export const ASS_LAYERS = { shadow: "Shadow", outline: "Outline", face: "Face" } as const;

/** ASS alignment (numpad) per position: bottom centre, middle centre, top centre; custom is placed with \pos. */
const ALIGNMENT: Readonly<Record<CaptionStyle["position"], number>> = { bottom: 2, middle: 5, top: 8, custom: 5 };

/** `#RRGGBB` as ASS `&HAABBGGRR` (alpha 0 = opaque, 255 = transparent). */
export function assColour(hex: string, alpha = 0): string {
  const m = /^#([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})$/.exec(hex);
  if (!m) throw new Error(`not a #RRGGBB colour: ${hex}`);
  const a = Math.min(255, Math.max(0, Math.round(alpha)));
  return `&H${[a.toString(16).padStart(2, "0"), m[3], m[2], m[1]].join("").toUpperCase()}`;
}

/** shadow_strength 0-100 as an ASS alpha (100: opaque, 0: invisible). */
export function strengthAlpha(strength: number): number {
  const s = Number.isFinite(strength) ? Math.min(100, Math.max(0, strength)) : 100;
  return Math.round(((100 - s) / 100) * 255);
}

/** Seconds as an ASS time, H:MM:SS.cc (centiseconds, rounded). */
export function assTime(seconds: number): string {
  const cs = Math.max(0, Math.round((Number.isFinite(seconds) ? seconds : 0) * 100));
  const h = Math.floor(cs / 360000);
  const m = Math.floor((cs % 360000) / 6000);
  const s = Math.floor((cs % 6000) / 100);
  const c = cs % 100;
  return `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}.${String(c).padStart(2, "0")}`;
}

/**
 * Card text as literal ASS text: nothing a partner types (or a recogniser hears) can open an override block,
 * break the line or end the Dialogue. `{` and `}` become libass's escapes `\{` `\}`; a backslash gets a word
 * joiner (U+2060, default-ignorable: not drawn) after it, so `\N`, `\n`, `\h`, `\{` in the text stay two literal
 * characters; line breaks, tabs and other control characters become spaces (a card is one logical line; libass
 * wraps it).
 */
export function escapeAssText(text: string): string {
  let out = "";
  for (const ch of text.normalize("NFC")) {
    if (ch === "\\") out += "\\\u2060";
    else if (ch === "{") out += "\\{";
    else if (ch === "}") out += "\\}";
    else if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(ch)) out += " ";
    else out += ch;
  }
  return out.replace(/ {2,}/g, " ").trim();
}

/** A font name safe in a Style line (no commas, which separate the fields; no control characters). */
function styleName(name: string): string {
  return name.replace(/[,\u0000-\u001f\u007f]/g, " ").trim() || "Sans";
}

const num = (n: number) => String(Math.round(n * 100) / 100);

export interface AssGeometry {
  fontPx: number;
  outlinePx: number;
  strokePx: number;
  /** The shadow's depth when shadow_x/shadow_y are null (the Shadow style's `Shadow`). */
  shadowDepth: number;
  shadowX: number;
  shadowY: number;
  blurPx: number;
  alignment: number;
  marginX: number;
  marginV: number;
  /** Where a `custom` caption's centre is drawn (x, y in pixels); null for the other positions. */
  pos: { x: number; y: number } | null;
}

/** Every number the script uses, from the style and the frame (exported for the tests and the card maker). */
export function assGeometry(style: CaptionStyle, font: FontEntry, frame: Frame): AssGeometry {
  const fontPx = fontPixels(style.size, frame);
  const layout = layoutFor(frame);
  const scale = Math.min(frame.width, frame.height) / REFERENCE_SHORT_SIDE;
  const fallback = SHADOW_OFFSET_1080[style.shadow] ?? 0;
  const shadowOn = style.shadow !== "none";
  const px = (v: number) => Math.round(v * scale * 10) / 10;
  return {
    fontPx,
    outlinePx: outlinePixels(style.outline, fontPx),
    strokePx: strokePixels(font.embolden, fontPx),
    shadowDepth: shadowOn ? px(fallback) : 0,
    shadowX: shadowOn ? px(style.shadow_x ?? fallback) : 0,
    shadowY: shadowOn ? px(style.shadow_y ?? fallback) : 0,
    blurPx: shadowOn ? px(style.shadow_blur ?? 0) : 0,
    alignment: ALIGNMENT[style.position] ?? 2,
    marginX: layout.marginX,
    marginV: layout.marginV,
    pos:
      style.position === "custom"
        ? { x: Math.round(frame.width / 2), y: Math.round((frame.height * clampPositionY(style.position_y)) / 100) }
        : null,
  };
}

const STYLE_FORMAT =
  "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding";

/** The ASS script for `cards` drawn in `style` with `font` on a `frame`-sized picture. */
export function buildAss(cards: readonly Card[], style: CaptionStyle, font: FontEntry, frame: Frame): string {
  const g = assGeometry(style, font, frame);
  const family = styleName(font.css_family);
  const text = assColour(style.color);
  const clear = assColour(style.color, 255);
  const shadowColour = assColour(SHADOW_RGB, strengthAlpha(style.shadow_strength));
  const border = Math.round((g.outlinePx + g.strokePx) * 10) / 10;
  // Name, Fontname, Fontsize, Primary, Secondary, Outline, Back, Bold, Italic, Underline, StrikeOut, ScaleX,
  // ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding.
  // Bold 0: the file is the weight wanted; asking for bold would make libass embolden it a second time.
  const styleLine = (
    name: string,
    primary: string,
    outlineColour: string,
    back: string,
    outline: number,
    shadow: number,
  ) =>
    `Style: ${name},${family},${g.fontPx},${primary},${primary},${outlineColour},${back},0,0,0,0,100,100,0,0,1,${num(outline)},${num(shadow)},${g.alignment},${g.marginX},${g.marginX},${g.marginV},1`;
  const layers: Array<{ style: string; tags: string }> = [];
  if (style.shadow !== "none") {
    // Depth from the style line (the default offset); explicit offsets, and the blur, as override tags.
    const tags = [`\\xshad${num(g.shadowX)}`, `\\yshad${num(g.shadowY)}`];
    if (g.blurPx > 0) tags.push(`\\blur${num(g.blurPx)}`);
    layers.push({ style: ASS_LAYERS.shadow, tags: tags.join("") });
  }
  if (style.outline !== "none") layers.push({ style: ASS_LAYERS.outline, tags: "" });
  layers.push({ style: ASS_LAYERS.face, tags: "" });

  const position = g.pos ? `\\an5\\pos(${g.pos.x},${g.pos.y})` : `\\an${g.alignment}`;
  const events: string[] = [];
  for (const card of cards) {
    if (!(card.end > card.start)) continue;
    const body = escapeAssText(displayText(card.text, style.case));
    if (!body) continue;
    layers.forEach((layer, i) => {
      events.push(
        `Dialogue: ${i},${assTime(card.start)},${assTime(card.end)},${layer.style},,0,0,0,,{${position}${layer.tags}}${body}`,
      );
    });
  }

  return [
    "[Script Info]",
    "; mediagate captions: style fields are in the Style lines and each Dialogue's override tags",
    "ScriptType: v4.00+",
    `PlayResX: ${frame.width}`,
    `PlayResY: ${frame.height}`,
    "ScaledBorderAndShadow: yes",
    // 0: smart wrapping, lines of about equal width (a card was measured to fit; a long edited one still wraps).
    "WrapStyle: 0",
    "Kerning: yes",
    "",
    "[V4+ Styles]",
    STYLE_FORMAT,
    styleLine(ASS_LAYERS.shadow, clear, clear, shadowColour, border, g.shadowDepth),
    styleLine(ASS_LAYERS.outline, text, assColour(style.outline_color), shadowColour, border, 0),
    styleLine(ASS_LAYERS.face, text, text, shadowColour, g.strokePx, 0),
    "",
    "[Events]",
    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text",
    ...events,
    "",
  ].join("\n");
}
