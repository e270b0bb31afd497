// Caption cards (plugins/captions/cards.ts): each chunking mode's card boundaries and times on known word lists
// (expectations worked out by hand in the comments), the line mode against real font metrics (a narrower frame,
// a wider face, upper case, an outline or a stroke break earlier; a word wider than the line stays whole and
// alone), the display timing (holds, pauses clearing the screen, the 0.3 s minimum, reading time, no overlaps,
// centiseconds, idempotent on its own output), `case` for display only, edited chunks, and hostile input.
import { existsSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  applyDisplayTiming,
  CHUNKING_TIMING,
  displayText,
  type MakeCardsOptions,
  MIN_DISPLAY_SECONDS,
  makeCards,
  READING_CHARS_PER_SECOND,
} from "../../plugins/captions/render/cards.ts";
import { layoutFor, safeWidth } from "../../plugins/captions/render/layout.ts";
import { measureText } from "../../plugins/captions/render/metrics.ts";
import type { Card, Frame, TimedWord } from "../../plugins/captions/types.ts";
import { drawWithLibass } from "./helpers/libass-ink.ts";

const t = suite("captions: cards");

const SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const CONDENSED = "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed.ttf";
const PORTRAIT: Frame = { width: 1080, height: 1920, fps: 30 };
const FONT_PX = 59;
const MODES = ["words", "phrases", "line"] as const;

/**
 * Words spoken one after another: each lasts `dur` seconds and the next starts `step` after the previous one's
 * start (so a 0.05 s gap by default), plus `pauses[i]` extra seconds of silence after word i.
 */
