// The facts the written analysis may use (contracts/analysis.ts AdFacts), derived from what the frames stage
// measured and the transcript: nothing here is guessed, every figure is computed from the media.
import type { AdFacts, MeasuredColour, MeasuredFrame, SocialPlatform, TimedWord } from "mediagate/plugin";
import { FACTS } from "./limits.ts";
import type { AdMeasurements } from "./measure.ts";

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * Phrases that ask the viewer to act. A transcript sentence holding one (whole words, any case) is the ad's
 * call to action; the last such sentence wins, as ads end on theirs.
 */
export const CALL_TO_ACTION_PHRASES: readonly string[] = [
  "shop now",
  "buy now",
  "order now",
  "order today",
  "get yours",
  "get it now",
  "link below",
  "link in bio",
  "tap the link",
  "click the link",
  "sign up",
  "download the app",
  "download now",
  "try it free",
  "free trial",
  "use code",
  "visit our",
  "swipe up",
  "learn more",
  "book now",
  "subscribe",
  "follow us",
  "save twenty percent",
  "limited time",
];

/** The transcript's sentences: words joined until one ends with . ! or ?, each with its start time. */
export function transcriptLines(words: readonly TimedWord[]): Array<{ at: number; text: string }> {
  const lines: Array<{ at: number; text: string }> = [];
  let current: TimedWord[] = [];
  const flush = () => {
    if (current.length) lines.push({ at: round(current[0]!.start, 2), text: current.map((w) => w.text).join(" ") });
    current = [];
  };
  for (const w of words) {
    current.push(w);
    if (/[.!?]["')\]]*$/.test(w.text)) flush();
  }
  flush();
  return lines;
}

export function callToAction(lines: ReadonlyArray<{ text: string }>): string | null {
  const normalized = (s: string) =>
    ` ${s
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, " ")
      .trim()} `;
  for (let i = lines.length - 1; i >= 0; i--) {
    const text = normalized(lines[i]!.text);
    if (CALL_TO_ACTION_PHRASES.some((p) => text.includes(` ${p} `))) return lines[i]!.text;
  }
  return null;
}

/**
 * How long each measured frame stands for: frame i is the first frame of shot i, which lasts until the next
 * cut (or the end). Shots after the last measured frame are not seen and weigh nothing.
 */
function frameWeights(frames: readonly MeasuredFrame[], cutTimes: readonly number[], duration: number): number[] {
  return frames.map((frame, i) => Math.max(0, Math.min(cutTimes[i] ?? duration, duration) - frame.at));
}

/** Colours over the whole ad: each measured frame's colours weighted by the time its shot lasts. */
function overallColours(frames: readonly MeasuredFrame[], weights: readonly number[]): MeasuredColour[] {
  const totals = new Map<string, { weight: number; hex: string }>();
  frames.forEach((frame, i) => {
    for (const c of frame.colours) {
      const t = totals.get(c.name) ?? { weight: 0, hex: c.hex };
      t.weight += weights[i]! * c.share;
      totals.set(c.name, t);
    }
  });
  const seen = weights.reduce((a, b) => a + b, 0);
  return [...totals.entries()]
    .map(([name, t]) => ({ hex: t.hex, name, share: round(t.weight / Math.max(seen, 1e-9), 2) }))
    .sort((a, b) => b.share - a.share)
    .slice(0, FACTS.dominantColours);
}

export function adFacts(
  platform: SocialPlatform,
  m: AdMeasurements,
  transcript: { language: string; words: readonly TimedWord[] },
): AdFacts {
  const words = transcript.words;
  const lines = transcriptLines(words);
  const speechSeconds = words.length ? round(words.at(-1)!.end - words[0]!.start, 2) : 0;
  const shots = m.cutTimes.length + 1;
  const hookWords = words.filter((w) => w.start < FACTS.hookSeconds);
  const weights = frameWeights(m.frames, m.cutTimes, m.duration);
  const seen = weights.reduce((a, b) => a + b, 0);
  return {
    platform,
    duration_seconds: round(m.duration, 2),
    width: m.width,
    height: m.height,
    orientation: m.height > m.width ? "vertical" : m.height === m.width ? "square" : "horizontal",
    has_audio: m.hasAudio,
    cut_times: m.cutTimes,
    cuts: m.cutTimes.length,
    cuts_per_minute: m.duration > 0 ? round((m.cutTimes.length / m.duration) * 60) : 0,
    average_shot_seconds: round(m.duration / shots, 2),
    frames: m.frames,
    dominant_colours: overallColours(m.frames, weights),
    average_brightness:
      seen > 0
        ? round(m.frames.reduce((s, f, i) => s + f.brightness * weights[i]!, 0) / seen)
        : round(m.frames[0]?.brightness ?? 0),
    loudness: m.loudness,
    transcript: {
      language: transcript.language,
      text: words.map((w) => w.text).join(" "),
      words: words.length,
      speech_seconds: speechSeconds,
      // Under a second of speech gives no meaningful rate.
      words_per_minute: speechSeconds >= 1 ? Math.round((words.length / speechSeconds) * 60) : null,
      lines,
    },
    hook: {
      seconds: FACTS.hookSeconds,
      said: hookWords.map((w) => w.text).join(" "),
      shown: m.frames[0] ?? null,
      cuts: m.cutTimes.filter((t) => t < FACTS.hookSeconds).length,
    },
    call_to_action: callToAction(lines),
  };
}
