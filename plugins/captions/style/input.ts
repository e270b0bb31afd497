// The caption style (spec part 2 "Caption style object"): the allowed values and ranges of every field (one
// table, which style-options lists and the check enforces), the default style, the presets, the check of a
// request's partial style and its merge onto the default.
//
// Decisions the spec leaves open, written down here and in docs/areas/captions.md:
// - Colours: `#RRGGBB` with hex digits in either case (`#ff00aa` and `#FF00AA` are the same colour); the
//   checked value is upper-cased, so a stored style and the ASS script always see one spelling.
// - Steps: `step` is what a picker offers (style-options lists it). shadow_blur and shadow_strength take whole
//   numbers only. shadow_x and shadow_y take whole and half numbers (2, -3.5), because the tiktok preset's
//   shadow_y is 2.5 and a preset "can be sent as it is"; libass draws fractional shadow offsets. position_y
//   takes any number from 0 to 100 (spec: "accepted 0-100"); the burn clamps it to the safe area 5-95.
// - Every field is optional; a field given as null is a 400 except shadow_x and shadow_y, whose null (the
//   default) means "the offset of the `shadow` size". Numbers must be JSON numbers: "4" or true is a 400.
// - A style that is not a plain object (array, string, null), an unknown field, or a field out of range is a
//   400 naming the first offending field (unknown fields first, then the fields in the spec's order).
import { CAPTION_ERRORS } from "../errors.ts";
import { DEFAULT_FONT_KEY, FONTS, fontByKey } from "../render/fonts.ts";
import { SAFE_Y_PERCENT } from "../render/layout.ts";
import { CASES, type CaptionStyle, CHUNKING, OUTLINES, POSITIONS, SHADOWS, SIZES } from "../types.ts";

/** The style's fields in the spec's order (the order of the default style and of every resolved style). */
export const STYLE_FIELDS = [
  "font",
  "size",
  "color",
  "outline_color",
  "outline",
  "shadow",
  "shadow_blur",
  "shadow_x",
  "shadow_y",
  "shadow_strength",
  "position",
  "position_y",
  "chunking",
  "case",
] as const satisfies readonly (keyof CaptionStyle)[];

type Field = (typeof STYLE_FIELDS)[number];

/** A numeric field: its range, default and picker step (listed by style-options) and what the check accepts. */
export interface NumberRange {
  min: number;
  max: number;
  default: number | null;
  step: number;
  /** Accepted values are multiples of this (0: any number in the range). */
  grid: number;
  nullable: boolean;
}

export const NUMBER_RANGES = {
  shadow_blur: { min: 0, max: 20, default: 0, step: 1, grid: 1, nullable: false },
  shadow_x: { min: -20, max: 20, default: null, step: 1, grid: 0.5, nullable: true },
  shadow_y: { min: -20, max: 20, default: null, step: 1, grid: 0.5, nullable: true },
  shadow_strength: { min: 0, max: 100, default: 100, step: 1, grid: 1, nullable: false },
} as const satisfies Record<string, NumberRange>;

/** position_y: accepted 0-100; the burn clamps it to the safe area (render/layout.ts, 5-95), which style-options shows as the range. */
export const POSITION_Y = { accepted: { min: 0, max: 100 }, safe: SAFE_Y_PERCENT, default: 50 } as const;

/** The fields whose value is one of a list. */
export const CHOICES = {
  size: SIZES,
  outline: OUTLINES,
  shadow: SHADOWS,
  position: POSITIONS,
  chunking: CHUNKING,
  case: CASES,
} as const;

/** Spec "Default style"; the font is DEFAULT_FONT_KEY (style-options' `default.font`). */
export const DEFAULT_STYLE: Readonly<CaptionStyle> = Object.freeze({
  font: DEFAULT_FONT_KEY,
  size: "medium",
  color: "#FFFFFF",
  outline_color: "#000000",
  outline: "medium",
  shadow: "none",
  shadow_blur: NUMBER_RANGES.shadow_blur.default,
  shadow_x: NUMBER_RANGES.shadow_x.default,
  shadow_y: NUMBER_RANGES.shadow_y.default,
  shadow_strength: NUMBER_RANGES.shadow_strength.default,
  position: "bottom",
  position_y: POSITION_Y.default,
  chunking: "words",
  case: "normal",
});

export interface Preset {
  key: string;
  label: string;
  style: Readonly<CaptionStyle>;
}

