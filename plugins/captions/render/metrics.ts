// Text width in pixels with a font's real metrics (opentype.js): the advance width of every glyph plus the
// font's pair kerning, at the size libass will draw, plus what the outline and the stroke add at both ends.
// The `line` chunking mode decides with it whether a card fits on one line of the safe width (layout.ts).
//
// Why not opentype.js's own getAdvanceWidth: it shapes the string first (GSUB ccmp and friends) and throws on
// lookup types it does not support yet (DejaVu Sans: "lookupType: 6 - substFormat: 2 is not yet supported").
// Widths only need the cmap, the advances and the kerning, read here directly; libass's ligatures change a
// width by a fraction of a glyph, which the side margins absorb.
import { readFileSync } from "node:fs";
// @ts-expect-error: opentype.js ships no type declarations; the few members used are typed below.
import opentypeModule from "opentype.js";

interface OtGlyph {
  index: number;
  advanceWidth?: number;
}
interface OtLookup {
  subtables: unknown[];
}
interface OtFont {
  unitsPerEm: number;
  charToGlyph(char: string): OtGlyph;
  getKerningValue(left: OtGlyph | number, right: OtGlyph | number): number;
  position?: {
    getKerningTables(script: string, language?: string): OtLookup[] | undefined;
    getKerningValue(lookups: OtLookup[], left: number, right: number): number;
  };
  kerningPairs?: Record<string, number>;
  tables: {
    os2?: { usWinAscent?: number; usWinDescent?: number; sTypoAscender?: number; sTypoDescender?: number };
    hhea?: { ascender?: number; descender?: number };
    head?: { yMax?: number; yMin?: number };
  };
}

const opentype = opentypeModule as { parse(buffer: ArrayBuffer): OtFont };

/** A parsed font reduced to what widths need. Widths are in font units; `cellUnits` is what the ASS size fills. */
export interface FontMetrics {
  /** The font file could not be read or parsed: widths are an estimate (APPROX_ADVANCE_EM per character). */
  approximate: boolean;
  unitsPerEm: number;
  /** Ascender plus descender as libass reads them (OS/2 win metrics, else typo, else the glyph box). */
  cellUnits: number;
  /** Width of `text` in font units: advances plus pair kerning (unless `kerning` is false). */
  advance(text: string, kerning?: boolean): number;
}

/** Estimated advance per character (in em) when a font cannot be parsed: wider than most faces' average. */
export const APPROX_ADVANCE_EM = 0.62;

const cache = new Map<string, FontMetrics>();

/**
 * The metrics of the font file at `path`, parsed once per path for the life of the process (a caption job
 * measures thousands of candidate lines against one or two fonts). A file that cannot be read or parsed
 * gives approximate metrics rather than a throw: the job still gets captions, a little more conservatively cut.
 */
export function fontMetrics(path: string): FontMetrics {
  const hit = cache.get(path);
  if (hit) return hit;
  let metrics: FontMetrics;
  try {
    metrics = parseMetrics(path);
  } catch {
    metrics = approximateMetrics();
  }
  cache.set(path, metrics);
  return metrics;
}

function approximateMetrics(): FontMetrics {
  return {
    approximate: true,
    unitsPerEm: 1000,
    cellUnits: 1000,
    advance: (text) => [...text].length * APPROX_ADVANCE_EM * 1000,
  };
}

function positive(n: number | undefined): number {
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0;
}

// libass (ass_font.c set_font_metrics, after VSFilter's GDI): the face's height is usWinAscent + usWinDescent
// when those are set, else the typo ascender minus descender, else the glyph bounding box, and the ASS font
// size is that height in pixels (FT_SIZE_REQUEST_TYPE_REAL_DIM).
function cellUnitsOf(font: OtFont): number {
  const os2 = font.tables.os2;
  const win = positive(os2?.usWinAscent) + positive(os2?.usWinDescent);
  if (win > 0) return win;
  const typo = (os2?.sTypoAscender ?? 0) - (os2?.sTypoDescender ?? 0);
  if (typo > 0) return typo;
  const hhea = (font.tables.hhea?.ascender ?? 0) - (font.tables.hhea?.descender ?? 0);
  if (hhea > 0) return hhea;
  const box = (font.tables.head?.yMax ?? 0) - (font.tables.head?.yMin ?? 0);
  return box > 0 ? box : font.unitsPerEm;
}

