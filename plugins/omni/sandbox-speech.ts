// What an Omni sandbox clip says, and who says it. The quoted lines of the prompt ("..." or “...”), in order,
// each spoken with a speaker's preset voice (presets.ts, eSpeak NG through lib/speech's speakTimed):
// - a line is said by the character or voice whose name is written nearest before it, in the text between the
//   previous line and this one (`Mia: "Hi"`, `Tom turns and says "No"`);
// - otherwise by the request's voices in turn, else the characters' voices in turn, else DEFAULT_PRESET;
// - a character without a voice speaks with a preset picked from its id, so it keeps one voice across clips.
// The lines follow each other from SPEECH_START with LINE_GAP between them; when they run longer than the clip
// they are spoken faster (up to MAX_SPEED) and what still does not fit is cut at a word. The record of the
// words' times in the clip comes back with the audio, so captions need no recognition.
import { createHash } from "node:crypto";
import {
  type EspeakVoice,
  type OmniCharacterSnapshot,
  type OmniVoiceSnapshot,
  pcm16Wav,
  type SpokenRecord,
  speakTimed,
  spokenWords,
  type TimedWord,
  wavSamples,
  withoutMarkers,
} from "mediagate/plugin";
import { presetById, VOICE_PRESETS } from "./voices/presets.ts";

export const SPEECH_START = 0.4;
const SPEECH_TAIL = 0.2;
const LINE_GAP = 0.25;
const MAX_SPEED = 320;
export const DEFAULT_PRESET = "puck";

export interface QuotedLine {
  text: string;
  /** The preset id that speaks it. */
  preset: string;
}

interface Speaker {
  name: string;
  preset: string;
}

const quotes = /"([^"]+)"|“([^“”]+)”/g;

/** A preset for a character without a voice: stable for its id. */
function presetFor(id: string): string {
  const n = createHash("sha256").update(id).digest().readUInt32BE(0);
  return VOICE_PRESETS[n % VOICE_PRESETS.length]!.id;
}

const known = (preset: string | undefined) => (preset && presetById(preset) ? preset : DEFAULT_PRESET);

/** The prompt's quoted lines and who speaks each. */
export function quotedLines(
  prompt: string,
  characters: readonly OmniCharacterSnapshot[],
  voices: readonly OmniVoiceSnapshot[],
): QuotedLine[] {
  const text = withoutMarkers(prompt);
  const named: Speaker[] = [
    ...characters.map((c) => ({ name: c.name, preset: known(c.voice?.base_voice ?? presetFor(c.id)) })),
    ...voices.map((v) => ({ name: v.name, preset: known(v.base_voice) })),
  ].filter((s) => s.name.trim() !== "");
  const turns =
    voices.length > 0
      ? voices.map((v) => known(v.base_voice))
      : characters.map((c) => known(c.voice?.base_voice ?? presetFor(c.id)));
  const lines: QuotedLine[] = [];
  let from = 0;
  let turn = 0;
  for (const m of text.matchAll(quotes)) {
    const said = (m[1] ?? m[2] ?? "").replace(/\s+/g, " ").trim();
    const before = text.slice(from, m.index).toLowerCase();
    from = m.index + m[0].length;
    if (!/[\p{L}\p{N}]/u.test(said)) continue;
    // The speaker named last before the quote.
    let best: Speaker | undefined;
    let at = -1;
    for (const s of named) {
      const i = before.lastIndexOf(s.name.toLowerCase());
      if (i > at) (at = i), (best = s);
    }
    const preset = best ? best.preset : turns.length > 0 ? turns[turn++ % turns.length]! : DEFAULT_PRESET;
    lines.push({ text: said, preset });
  }
  return lines;
}

export interface ClipSpeech {
  /** 16-bit mono WAV, to be mixed in at SPEECH_START. */
  wav: Uint8Array;
  /** Word times in the clip (SPEECH_START included). */
  spoken: SpokenRecord;
}

const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;

async function speakAll(lines: readonly QuotedLine[], speedFactor: number, signal: AbortSignal) {
  const said = [];
  for (const line of lines) {
    const base = presetById(line.preset)!.espeak;
    const voice: EspeakVoice = { ...base, speed: Math.min(MAX_SPEED, Math.round(base.speed * speedFactor)) };
    said.push(await speakTimed(line.text, voice, { signal, language: "en", pace: 1 / speedFactor }));
  }
  return said;
}

/** The lines spoken one after another, fitted between SPEECH_START and the clip's end; null when nothing is said. */
export async function clipSpeech(
  lines: readonly QuotedLine[],
  seconds: number,
  signal: AbortSignal,
): Promise<ClipSpeech | null> {
  const slot = seconds - SPEECH_START - SPEECH_TAIL;
  const usable = lines.filter((l) => spokenWords(l.text).length > 0);
  if (usable.length === 0 || slot <= 0.3) return null;
  const total = (said: Awaited<ReturnType<typeof speakAll>>) =>
    said.reduce((s, x) => s + x.wav.durationSeconds, 0) + LINE_GAP * (said.length - 1);
  let said = await speakAll(usable, 1, signal);
  const over = total(said) / slot;
  if (over > 1) said = await speakAll(usable, Math.min(over * 1.05, MAX_SPEED / 140), signal);

  // Laid end to end at one sample rate; whatever runs past the slot is cut after the last whole word in it.
  const rate = wavSamples(said[0]!.wav.bytes).sampleRate;
  const pieces: Int16Array[] = [];
  const words: TimedWord[] = [];
  let at = 0;
  for (const [i, s] of said.entries()) {
    const { samples, sampleRate } = wavSamples(s.wav.bytes);
    if (sampleRate !== rate) throw new Error(`eSpeak voices answered ${sampleRate} and ${rate} Hz`);
    if (i > 0) {
      pieces.push(new Int16Array(Math.round(LINE_GAP * rate)));
      at += LINE_GAP;
    }
    for (const w of s.spoken.words) words.push({ ...w, start: w.start + at, end: w.end + at });
    pieces.push(samples);
    at += samples.length / rate;
  }
  let all = new Int16Array(pieces.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of pieces) all.set(p, o), (o += p.length);
  let kept = words;
  if (all.length / rate > slot) {
    kept = words.filter((w) => w.end <= slot);
    if (kept.length === 0) return null;
    all = all.slice(0, Math.min(all.length, Math.round((kept.at(-1)!.end + 0.05) * rate)));
  }
  return {
    wav: pcm16Wav(all, rate),
    spoken: {
      language: "en",
      words: kept.map((w) => ({ ...w, start: ms(w.start + SPEECH_START), end: ms(w.end + SPEECH_START) })),
    },
  };
}
