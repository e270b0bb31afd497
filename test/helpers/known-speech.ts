// Speech whose word times are known to the sample, for measuring a transcription's timing: each word said
// alone by eSpeak NG, its silent edges trimmed to 20 ms, 50 ms between words, 500 ms between sentences (and
// 300 ms before the first). And the pairing of known words with recognized ones. eSpeak NG lives in
// plugins/voiceover/espeak.ts and is moving to lib/speech/ (exported from mediagate/plugin): whichever exists
// is used, through a variable path so this file compiles before and after the move.
import type { TimedWord } from "../../contracts/speech.ts";
import { concatBytes } from "../../lib/formats/bytes.ts";
import { SPHINX_RATE, sphinxSamples, sphinxWav } from "../../plugins/captions/transcribe/sphinx-wav.ts";

export type Voice = { voice: string; pitch: number; speed: number; gap: number };
export const VOICE: Voice = { voice: "en-us", pitch: 50, speed: 160, gap: 0 };

/** An optional module, imported through a variable path so the importer compiles whether or not it exists. */
export async function optionalModule(path: string): Promise<Record<string, any> | null> {
  try {
    return await import(path);
  } catch {
    return null;
  }
}

/** eSpeak NG's `speak`, wherever it lives now. */
export async function espeak(): Promise<(text: string, voice: Voice) => Promise<{ bytes: Uint8Array }>> {
  const plugin = await optionalModule("mediagate/plugin");
  if (typeof plugin?.speak === "function") return plugin.speak;
  for (const path of ["../../lib/speech/espeak.ts", "../../plugins/voiceover/espeak.ts"]) {
    const m = await optionalModule(path);
    if (typeof m?.speak === "function") return m.speak;
  }
  throw new Error("no eSpeak module found");
}

/** The samples one after another in one array. */
export function joinSamples(parts: readonly Int16Array[]): Int16Array {
  const bytes = concatBytes(parts.map((p) => new Uint8Array(p.buffer, p.byteOffset, p.byteLength)));
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
}

/** Where a word is audible (louder than 300) in its samples: the first and the last such sample. */
function audible(x: Int16Array): { first: number; last: number } {
  let first = 0;
  let last = x.length - 1;
  while (first < x.length && Math.abs(x[first]!) < 300) first++;
  while (last > first && Math.abs(x[last]!) < 300) last--;
  return { first, last };
}

/** A clip of known speech: the 16 kHz WAV, its length, and each sentence's words with their known times. */
export interface KnownSpeech {
  wav: Uint8Array;
  seconds: number;
  sentences: TimedWord[][];
}

/** The sentences said word by word, as the header says. */
export async function wordByWordSpeech(sentences: readonly string[], voice = VOICE): Promise<KnownSpeech> {
  const speak = await espeak();
  const parts: Int16Array[] = [];
  let at = 0; // samples so far
  const append = (samples: Int16Array) => {
    parts.push(samples);
    at += samples.length;
  };
  const silence = (seconds: number) => append(new Int16Array(Math.round(seconds * SPHINX_RATE)));
  const pad = Math.round(0.02 * SPHINX_RATE);
  silence(0.3);
  const timed: TimedWord[][] = [];
  for (const sentence of sentences) {
    const words: TimedWord[] = [];
    for (const text of sentence.split(" ")) {
      const x = sphinxSamples((await speak(text, voice)).bytes);
      const { first, last } = audible(x);
      const from = Math.max(0, first - pad);
      const start = (at + first - from) / SPHINX_RATE;
      const end = (at + last + 1 - from) / SPHINX_RATE;
      words.push({ text, start, end, confidence: 1 });
      append(x.subarray(from, Math.min(x.length, last + 1 + pad)));
      silence(0.05);
    }
    timed.push(words);
    silence(0.5);
  }
  return { wav: sphinxWav(joinSamples(parts)), seconds: at / SPHINX_RATE, sentences: timed };
}

/**
 * Pairs of (known, recognized) words, in order (longest common subsequence), where a pair is the same text at
 * about the same place: the intervals overlap or are less than 0.25 s apart. Without the second condition a
 * recognized "the" pairs with whichever known "the" the sequence allows, maybe a sentence away.
 */
export function matchWords(known: readonly TimedWord[], got: readonly TimedWord[]): Array<[TimedWord, TimedWord]> {
  const norm = (s: string) => s.toLowerCase().replace(/[^a-z']/g, "");
  const same = (k: TimedWord, g: TimedWord) =>
    norm(k.text) === norm(g.text) && g.start < k.end + 0.25 && k.start < g.end + 0.25;
  // longest[i][j]: the longest pairing of known[i..] with got[j..].
  const longest = Array.from({ length: known.length + 1 }, () => new Array<number>(got.length + 1).fill(0));
  for (let i = known.length - 1; i >= 0; i--) {
    for (let j = got.length - 1; j >= 0; j--) {
      const skip = Math.max(longest[i + 1]![j]!, longest[i]![j + 1]!);
      longest[i]![j] = same(known[i]!, got[j]!) ? longest[i + 1]![j + 1]! + 1 : skip;
    }
  }
  const pairs: Array<[TimedWord, TimedWord]> = [];
  let i = 0;
  let j = 0;
  while (i < known.length && j < got.length) {
    if (same(known[i]!, got[j]!)) pairs.push([known[i++]!, got[j++]!]);
    else if (longest[i + 1]![j]! >= longest[i]![j + 1]!) i++;
    else j++;
  }
  return pairs;
}