function parseMetrics(path: string): FontMetrics {
  const bytes = readFileSync(path);
  const font = opentype.parse(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const upm = positive(font.unitsPerEm) || 1000;
  // HarfBuzz (libass's shaper) applies the kerning of the text's script; captions are Latin-script text in the
  // main, and a font's DFLT script often has no kerning lookups (DejaVu Sans: AV kerns -131 under latn, 0 under DFLT).
  let lookups: OtLookup[] | undefined;
  for (const script of ["latn", "DFLT"]) {
    try {
      const found = font.position?.getKerningTables(script);
      if (found && found.length > 0) {
        lookups = found;
        break;
      }
    } catch {
      // a GPOS the parser cannot walk: fall back to the old kern table below
    }
  }
  const kern = (left: number, right: number): number => {
    try {
      if (lookups) return font.position!.getKerningValue(lookups, left, right) || 0;
      return font.kerningPairs?.[`${left},${right}`] ?? 0;
    } catch {
      return 0;
    }
  };
  const glyphs = new Map<string, { index: number; advance: number }>();
  const glyphOf = (char: string) => {
    let g = glyphs.get(char);
    if (!g) {
      const glyph = font.charToGlyph(char);
      const advance = positive(glyph?.advanceWidth);
      // A character the font lacks is drawn by a fallback font (native ffmpeg's fontconfig) or as a box: count
      // it as at least one em wide, about what an emoji or a CJK fallback takes.
      g = glyph && glyph.index > 0 ? { index: glyph.index, advance } : { index: 0, advance: Math.max(advance, upm) };
      glyphs.set(char, g);
    }
    return g;
  };
  return {
    approximate: false,
    unitsPerEm: upm,
    cellUnits: cellUnitsOf(font),
    advance(text: string, kerning = true): number {
      let total = 0;
      let previous = -1;
      for (const char of text) {
        const g = glyphOf(char);
        total += g.advance;
        if (kerning && previous > 0 && g.index > 0) total += kern(previous, g.index);
        previous = g.index;
      }
      return total;
    },
  };
}

export interface MeasureOptions {
  /** The ASS Fontsize in frame pixels (layout.ts fontPixels). */
  fontPx: number;
  /** The font's `embolden` (stroke in the text colour, a fraction of the font size, on both sides). */
  embolden?: number;
  /** The outline thickness in pixels (layout.ts outlinePixels), on both sides. */
  outlinePx?: number;
  /** Extra space after every character in pixels (the ASS `Spacing`), when the writer uses one. */
  spacingPx?: number;
  /**
   * Whether libass applies the font's kerning. It does only when the ASS file says `Kerning: yes` in
   * [Script Info] and is drawn with ffmpeg's `ass` filter: the `subtitles` filter reads the file through
   * libavformat and the header line is lost on the way (measured with ffmpeg 5.1 / libass 0.17: DejaVu Sans
   * "AVAVAVAV" at size 100 inks 432 px with `ass`, 470 px with `subtitles`). true: kerned; false: not;
   * left out: the wider of the two, a line that fits whichever way it is drawn.
   */
  kerning?: boolean;
}

/** Pixels per font unit at an ASS font size: libass fills the size with the face's cell (ascender + descender). */
export function pixelsPerUnit(metrics: FontMetrics, fontPx: number): number {
  return (Number.isFinite(fontPx) && fontPx > 0 ? fontPx : 0) / metrics.cellUnits;
}

/**
 * Width in pixels of `text` drawn on one line: the glyphs' advances and kerning, plus the outline and the
 * stroke on both ends, plus letter spacing.
 */
export function measureText(fontPath: string, text: string, opts: MeasureOptions): number {
  const metrics = fontMetrics(fontPath);
  const units =
    opts.kerning === undefined
      ? Math.max(metrics.advance(text, true), metrics.advance(text, false))
      : metrics.advance(text, opts.kerning);
  const glyphs = units * pixelsPerUnit(metrics, opts.fontPx);
  if (text.length === 0) return 0;
  const stroke = Number.isFinite(opts.embolden) && opts.embolden! > 0 ? opts.embolden! * opts.fontPx : 0;
  const outline = Number.isFinite(opts.outlinePx) && opts.outlinePx! > 0 ? opts.outlinePx! : 0;
  const spacing = Number.isFinite(opts.spacingPx) ? opts.spacingPx! * [...text].length : 0;
  return glyphs + 2 * (stroke + outline) + spacing;
}

/** measureText bound to one font and size, remembering each string's width (the card maker asks many times). */
export function textMeasurer(fontPath: string, opts: MeasureOptions): (text: string) => number {
  const seen = new Map<string, number>();
  return (text) => {
    let w = seen.get(text);
    if (w === undefined) {
      w = measureText(fontPath, text, opts);
      if (seen.size < 50_000) seen.set(text, w);
    }
    return w;
  };
}
