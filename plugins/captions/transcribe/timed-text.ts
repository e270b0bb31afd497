// The chain's second provider: an embedded timed-text track of the source (an MP4's mov_text, or WebVTT),
// handed over as WebVTT text (extract.ts converts with ffmpeg). A cue says which words are on screen from
// when to when, not when each word is spoken, so each cue's time is split over its words by their character
// length (a long word takes longer to say); inline timestamps (`<00:00:01.500>`, WebVTT's karaoke form)
// anchor the split where the track has them. Tags are stripped, entities decoded; tokens without a letter or
// digit (a dialogue dash, ♪) are no words. Confidence 1: the track is the author's own text.
//
// The track comes from an uploaded file, so it is parsed as hostile text: bounded size and word count, no
// regular expression that backtracks over a whole line, times that must be finite and in order.
import type { TimedWord, TranscribeRequest, Transcript, TranscriptionProvider } from "mediagate/plugin";

export const TIMED_TEXT = {
  /**
   * Only this much of a WebVTT text is read (30 minutes of dense subtitles is well under 1 MB); the extractor
   * stops writing the track near this size too, so a hostile track cannot fill the server's memory.
   */
  maxChars: 8 * 1024 * 1024,
  /** Words beyond this many are dropped (30 minutes at 10 words a second is 18,000). */
  maxWords: 50_000,
  /** A cue line longer than this is cut (nobody reads a 2,000-character caption). */
  maxLineChars: 2000,
} as const;

// hh:mm:ss.ttt or mm:ss.ttt (WebVTT); a comma before the milliseconds is accepted too (SRT habits).
const TIME = String.raw`(?:(\d{1,5}):)?(\d{1,2}):(\d{2})[.,](\d{1,3})`;
const TIMING_LINE = new RegExp(String.raw`^\s*${TIME}\s+-->\s+${TIME}(?:\s.*)?$`);
const INLINE_TIME = new RegExp(`<${TIME}>`, "g");

function seconds(h: string | undefined, m: string, s: string, ms: string): number {
  return Number(h ?? 0) * 3600 + Number(m) * 60 + Number(s) + Number(ms.padEnd(3, "0")) / 1000;
}

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  lrm: "",
  rlm: "",
};

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "";
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** Cue text without tags (`<b>`, `<v Bob>`, `<c.loud>`, `{\an8}` left by an ASS/SRT conversion), decoded. */
export function plainText(text: string): string {
  // A scan rather than /<[^>]*>/, which is quadratic on a run of '<' without '>'. A tag runs to the next '>'
  // (a literal '<' in cue text is written &lt;); an unclosed one to the end.
  let out = "";
  for (let i = 0; i < text.length; ) {
    const open = text.indexOf("<", i);
    if (open < 0) {
      out += text.slice(i);
      break;
    }
    out += `${text.slice(i, open)} `;
    const close = text.indexOf(">", open + 1);
    if (close < 0) break;
    i = close + 1;
  }
  return decodeEntities(out.replace(/\{\\[^{}]*\}/g, " "));
}

const IS_WORD = /[\p{L}\p{N}]/u;

/** The words of `text` spread over [start, end] by character length. */
export function spreadWords(text: string, start: number, end: number, confidence = 1): TimedWord[] {
  const tokens = text.split(/\s+/).filter((t) => IS_WORD.test(t));
  const total = tokens.reduce((n, t) => n + [...t].length, 0);
  if (total === 0 || !(end > start)) return [];
  const out: TimedWord[] = [];
  let done = 0;
  for (const token of tokens) {
    const from = start + ((end - start) * done) / total;
    done += [...token].length;
    const to = start + ((end - start) * done) / total;
    out.push({ text: token, start: round(from), end: round(to), confidence });
  }
  return out;
}

const round = (s: number) => Math.round(s * 1000) / 1000;

interface Cue {
  start: number;
  end: number;
  text: string;
}

/** The cues of a WebVTT text, in file order; NOTE, STYLE and REGION blocks and malformed cues are skipped. */
export function parseWebVtt(vtt: string): Cue[] {
  const lines = vtt.replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
  const cues: Cue[] = [];
  let i = 0;
  while (i < lines.length) {
    // A block runs to the next blank line; its timing line is its first or second line (after a cue id).
    while (i < lines.length && lines[i]!.trim() === "") i++;
    const block: string[] = [];
    while (i < lines.length && lines[i]!.trim() !== "") block.push(lines[i++]!.slice(0, TIMED_TEXT.maxLineChars));
    const at = block.findIndex((l) => l.includes("-->"));
    if (at < 0 || at > 1) continue;
    const m = TIMING_LINE.exec(block[at]!);
    if (!m) continue;
    const start = seconds(m[1], m[2]!, m[3]!, m[4]!);
    const end = seconds(m[5], m[6]!, m[7]!, m[8]!);
    if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) continue;
    cues.push({ start, end, text: block.slice(at + 1).join("\n") });
  }
  return cues;
}

/** A cue's words: its time split at inline timestamps, each piece spread over its words by length. */
export function cueWords(cue: Cue): TimedWord[] {
  const pieces: { at: number; text: string }[] = [];
  let at = cue.start;
  let last = 0;
  for (const m of cue.text.matchAll(INLINE_TIME)) {
    const stamp = seconds(m[1], m[2]!, m[3]!, m[4]!);
    // A stamp out of order or outside the cue is ignored: its words join the piece before, so none loses its time.
    if (!(stamp > at && stamp < cue.end)) continue;
    pieces.push({ at, text: cue.text.slice(last, m.index) });
    at = stamp;
    last = m.index + m[0].length;
  }
  pieces.push({ at, text: cue.text.slice(last) });
  const out: TimedWord[] = [];
  pieces.forEach((p, k) => {
    const until = k + 1 < pieces.length ? pieces[k + 1]!.at : cue.end;
    out.push(...spreadWords(plainText(p.text), p.at, until));
  });
  return out;
}

/** Every word of a WebVTT text, in time order (overlapping cues interleave). */
export function timedTextWords(vtt: string): TimedWord[] {
  const words: TimedWord[] = [];
  for (const cue of parseWebVtt(vtt.length > TIMED_TEXT.maxChars ? vtt.slice(0, TIMED_TEXT.maxChars) : vtt)) {
    for (const w of cueWords(cue)) {
      if (words.length >= TIMED_TEXT.maxWords) break;
      words.push(w);
    }
  }
  return words.sort((a, b) => a.start - b.start || a.end - b.end);
}

export const timedTextProvider: TranscriptionProvider = {
  name: "timed-text",
  async transcribe(request: TranscribeRequest): Promise<Transcript | null> {
    if (typeof request.timedText !== "string" || request.timedText.trim() === "") return null;
    const words = timedTextWords(request.timedText);
    // A track without a word (empty, or only ♪) says nothing about the speech: the chain listens instead.
    if (words.length === 0) return null;
    request.onProgress?.(1);
    return { language: request.language || "en", words, provider: "timed-text" };
  },
};
