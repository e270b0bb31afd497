// Speech with the time of every word: what a sandbox that speaks records as it synthesizes (contracts/speech.ts
// SpokenRecord), so captions on a file we made need no recognition.
//
// The npm build of eSpeak NG is its command-line program, which reports no word events. So the words are
// measured: one eSpeak run speaks the words of a batch each followed by a long SSML break, the run is cut at
// those silences into one piece per word, each piece's voiced part is found by its energy, and the pieces are
// laid end to end with pauses of our own (longer after punctuation). The times are therefore those of the
// audio we hand out, to the 10 ms frame. When a batch does not cut into exactly one piece per word (a word
// eSpeak leaves silent, a long pause inside one), it is halved until it does; a single word's run is one piece
// whatever its silences.
import type { SpokenRecord, TimedWord } from "../../contracts/speech.ts";
import { type EspeakVoice, speak, type Wav } from "./espeak.ts";
import { frameRms, pcm16Wav, wavSamples } from "./pcm.ts";

export interface SpeakTimedOptions {
  signal?: AbortSignal;
  /** The record's language (default: the voice's, e.g. "en" for `en-us+f3`). */
  language?: string;
  /** Scales the pauses laid between words (default 1); with a faster `speed`, speech fits a shorter slot. */
  pace?: number;
}

/** Words per eSpeak run: bounds the run's memory (each word carries a break) whatever the text's length. */
const BATCH = 40;
/** The SSML break after each word of a run, and the silence that cuts a run into pieces. */
const BREAK_MS = 600;
const CUT_SECONDS = 0.25;
/** A frame quieter than this (16-bit sample units) is silence: eSpeak writes true zeros between words. */
const SILENT_RMS = 6;
/** A piece's voiced part: its frames of at least this share of the piece's loudest frame. */
const VOICED_SHARE = 0.05;
/** Frames (10 ms) kept before a piece's voiced part and after it. */
const LEAD_FRAMES = 2;
const TAIL_FRAMES = 6;
/** Pauses between words, in seconds, before `pace`: any word, after , ; : and dashes, after . ! ? and … */
const PAUSE = { word: 0.05, clause: 0.18, sentence: 0.35 } as const;

/** One word's audio and where its voiced part lies in it (samples). */
interface Piece {
  samples: Int16Array;
  voicedFrom: number;
  voicedTo: number;
}

/**
 * The words of `text` as captions show them: split at white space, spelling and punctuation kept. A token
 * with no letter or digit (a dash, an emoji) is nothing eSpeak says: it joins the word before it (or after it).
 */
export function spokenWords(text: string): string[] {
  const words: string[] = [];
  let pending = "";
  for (const token of text.split(/\s+/)) {
    if (!token) continue;
    if (!/[\p{L}\p{N}]/u.test(token)) {
      if (words.length > 0) words[words.length - 1] += ` ${token}`;
      else pending = pending ? `${pending} ${token}` : token;
      continue;
    }
    words.push(pending ? `${pending} ${token}` : token);
    pending = "";
  }
  return words;
}

const ssmlEscape = (s: string) => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Runs of sound in `samples` separated by at least CUT_SECONDS of silence, as [from, to) sample ranges. */
function soundRuns(samples: Int16Array, sampleRate: number): Array<[number, number]> {
  const frame = Math.round(sampleRate / 100);
  const rms = frameRms(samples, frame);
  const cut = Math.round((CUT_SECONDS * sampleRate) / frame);
  const runs: Array<[number, number]> = [];
  let start = -1;
  let lastLoud = -1;
  for (let f = 0; f < rms.length; f++) {
    if (rms[f]! < SILENT_RMS) {
      if (start >= 0 && f - lastLoud > cut) {
        runs.push([start, lastLoud + 1]);
        start = -1;
      }
      continue;
    }
    if (start < 0) start = f;
    lastLoud = f;
  }
  if (start >= 0) runs.push([start, lastLoud + 1]);
  // A frame of margin either side keeps the soft onset and decay that the frame grid cut.
  return runs.map(([a, b]) => [Math.max(0, (a - 1) * frame), Math.min(samples.length, (b + 1) * frame)]);
}

/**
 * A piece from samples[from, to): its voiced part found by energy, kept with a short lead and tail (eSpeak's
 * soft decay would otherwise stretch every pause), faded over the last frame so the cut does not click.
 */
