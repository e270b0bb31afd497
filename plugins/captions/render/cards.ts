// Timed words into caption cards (spec part 2, "Caption style object": `chunking`, `case` and "Timing").
//
// Two steps. Grouping cuts the words into cards: hard breaks first (a pause longer than the mode's `pause`;
// in `line` mode also every punctuation mark), then inside each run between hard breaks the cheapest way to
// cut it under the mode's rules (words per card, one line or two measured with the font's real metrics, the
// duration a card should have) preferring cuts at punctuation and pauses (a small dynamic programme, linear
// in the number of words). Display timing then decides when each card shows: from its first word to its last
// word, held through a pause no longer than the mode's `hold`, long enough to read, never over the next card.
// Edited chunks (POST /captions/<job_id>/edit) get the same display timing (applyDisplayTiming) and applying it
// again changes nothing, so cards read back with GET .../chunks and sent unchanged are burned as they were.
//
// All times are worked in integer centiseconds, the precision of an ASS file, and returned as seconds.

import type { CaptionStyle, Card, Frame, TimedWord } from "../types.ts";
import { layoutFor, outlinePixels } from "./layout.ts";
import { textMeasurer } from "./metrics.ts";

type Chunking = CaptionStyle["chunking"];
type Case = CaptionStyle["case"];

/**
 * Per mode, in seconds. `hold`: a card stays on screen through a pause up to this long (until the next card
 * starts); in a longer pause the screen is blank for more than `hold` before the next card (unless the 0.3 s
 * minimum leaves less than that: the card then runs on to the next rather than blink off for an instant).
 * `pause`: a card never spans a silence longer than this between two of its words.
 *
 * The spec gives phrases 0.5 s and line 0.35 s; for `words` it does not show the hold. Ours is 0.3 s, the
 * minimum display time, so quick flips stay quick and a gap a little longer than a breath blanks the screen;
 * its cards may bridge a pause up to 0.5 s (`words` has no rule against it, and 2-4 words need the room).
 */
export const CHUNKING_TIMING: Readonly<
  Record<Chunking, { hold: number; pause: number; maxWords: number; maxLines: number }>
> = {
  words: { hold: 0.3, pause: 0.5, maxWords: 4, maxLines: 2 },
  phrases: { hold: 0.5, pause: 0.5, maxWords: 7, maxLines: 2 },
  line: { hold: 0.35, pause: 0.35, maxWords: 4, maxLines: 1 },
};

/** Every card is on screen at least this long (spec). */
export const MIN_DISPLAY_SECONDS = 0.3;

/**
 * Long enough to read: a card stays up at least its length in characters divided by this (17 characters a
 * second is the usual adult subtitle reading speed), bounded by the next card's start. The extension only
 * reaches into a pause: a card whose words take longer to speak than to read is not changed by it.
 */
export const READING_CHARS_PER_SECOND = 17;

/** The phrases mode aims at cards of this many seconds (spec: about 1.5-2.5 s). */
export const PHRASE_SECONDS = { min: 1.5, max: 2.5 } as const;

const MIN_CS = Math.round(MIN_DISPLAY_SECONDS * 100);

/** How a card's text is drawn; the text itself (GET .../chunks, edits) keeps the transcribed spelling. */
export function displayText(text: string, c: Case): string {
  if (c === "lower") return text.toLowerCase();
  if (c === "upper") return text.toUpperCase();
  return text;
}

export interface MakeCardsOptions {
  chunking: Chunking;
  /** The font file the card is drawn in (FontEntry.path); widths are measured with its metrics. */
  fontPath: string;
  /** The ASS font size in frame pixels (layout.ts fontPixels). */
  fontPx: number;
  frame: Frame;
  /** The font's `embolden` stroke (fraction of the font size on each side). */
  embolden?: number;
  /** The style's `case`: `upper` text is wider, so lines are measured as drawn. Default `normal`. */
  case?: Case;
  /** The style's `outline`, which widens every line by its thickness on both ends. Default `none`. */
  outline?: CaptionStyle["outline"];
  /**
   * Whether the ASS file is drawn with the font's kerning (metrics.ts MeasureOptions.kerning): true when it
   * says `Kerning: yes` and is burned with the `ass` filter, false with the `subtitles` filter; left out, lines
   * are measured the wider way, so they fit either way.
   */
  kerning?: boolean;
}

/** A word with its times in centiseconds, sorted and cleaned (see cleanWords). */
interface Word {
  text: string;
  start: number;
  end: number;
}

interface Span {
  text: string;
  start: number;
  end: number;
}