// tiktok: the spec's values, in the default font (Inter, stroked by its `embolden`: "a white grotesque face
// with a stroked face and soft shadow").
// minimal: "lowercase one-line caption in a bold face with tight letter spacing and a soft halo": case lower,
// chunking line, League Spartan Bold (a geometric bold cut with tight spacing; the style has no letter-spacing
// field, so the face carries it), no outline, and the halo as a soft shadow: heavily blurred (8) around a
// 1-pixel drop, at 60 % strength. Not a zero offset: libass draws no shadow at offset 0,0.
export const PRESETS: readonly Preset[] = Object.freeze([
  Object.freeze({
    key: "tiktok",
    label: "TikTok",
    style: Object.freeze({
      font: DEFAULT_FONT_KEY,
      size: "medium",
      color: "#FFFFFF",
      outline_color: "#000000",
      outline: "none",
      shadow: "thin",
      shadow_blur: 4,
      shadow_x: 2,
      shadow_y: 2.5,
      shadow_strength: 70,
      position: "bottom",
      position_y: 50,
      chunking: "phrases",
      case: "normal",
    } satisfies CaptionStyle),
  }),
  Object.freeze({
    key: "minimal",
    label: "Minimal",
    style: Object.freeze({
      font: "league-spartan",
      size: "medium",
      color: "#FFFFFF",
      outline_color: "#000000",
      outline: "none",
      shadow: "thin",
      shadow_blur: 8,
      shadow_x: 0,
      shadow_y: 1,
      shadow_strength: 60,
      position: "bottom",
      position_y: 50,
      chunking: "line",
      case: "lower",
    } satisfies CaptionStyle),
  }),
]);

const HEX = /^#[0-9A-Fa-f]{6}$/;

const fmt = (n: number) => String(n);

/** What the 400 says is allowed, per field. */
function allowedText(field: Field): string {
  switch (field) {
    case "font":
      return `a font key listed by GET /captions/style-options (${FONTS.length} fonts)`;
    case "color":
    case "outline_color":
      return "a hex colour #RRGGBB";
    case "position_y":
      return `a number from ${POSITION_Y.accepted.min} to ${POSITION_Y.accepted.max}`;
    case "shadow_blur":
    case "shadow_strength": {
      const r = NUMBER_RANGES[field];
      return `a whole number from ${fmt(r.min)} to ${fmt(r.max)}`;
    }
    case "shadow_x":
    case "shadow_y": {
      const r = NUMBER_RANGES[field];
      return `a whole or half number from ${fmt(r.min)} to ${fmt(r.max)}, or null`;
    }
    default:
      return CHOICES[field].join(", ");
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const onGrid = (v: number, grid: number) => grid === 0 || Number.isInteger(v / grid);

/** The checked value of one field, or undefined when the value is not allowed. */
function checkField(field: Field, v: unknown): { value: unknown } | undefined {
  switch (field) {
    case "font":
      return typeof v === "string" && fontByKey(v) ? { value: v } : undefined;
    case "color":
    case "outline_color":
      return typeof v === "string" && HEX.test(v) ? { value: v.toUpperCase() } : undefined;
    case "position_y":
      return isNumber(v) && v >= POSITION_Y.accepted.min && v <= POSITION_Y.accepted.max ? { value: v + 0 } : undefined;
    case "shadow_blur":
    case "shadow_x":
    case "shadow_y":
    case "shadow_strength": {
      const r: NumberRange = NUMBER_RANGES[field];
      if (v === null) return r.nullable ? { value: null } : undefined;
      // `+ 0` turns -0 into 0.
      return isNumber(v) && v >= r.min && v <= r.max && onGrid(v, r.grid) ? { value: v + 0 } : undefined;
    }
    default: {
      const list: readonly string[] = CHOICES[field];
      return typeof v === "string" && list.includes(v) ? { value: v } : undefined;
    }
  }
}

const KNOWN = new Set<string>(STYLE_FIELDS);

export type StyleCheck = { ok: true; value: Partial<CaptionStyle> } | { ok: false; message: string };

/**
 * Checks a request's style (any subset of the fields). On success `value` holds exactly the fields given, in
 * the spec's order, colours upper-cased. On failure `message` is the 400's text (CAPTION_ERRORS).
 */
export function checkStyle(raw: unknown): StyleCheck {
  if (!isPlainObject(raw)) return { ok: false, message: CAPTION_ERRORS.styleNotObject };
  const keys = Object.keys(raw);
  for (const k of keys)
    if (!KNOWN.has(k))
      return { ok: false, message: CAPTION_ERRORS.styleUnknownField(k.length > 64 ? `${k.slice(0, 64)}…` : k) };
  const value: Record<string, unknown> = {};
  for (const field of STYLE_FIELDS) {
    if (!Object.hasOwn(raw, field)) continue;
    const checked = checkField(field, raw[field]);
    if (!checked) return { ok: false, message: CAPTION_ERRORS.styleInvalid(field, allowedText(field)) };
    value[field] = checked.value;
  }
  return { ok: true, value: value as Partial<CaptionStyle> };
}

/** A complete style: the checked partial merged onto DEFAULT_STYLE (fields absent or undefined take the default). */
export function resolveStyle(partial: Partial<CaptionStyle>): CaptionStyle {
  const out: Partial<Record<(typeof STYLE_FIELDS)[number], unknown>> = {};
  for (const field of STYLE_FIELDS) {
    const v = partial?.[field];
    out[field] = v === undefined ? DEFAULT_STYLE[field] : v;
  }
  return out as CaptionStyle;
}