function piece(samples: Int16Array, sampleRate: number, from: number, to: number): Piece {
  const frame = Math.round(sampleRate / 100);
  const rms = frameRms(samples.subarray(from, to), frame);
  const peak = rms.reduce((m, r) => Math.max(m, r), 0);
  const floor = Math.max(SILENT_RMS, peak * VOICED_SHARE);
  let first = rms.findIndex((r) => r >= floor);
  let last = rms.length - 1;
  while (last >= 0 && rms[last]! < floor) last--;
  if (first < 0) first = last = 0;
  const start = Math.max(0, (first - LEAD_FRAMES) * frame);
  const end = Math.min(to - from, (last + 1 + TAIL_FRAMES) * frame);
  const part = samples.slice(from + start, from + end);
  const fade = Math.min(frame, part.length);
  for (let i = 0; i < fade; i++) part[part.length - 1 - i] = Math.round((part[part.length - 1 - i]! * i) / fade);
  return {
    samples: part,
    voicedFrom: first * frame - start,
    voicedTo: Math.min(part.length, (last + 1) * frame - start),
  };
}

/** One piece per word of `words`, spoken in as few eSpeak runs as cut cleanly. */
async function measure(
  words: string[],
  voice: EspeakVoice,
  signal: AbortSignal | undefined,
): Promise<{ pieces: Piece[]; sampleRate: number }> {
  const ssml = words.map(ssmlEscape).join(` <break time="${BREAK_MS}ms"/> `);
  const wav = await speak(`<speak>${ssml}</speak>`, voice, signal, { ssml: true });
  const { samples, sampleRate } = wavSamples(wav.bytes);
  const runs = soundRuns(samples, sampleRate);
  if (runs.length === words.length)
    return { pieces: runs.map(([a, b]) => piece(samples, sampleRate, a, b)), sampleRate };
  if (words.length === 1) {
    // One word: everything it sounded, silences inside included.
    const [a, b] = runs.length > 0 ? [runs[0]![0], runs[runs.length - 1]![1]] : [0, 0];
    return { pieces: [piece(samples, sampleRate, a, b)], sampleRate };
  }
  const half = Math.ceil(words.length / 2);
  const left = await measure(words.slice(0, half), voice, signal);
  const right = await measure(words.slice(half), voice, signal);
  return { pieces: [...left.pieces, ...right.pieces], sampleRate: left.sampleRate };
}

/** The pause after `word`, in seconds. */
function pauseAfter(word: string, voice: EspeakVoice, pace: number): number {
  const base = PAUSE.word + voice.gap * 0.01;
  if (/[.!?…]["'”’)\]]*$/.test(word)) return (base + PAUSE.sentence) * pace;
  if (/[,;:–—-]["'”’)\]]*$/.test(word)) return (base + PAUSE.clause) * pace;
  return base * pace;
}

const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * Speaks `text` with `voice` and records when each word is voiced in the returned WAV (16-bit mono, eSpeak's
 * 22,050 Hz). Words keep the text's spelling and punctuation; confidence is 1. Text without a word gives a
 * tenth of a second of silence and no words. The same text and voice give the same samples and times.
 */
export async function speakTimed(
  text: string,
  voice: EspeakVoice,
  opts: SpeakTimedOptions = {},
): Promise<{ wav: Wav; spoken: SpokenRecord }> {
  const language = opts.language ?? voice.voice.split(/[-+]/)[0] ?? "en";
  const pace = opts.pace ?? 1;
  const words = spokenWords(text);
  const pieces: Piece[] = [];
  let sampleRate = 22050;
  for (let i = 0; i < words.length; i += BATCH) {
    const batch = await measure(words.slice(i, i + BATCH), voice, opts.signal);
    pieces.push(...batch.pieces);
    sampleRate = batch.sampleRate;
  }
  const gaps = words.map((w, i) => (i === words.length - 1 ? 0 : Math.round(pauseAfter(w, voice, pace) * sampleRate)));
  const total =
    words.length === 0 ? Math.round(sampleRate / 10) : pieces.reduce((s, p, i) => s + p.samples.length + gaps[i]!, 0);
  const out = new Int16Array(total);
  const timed: TimedWord[] = [];
  let at = 0;
  pieces.forEach((p, i) => {
    out.set(p.samples, at);
    timed.push({
      text: words[i]!,
      start: ms((at + p.voicedFrom) / sampleRate),
      end: ms((at + p.voicedTo) / sampleRate),
      confidence: 1,
    });
    at += p.samples.length + gaps[i]!;
  });
  return {
    wav: { bytes: pcm16Wav(out, sampleRate), sampleRate, durationSeconds: total / sampleRate },
    spoken: { language, words: timed },
  };
}