const SENTENCE_END = /[.!?…。！？‼⁇⁈⁉]["'”’»)\]]*$/u;
const CLAUSE_END = /[,;:—–،、，；：]["'”’»)\]]*$/u;

/** 2 after a sentence end, 1 after other punctuation (a comma, a colon, a dash), else 0. */
function punctuation(text: string): number {
  if (SENTENCE_END.test(text)) return 2;
  if (CLAUSE_END.test(text)) return 1;
  return 0;
}

function toCs(seconds: number): number {
  return Math.round(seconds * 100);
}

function seconds(cs: number): number {
  return Math.round(cs) / 100;
}

/** Collapses runs of white space (a recognizer's new lines, tabs) to one space; "" when nothing is left. */
function cleanText(raw: unknown): string {
  return typeof raw === "string" ? raw.replace(/\s+/gu, " ").trim() : "";
}

/**
 * Hostile or sloppy input made usable: entries without text or without a finite start are dropped, a missing
 * or earlier end becomes the start (a zero-length word), negative times become 0, and the words are sorted by
 * start (stably, so equal starts keep their order).
 */
function cleanTimed<T extends { text: string; start: number; end: number }>(items: readonly unknown[]): T[] {
  const out: T[] = [];
  if (!Array.isArray(items)) return out;
  for (const item of items) {
    if (!item || typeof item !== "object") continue;
    const raw = item as Record<string, unknown>;
    const text = cleanText(raw.text);
    const start = typeof raw.start === "number" ? raw.start : Number.NaN;
    if (!text || !Number.isFinite(start)) continue;
    const s = Math.max(0, toCs(start));
    const e = typeof raw.end === "number" && Number.isFinite(raw.end) ? Math.max(s, toCs(raw.end)) : s;
    out.push({ text, start: s, end: e } as T);
  }
  return out
    .map((w, i) => ({ w, i }))
    .sort((a, b) => a.w.start - b.w.start || a.i - b.i)
    .map(({ w }) => w);
}

/**
 * Display timing over cards whose start and end are the span of their words (centiseconds, sorted):
 * - a card starts with its first word, or 0.3 s after the previous card's start when that is later (every
 *   card is shown at least 0.3 s, so a card after a very short one starts a moment late);
 * - it ends with its last word, later when it needs time to be read, never after the next card's start, and
 *   runs on to the next card when the silence left before it is no longer than `hold`;
 * - the reading extension stops more than `hold` before the next card, so a long pause still blanks the screen.
 * Idempotent: timing cards already timed gives them back unchanged.
 */
function timeCards(spans: Span[], chunking: Chunking): Card[] {
  const hold = toCs(CHUNKING_TIMING[chunking]?.hold ?? CHUNKING_TIMING.words.hold);
  const starts: number[] = [];
  for (let i = 0; i < spans.length; i++)
    starts.push(i === 0 ? spans[i]!.start : Math.max(spans[i]!.start, starts[i - 1]! + MIN_CS));
  const cards: Card[] = [];
  for (let i = 0; i < spans.length; i++) {
    const start = starts[i]!;
    const next = i + 1 < spans.length ? starts[i + 1]! : Number.POSITIVE_INFINITY;
    const read = start + Math.max(MIN_CS, Math.ceil(([...spans[i]!.text].length * 100) / READING_CHARS_PER_SECOND));
    let end = Math.max(spans[i]!.end, start + MIN_CS, Math.min(read, next - hold - 1));
    if (next - end <= hold) end = next;
    end = Math.min(end, next);
    cards.push({ start: seconds(start), end: seconds(end), text: spans[i]!.text });
  }
  return cards;
}

/**
 * Edited chunks through the same display timing as automatic cards: entries with empty text or no finite start
 * are dropped (an empty text removes a caption), the rest sorted by start, texts trimmed and kept as written.
 */
export function applyDisplayTiming(cards: readonly Card[], chunking: Chunking): Card[] {
  return timeCards(cleanTimed<Span>(cards), chunking);
}

/** The card maker's scoring: what a card of words [i, j) of a run costs; lower is better. */
function cardCost(chunking: Chunking, run: Word[], i: number, j: number): number {
  const count = j - i;
  const secondsLong = (run[j - 1]!.end - run[i]!.start) / 100;
  if (chunking === "words") {
    // 3 words is the quick flip; 2 and 4 are fine; 1 only when nothing else fits (a lone word between pauses).
    const size = count === 3 ? 0 : count === 1 ? 4 : 0.3;
    return size + Math.max(0, secondsLong - 1.5);
  }
  if (chunking === "phrases") {
    const short = Math.max(0, PHRASE_SECONDS.min - secondsLong);
    const long = Math.max(0, secondsLong - PHRASE_SECONDS.max);
    return 0.5 + (count === 1 ? 1.5 : 0) + 2 * (short + long);
  }
  // line: as few cards as fit, a lone word last.
  return 1 + (count === 1 ? 0.6 : 0);
}

/** What cutting after word i of a run earns (subtracted): punctuation, and a pause in proportion to its length. */
function cutBonus(run: Word[], i: number): number {
  const p = punctuation(run[i]!.text);
  const gap = Math.max(0, run[i + 1]!.start - run[i]!.end) / 100;
  return (p === 2 ? 2 : p === 1 ? 1 : 0) + 4 * Math.min(gap, 0.5);
}

/**
 * Cuts words into cards (Card[] in seconds, display timing applied). `words`: 2-4 words a card, quick flips;
 * `phrases`: up to 7 words, about 1.5-2.5 s, cut at punctuation and pauses by preference; `line`: one line
 * of the safe width in the chosen font, size, case, outline and stroke, a new card after every punctuation mark
 * and after 4 words at the latest, the screen blank in any pause longer than 0.35 s. A word wider than the
 * line stays whole, alone on its card. `words` and `phrases` cards are kept to two lines. Card texts keep the
 * transcribed spelling; `case` is only measured here and drawn by the ASS writer.
 */
export function makeCards(words: readonly TimedWord[], opts: MakeCardsOptions): Card[] {
  const chunking: Chunking = opts.chunking in CHUNKING_TIMING ? opts.chunking : "words";
  const rules = CHUNKING_TIMING[chunking];
  const clean = cleanTimed<Word>(words as readonly unknown[]);
  if (clean.length === 0) return [];

  const fontPx = Number.isFinite(opts.fontPx) && opts.fontPx > 0 ? opts.fontPx : 0;
  const measure = textMeasurer(opts.fontPath, {
    fontPx,
    embolden: opts.embolden,
    outlinePx: outlinePixels(opts.outline ?? "none", fontPx),
    kerning: opts.kerning,
  });
  const width = layoutFor(opts.frame).safeWidth;
  const shown = (text: string) => displayText(text, opts.case ?? "normal");
  // Lines a card takes when wrapped word by word (libass's smart wrapping never takes more lines than this).
  const fits = (run: Word[], i: number, j: number): boolean => {
    if (j - i === 1) return true;
    let lines = 1;
    let line = shown(run[i]!.text);
    if (measure(line) > width) return false;
    for (let k = i + 1; k < j; k++) {
      const word = shown(run[k]!.text);
      const longer = `${line} ${word}`;
      if (measure(longer) <= width) line = longer;
      else if (++lines > rules.maxLines || measure(word) > width) return false;
      else line = word;
    }
    return true;
  };

  const spans: Span[] = [];
  const pause = toCs(rules.pause);
  let from = 0;
  for (let k = 0; k < clean.length; k++) {
    const last = k === clean.length - 1;
    const hard =
      last || clean[k + 1]!.start - clean[k]!.end > pause || (chunking === "line" && punctuation(clean[k]!.text) > 0);
    if (!hard) continue;
    for (const [i, j] of cutRun(clean.slice(from, k + 1), chunking, rules.maxWords, fits)) {
      const run = clean.slice(from + i, from + j);
      spans.push({
        text: run.map((w) => w.text).join(" "),
        start: run[0]!.start,
        end: Math.max(...run.map((w) => w.end)),
      });
    }
    from = k + 1;
  }
  return timeCards(spans, chunking);
}

/** The cheapest cut of a run into cards, as [from, to) word index pairs. Ties go to the later cut. */
function cutRun(
  run: Word[],
  chunking: Chunking,
  maxWords: number,
  fits: (run: Word[], i: number, j: number) => boolean,
): Array<[number, number]> {
  const n = run.length;
  const best = new Array<number>(n + 1).fill(Number.POSITIVE_INFINITY);
  const back = new Array<number>(n + 1).fill(0);
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    for (let i = Math.max(0, j - maxWords); i < j; i++) {
      if (!Number.isFinite(best[i]!)) continue;
      if (!fits(run, i, j)) continue;
      const cost = best[i]! + cardCost(chunking, run, i, j) - (j < n ? cutBonus(run, j - 1) : 0);
      if (cost <= best[j]! + 1e-9) {
        best[j] = cost;
        back[j] = i;
      }
    }
  }
  const cuts: Array<[number, number]> = [];
  for (let j = n; j > 0; j = back[j]!) cuts.push([back[j]!, j]);
  return cuts.reverse();
}