function spoken(
  text: string,
  opts: { step?: number; dur?: number; start?: number; pauses?: Record<number, number> } = {},
): TimedWord[] {
  const step = opts.step ?? 0.3;
  const dur = opts.dur ?? 0.25;
  let at = opts.start ?? 0;
  return text.split(" ").map((word, i) => {
    const w = { text: word, start: round(at), end: round(at + dur), confidence: 1 };
    at += step + (opts.pauses?.[i] ?? 0);
    return w;
  });
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function cards(
  words: TimedWord[],
  chunking: MakeCardsOptions["chunking"],
  extra: Partial<MakeCardsOptions> = {},
): Card[] {
  return makeCards(words, { chunking, fontPath: SANS, fontPx: FONT_PX, frame: PORTRAIT, ...extra });
}

const texts = (cs: Card[]) => cs.map((c) => c.text);

/** The narrowest frame whose safe width is at least `px`. */
function frameWithSafeWidth(px: number): Frame {
  let width = Math.ceil(px);
  while (safeWidth({ width, height: 1920, fps: 30 }) < px) width++;
  return { width, height: 1920, fps: 30 };
}

t("the test fonts are there (DejaVu, Debian fonts-dejavu-core: ffmpeg's fontconfig brings it)", () => {
  assert.ok(existsSync(SANS) && existsSync(CONDENSED), "DejaVuSans.ttf and DejaVuSansCondensed.ttf are needed");
});

t("displayText changes the case for display only", () => {
  assert.is(displayText("Hello, World", "normal"), "Hello, World");
  assert.is(displayText("Hello, World", "lower"), "hello, world");
  assert.is(displayText("Hello, World", "upper"), "HELLO, WORLD");
  assert.is(displayText("straße", "upper"), "STRASSE");
  const upper = cards(spoken("Hello there friend"), "line", { case: "upper" });
  assert.equal(texts(upper), ["Hello there friend"], "card text keeps the transcribed spelling");
});

t("words: runs of 3, a short run as 4, 5 as 3+2; times held through the 0.05 s gaps", () => {
  // "one two three | four five six": 3+3 costs nothing; 2+4 and 4+2 cost 0.3 each.
  assert.equal(cards(spoken("one two three four five six"), "words"), [
    // words 0.00-0.25, 0.30-0.55, 0.60-0.85; the next card starts at 0.90, 0.05 s later (<= the 0.3 s hold)
    { start: 0, end: 0.9, text: "one two three" },
    // the last word ends at 1.75; reading 13 characters at 17/s takes 0.77 s, less than the 0.85 s spoken
    { start: 0.9, end: 1.75, text: "four five six" },
  ]);
  assert.equal(texts(cards(spoken("a b c d"), "words")), ["a b c d"]);
  assert.equal(texts(cards(spoken("a b c d e"), "words")), ["a b c", "d e"]);
  assert.equal(texts(cards(spoken("a b c d e f g h i"), "words")), ["a b c", "d e f", "g h i"]);
  for (const c of cards(spoken(Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ")), "words")) {
    const n = c.text.split(" ").length;
    assert.ok(n >= 2 && n <= 4, c.text);
  }
});

t("words: a card never crosses a long pause; a lone word between pauses is its own card", () => {
  // 0.6 s more silence after "it" (a 0.65 s gap from 0.85 to 1.50): over the 0.5 s limit.
  const got = cards(spoken("we did it again now", { pauses: { 2: 0.6 } }), "words");
  assert.equal(got, [
    // ends with its last word (0.85): reading 9 characters needs 0.53 s, already spoken; the screen is blank 0.85-1.50
    { start: 0, end: 0.85, text: "we did it" },
    { start: 1.5, end: 2.05, text: "again now" },
  ]);
  assert.equal(texts(cards(spoken("so then what", { pauses: { 0: 1, 1: 1 } }), "words")), ["so", "then", "what"]);
  // A 0.4 s pause is no hard break in `words`, only a preferred cut.
  assert.equal(texts(cards(spoken("a b c d e f", { pauses: { 1: 0.35 } }), "words")), ["a b", "c d e f"]);
});

t("words: punctuation is a preferred cut", () => {
  // [We did it.][Go now]: 0 + 0.3 - (2 for the full stop + 0.2 for the gap); [We did][it. Go now]: 0.3 + 0 - 0.2.
  assert.equal(texts(cards(spoken("We did it. Go now"), "words")), ["We did it.", "Go now"]);
  // A comma earns less than a lone word costs: [Well,][I think we can] = 4 + 0.3 - 1.2; [Well, I][think we can]
  // and [Well, I think][we can] both cost 0.3 - 0.2, and a tie goes to the later cut.
  assert.equal(texts(cards(spoken("Well, I think we can"), "words")), ["Well, I think", "we can"]);
});

t("phrases: up to 7 words, about 1.5-2.5 s, cut at sentence ends", () => {
  // 14 words without punctuation: 7+7 (2.05 s each) costs 1.0 - 0.2; 5+5+4 pays for cards under 1.5 s.
  const fourteen = cards(spoken("a b c d e f g h i j k l m n"), "phrases");
  assert.equal(texts(fourteen), ["a b c d e f g", "h i j k l m n"]);
  assert.equal(fourteen[0], { start: 0, end: 2.1, text: "a b c d e f g" });
  const two = cards(spoken("The quick brown fox jumps high. Then the lazy dog sleeps on."), "phrases");
  assert.equal(texts(two), ["The quick brown fox jumps high.", "Then the lazy dog sleeps on."]);
  // 20 words: no card over 7 words.
  for (const c of cards(spoken(Array.from({ length: 20 }, (_, i) => `w${i}`).join(" ")), "phrases"))
    assert.ok(c.text.split(" ").length <= 7);
});

t("phrases: held through a 0.45 s pause, not through a 0.6 s one (a hard cut)", () => {
  const held = cards(
    spoken("The quick brown fox jumps high. Then the lazy dog sleeps on.", { pauses: { 5: 0.4 } }),
    "phrases",
  );
  // "high." ends at 1.75; "Then" starts at 2.20: 0.45 s of silence, within the 0.5 s hold.
  assert.equal(held[0], { start: 0, end: 2.2, text: "The quick brown fox jumps high." });
  const cut = cards(spoken("one two three four five six seven eight", { pauses: { 3: 0.55 } }), "phrases");
  assert.equal(texts(cut), ["one two three four", "five six seven eight"]);
  // "four" ends at 1.15, "five" starts at 1.75: the first card ends with its last word (reading 18 characters
  // takes 1.06 s, already spoken) and the screen is blank for 0.6 s.
  assert.is(cut[0]!.end, 1.15);
  assert.is(cut[1]!.start, 1.75);
});

t("line: a new card after every punctuation mark and after 4 words at the latest", () => {
  assert.equal(texts(cards(spoken("Hi, you there. Yes"), "line")), ["Hi,", "you there.", "Yes"]);
  // 9 short words: three cards at least; 4+4+1 pays 0.6 for the lone word, 4+3+2 / 3+3+3 / ... tie and the
  // later cut wins from the end: [a b c d][e f g][h i].
  assert.equal(texts(cards(spoken("a b c d e f g h i"), "line")), ["a b c d", "e f g", "h i"]);
  assert.equal(texts(cards(spoken("a b c d"), "line")), ["a b c d"]);
});

t("line: measured with real metrics, a narrower frame breaks earlier", () => {
  const words = spoken("alpha beta gamma delta");
  const two = measureText(SANS, "alpha beta", { fontPx: FONT_PX });
  const three = measureText(SANS, "alpha beta gamma", { fontPx: FONT_PX });
  const four = measureText(SANS, "alpha beta gamma delta", { fontPx: FONT_PX });
  assert.equal(texts(cards(words, "line", { frame: frameWithSafeWidth(four) })), ["alpha beta gamma delta"]);
  assert.equal(texts(cards(words, "line", { frame: frameWithSafeWidth(four - 1) })), ["alpha beta", "gamma delta"]);
  assert.equal(texts(cards(words, "line", { frame: frameWithSafeWidth((two + three) / 2) })), [
    "alpha beta",
    "gamma delta",
  ]);
  const narrow = cards(words, "line", { frame: frameWithSafeWidth(two - 1) });
  assert.equal(texts(narrow), ["alpha", "beta", "gamma", "delta"]);
  // Every card of a line-mode run fits the safe width as measured.
  const frame = frameWithSafeWidth((two + three) / 2);
  for (const c of cards(spoken("the quick brown fox jumps over the lazy dog again and again"), "line", { frame })) {
    assert.ok(
      c.text.split(" ").length === 1 || measureText(SANS, c.text, { fontPx: FONT_PX }) <= safeWidth(frame),
      c.text,
    );
  }
});

t("line: a wider face breaks earlier than a condensed one at the same size", () => {
  const words = spoken("one two three four");
  const wide = measureText(SANS, "one two three four", { fontPx: FONT_PX });
  const narrow = measureText(CONDENSED, "one two three four", { fontPx: FONT_PX });
  assert.ok(narrow < wide);
  const frame = frameWithSafeWidth((wide + narrow) / 2);
  assert.equal(texts(cards(words, "line", { frame, fontPath: CONDENSED })), ["one two three four"]);
  assert.ok(cards(words, "line", { frame, fontPath: SANS }).length > 1);
});

t("line: upper case, an outline and a stroke are measured as drawn", () => {
  const words = spoken("Hello there");
  const normal = measureText(SANS, "Hello there", { fontPx: FONT_PX });
  const upper = measureText(SANS, "HELLO THERE", { fontPx: FONT_PX });
  const frame = frameWithSafeWidth((normal + upper) / 2);
  assert.equal(texts(cards(words, "line", { frame })), ["Hello there"]);
  assert.equal(texts(cards(words, "line", { frame, case: "lower" })), ["Hello there"]);
  assert.equal(
    texts(cards(words, "line", { frame, case: "upper" })),
    ["Hello", "there"],
    "spelling kept, the upper-case line is wider",
  );
  const tight = frameWithSafeWidth(normal + 1);
  assert.is(cards(words, "line", { frame: tight }).length, 1);
  assert.is(cards(words, "line", { frame: tight, outline: "thick" }).length, 2); // 2 x 6.5 px more
  assert.is(cards(words, "line", { frame: tight, embolden: 0.02 }).length, 2); // 2 x 1.2 px more
});

t("line: a word wider than the line stays whole, alone on its card", () => {
  const words = spoken("a supercalifragilisticexpialidocious b c");
  const frame = frameWithSafeWidth(measureText(SANS, "supercalifragilisticexpialidocious", { fontPx: FONT_PX }) / 2);
  assert.equal(texts(cards(words, "line", { frame })), ["a", "supercalifragilisticexpialidocious", "b c"]);
  // words and phrases keep it whole too (two lines cannot hold it with a neighbour either).
  assert.equal(texts(cards(words, "phrases", { frame })), ["a", "supercalifragilisticexpialidocious", "b c"]);
});

t("line: the screen clears during a pause longer than 0.35 s", () => {
  // "one two" 0.00-0.55; 0.4 s more after "two": "three" at 1.00, a 0.45 s gap.
  const got = cards(spoken("one two three four", { pauses: { 1: 0.4 } }), "line");
  assert.equal(got, [
    // reading 7 characters takes 0.42 s (before 0.55): ends with "two"
    { start: 0, end: 0.55, text: "one two" },
    // the last card: "four" ends at 1.55 but 10 characters take 0.59 s to read
    { start: 1, end: 1.59, text: "three four" },
  ]);
  // A 0.3 s gap (after 0.05 + 0.25) is held through: the first card runs to the next.
  const held = cards(spoken("one two. three four", { pauses: { 1: 0.25 } }), "line");
  assert.equal(held[0], { start: 0, end: 0.85, text: "one two." });
  // Reading time reaches into a pause but stops more than 0.35 s before the next card.
  const quick = [
    { text: "Extraordinary", start: 0, end: 0.2, confidence: 1 },
    { text: "things", start: 1.0, end: 1.3, confidence: 1 },
  ];
  const r = cards(quick, "line");
  // 13 characters need 0.77 s; the next card starts at 1.00, so the first stops at 0.64 (1.00 - 0.35 - 0.01).
  assert.equal(r[0], { start: 0, end: 0.64, text: "Extraordinary" });
  assert.ok(r[1]!.start - r[0]!.end > CHUNKING_TIMING.line.hold);
  // Without a next card, reading time counts in full.
  assert.equal(cards(quick.slice(0, 1), "line"), [{ start: 0, end: 0.77, text: "Extraordinary" }]);
});

t("every card is shown at least 0.3 s, later cards start late rather than overlap", () => {
  assert.equal(cards([{ text: "Hi", start: 1, end: 1, confidence: 1 }], "words"), [{ start: 1, end: 1.3, text: "Hi" }]);
  const same = [
    { text: "A.", start: 2, end: 2, confidence: 1 },
    { text: "B.", start: 2, end: 2, confidence: 1 },
    { text: "C.", start: 2, end: 2.05, confidence: 1 },
  ];
  assert.equal(cards(same, "line"), [
    { start: 2, end: 2.3, text: "A." },
    { start: 2.3, end: 2.6, text: "B." },
    { start: 2.6, end: 2.9, text: "C." },
  ]);
  assert.ok(MIN_DISPLAY_SECONDS === 0.3 && READING_CHARS_PER_SECOND > 0);
});

/** A deterministic pseudo-random transcript: varied word lengths, gaps from 0 to 1.2 s, some punctuation. */
function transcript(n: number, seed: number): TimedWord[] {
  let x = seed;
  const rand = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  const words: TimedWord[] = [];
  let at = 0.5;
  for (let i = 0; i < n; i++) {
    const len = 1 + Math.floor(rand() * 11);
    let text = Array.from({ length: len }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(rand() * 26)]).join("");
    const p = rand();
    if (p < 0.06) text += ".";
    else if (p < 0.12) text += ",";
    const dur = Math.round((0.05 + rand() * 0.5) * 1000) / 1000;
    words.push({ text, start: Math.round(at * 1000) / 1000, end: Math.round((at + dur) * 1000) / 1000, confidence: 1 });
    const r = rand();
    at += dur + (r < 0.7 ? rand() * 0.12 : r < 0.9 ? rand() * 0.5 : 0.4 + rand() * 0.8);
  }
  return words;
}

t(
  "invariants on long transcripts, every mode: words in order, no overlaps, minimum time, centiseconds, bounded ends, idempotent timing",
  () => {
    for (const seed of [1, 7, 42]) {
      const words = transcript(600, seed);
      for (const mode of MODES) {
        const { hold, pause, maxWords } = CHUNKING_TIMING[mode];
        const got = cards(words, mode, { frame: { width: 720, height: 1280, fps: 30 }, fontPx: 40 });
        assert.equal(
          got.flatMap((c) => c.text.split(" ")),
          words.map((w) => w.text),
          `${mode}: every word once, in order`,
        );
        let w = 0;
        for (let i = 0; i < got.length; i++) {
          const c = got[i]!;
          const mine = words.slice(w, w + c.text.split(" ").length);
          w += mine.length;
          const tag = `${mode} seed ${seed} card ${i} ${JSON.stringify(c)}`;
          assert.ok(mine.length <= maxWords, tag);
          for (const x of [c.start, c.end])
            assert.ok(Math.abs(x * 100 - Math.round(x * 100)) < 1e-6, `${tag}: centiseconds`);
          assert.ok(c.end - c.start >= MIN_DISPLAY_SECONDS - 1e-9, `${tag}: at least 0.3 s`);
          if (i > 0) assert.ok(got[i - 1]!.end <= c.start + 1e-9, `${tag}: no overlap`);
          assert.ok(c.start >= mine[0]!.start - 0.005, `${tag}: not before its first word`);
          const lastEnd = Math.max(...mine.map((m) => m.end));
          const read = c.start + Math.max(MIN_DISPLAY_SECONDS, [...c.text].length / READING_CHARS_PER_SECOND);
          // Ends with its last word or its reading time, plus at most the hold (held to the next card).
          assert.ok(c.end <= Math.max(lastEnd, read) + hold + 0.011, `${tag}: end within the hold`);
          if (c.end > Math.max(lastEnd, read) + 0.011)
            assert.is(c.end, got[i + 1]?.start, `${tag}: only held up to the next card`);
          for (let k = 1; k < mine.length; k++)
            assert.ok(
              mine[k]!.start - mine[k - 1]!.end <= pause + 0.01,
              `${tag}: no pause inside a card (${mine[k]!.start - mine[k - 1]!.end})`,
            );
          if (mode === "line")
            for (const m of mine.slice(0, -1))
              assert.not.match(m.text, /[.,]$/, `${tag}: punctuation ends a line card`);
          if (i + 1 < got.length) {
            const next = words[w]!;
            if (
              next.start - lastEnd > hold + 0.01 &&
              got[i + 1]!.start - c.start >= MIN_DISPLAY_SECONDS + hold + 0.02
            ) {
              assert.ok(got[i + 1]!.start - c.end > hold, `${tag}: the screen clears in a pause`);
            }
          }
        }
        assert.equal(applyDisplayTiming(got, mode), got, `${mode}: timing its own output changes nothing`);
      }
    }
  },
);

t(
  "edited chunks get the same display timing: sorted, trimmed, empty texts and broken times dropped, overlaps cut",
  () => {
    const edited = [
      { start: 3, end: 3.5, text: "  third  " },
      { start: 0, end: 2.5, text: "first, long and OVERLAPPING" },
      { start: 1, end: 1.2, text: "second" },
      { start: 5, end: 5, text: "" },
      { start: Number.NaN, end: 6, text: "no start" },
      { start: 6, end: Number.NaN, text: "no end" },
      { start: -2, end: -1, text: "negative" },
    ] as Card[];
    assert.equal(applyDisplayTiming(edited, "phrases"), [
      { start: 0, end: 0.3, text: "first, long and OVERLAPPING" }, // cut 0.3 s on, where the next card must start
      { start: 0.3, end: 1, text: "negative" }, // clamped to 0-0 and sorted after the other start at 0 (stable), held to "second"
      { start: 1, end: 1.36, text: "second" }, // 6 characters need 0.36 s to read; 1.64 s of silence follow
      { start: 3, end: 3.5, text: "third" }, // trimmed
      { start: 6, end: 6.36, text: "no end" }, // a zero-length chunk, shown for its reading time
    ]);
  },
);

t("hostile input: nothing, junk entries, NaN, unsorted times, zero-length words, no font, no frame", () => {
  for (const mode of MODES) {
    assert.equal(cards([], mode), []);
    assert.equal(applyDisplayTiming([], mode), []);
    const junk = [
      null,
      7,
      { text: 5, start: 0, end: 1 },
      { text: "   ", start: 0, end: 1 },
      { text: "nan", start: Number.NaN, end: 1 },
      { text: "inf", start: Number.POSITIVE_INFINITY, end: 1 },
      { text: "ok", start: 0.5, end: Number.NaN },
    ] as unknown as TimedWord[];
    assert.equal(cards(junk, mode), [{ start: 0.5, end: 0.8, text: "ok" }]);
    const sorted = spoken("one two three four five six seven eight nine ten");
    const shuffled = [
      sorted[7]!,
      sorted[2]!,
      sorted[9]!,
      sorted[0]!,
      sorted[5]!,
      sorted[1]!,
      sorted[8]!,
      sorted[3]!,
      sorted[6]!,
      sorted[4]!,
    ];
    assert.equal(cards(shuffled, mode), cards(sorted, mode), `${mode}: unsorted input is sorted first`);
    const zero = sorted.map((w) => ({ ...w, end: w.start }));
    const z = cards(zero, mode);
    for (let i = 0; i < z.length; i++) {
      assert.ok(z[i]!.end - z[i]!.start >= MIN_DISPLAY_SECONDS - 1e-9);
      if (i > 0) assert.ok(z[i - 1]!.end <= z[i]!.start);
    }
    const multi = cards([{ text: "new\nline\there", start: 0, end: 1, confidence: 1 }], mode);
    assert.equal(texts(multi), ["new line here"]);
    // A font that is not there: approximate widths, cards all the same.
    assert.ok(cards(sorted, mode, { fontPath: "/nonexistent/font.ttf" }).length > 0);
    // A frame of nothing: every line-mode card is one word; nothing throws.
    const none = cards(sorted, mode, { frame: { width: 0, height: 0, fps: 0 }, fontPx: Number.NaN });
    assert.equal(
      none.flatMap((c) => c.text.split(" ")),
      sorted.map((w) => w.text),
    );
  }
  assert.equal(texts(cards(spoken("a b c d e"), "nonsense" as "words")), texts(cards(spoken("a b c d e"), "words")));
  // Not an array at all.
  assert.equal(
    makeCards(null as unknown as TimedWord[], { chunking: "line", fontPath: SANS, fontPx: 59, frame: PORTRAIT }),
    [],
  );
  assert.equal(applyDisplayTiming(undefined as unknown as Card[], "line"), []);
});

t("a long transcript is cut quickly", () => {
  const words = transcript(20_000, 3);
  const began = performance.now();
  for (const mode of MODES) assert.ok(cards(words, mode).length > 0);
  const ms = performance.now() - began;
  assert.ok(ms < 5000, `${ms.toFixed(0)} ms for 3 x 20,000 words`);
});

/** Ink height in pixels of `text` drawn by libass (native ffmpeg) on `frame` with the layout's side margins. */
function inkHeight(filter: "ass" | "subtitles", frame: Frame, fontPx: number, text: string): number {
  const { marginX } = layoutFor(frame);
  const line = {
    filter,
    ...frame,
    wrapStyle: 0,
    fontFile: SANS,
    family: "DejaVu Sans",
    fontPx,
    marginX,
    text,
  } as const;
  const px = drawWithLibass(line);
  let top = -1;
  let bottom = -1;
  for (let y = 0; y < frame.height; y++) {
    for (let x = 0; x < frame.width; x++) {
      if (px[y * frame.width + x]! > 128) {
        if (top < 0) top = y;
        bottom = y;
        break;
      }
    }
  }
  return top < 0 ? 0 : bottom - top + 1;
}

t("line: a card measured to fit is drawn by libass on one line, with either filter, at the tightest frame", () => {
  const text = "AVAST Wavy TOYS today";
  const words = spoken(text);
  const fontPx = 40;
  const tightest = frameWithSafeWidth(measureText(SANS, text, { fontPx }));
  const frame = { ...tightest, height: 400 };
  assert.equal(texts(cards(words, "line", { frame, fontPx })), [text]);
  for (const filter of ["ass", "subtitles"] as const) {
    const h = inkHeight(filter, frame, fontPx, text);
    assert.ok(h > 0 && h < fontPx * 1.2, `${filter}: ${h} px of ink for one line at size ${fontPx}`);
  }
  // The check sees a wrap, and the measure is sharp: 5 px less room and libass breaks the same text in two.
  const cramped = { ...frameWithSafeWidth(measureText(SANS, text, { fontPx }) - 5), height: 400 };
  assert.ok(inkHeight("subtitles", cramped, fontPx, text) > fontPx * 1.4);
  assert.ok(cards(words, "line", { frame: cramped, fontPx }).length > 1);
});

t.run();
