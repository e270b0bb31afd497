// Procedural music for the sandbox music provider: a song planned from a seed (tempo, key, scale, chord
// progression, instruments, sections, melody) and synthesized sample by sample in plain JS, so the sandbox
// gives real, listenable tracks on any machine and the same request always gives the same samples.
//
// Time is "file time" in seconds. Bar b starts at `offset + b * barSeconds`; every note is planned from the
// bar it belongs to, so any stretch of a song can be rendered on its own (an extension renders only its new
// part, on the grid of the source, and so lands on the source's beat).
import { createHash } from "node:crypto";
import { riffChunk, writeRiff } from "mediagate/plugin";

export const SAMPLE_RATE = 44100;
const SR = SAMPLE_RATE;
const TAU = Math.PI * 2;

export type ScaleName = "major" | "minor" | "dorian" | "mixolydian";
const SCALES: Record<ScaleName, readonly number[]> = {
  major: [0, 2, 4, 5, 7, 9, 11],
  minor: [0, 2, 3, 5, 7, 8, 10],
  dorian: [0, 2, 3, 5, 7, 9, 10],
  mixolydian: [0, 2, 4, 5, 7, 9, 10],
};
const KEY_NAMES = ["C", "C#", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B"];
// Scale degrees (0 = tonic), one chord a bar; diatonic triads give each chord its quality.
const PROGRESSIONS: Record<"bright" | "dark", readonly (readonly number[])[]> = {
  bright: [
    [0, 4, 5, 3],
    [0, 5, 3, 4],
    [0, 3, 4, 3],
    [5, 3, 0, 4],
    [0, 3, 5, 4],
  ],
  dark: [
    [0, 5, 2, 6],
    [0, 3, 4, 0],
    [0, 6, 5, 6],
    [0, 5, 3, 4],
    [0, 2, 5, 4],
  ],
};

export type DrumKit = "backbeat" | "four" | "halftime" | "breakbeat";
export type BassSound = "sub" | "saw" | "pluck";
export type ChordSound = "pad" | "keys" | "pluck" | "organ";
export type LeadSound = "vocal" | "bell" | "square";
export interface Instruments {
  drums: DrumKit;
  bass: BassSound;
  chords: ChordSound;
  lead: LeadSound;
}

/**
 * Everything needed to render a song again or continue it; kept as MusicTrack.arrangement (a type, not an
 * interface, so it is a plain record as stored).
 */
export type Arrangement = {
  kind: "mediagate-sandbox-music";
  version: 1;
  /** Seeds the melody, drum fills and section form of the part this arrangement made. */
  seed: string;
  bpm: number;
  beatsPerBar: 4;
  barSeconds: number;
  /** File time of bar 0 (<= 0: bar 0 starts at or before the first sample). */
  offset: number;
  /** Tonic pitch class, 0 = C. */
  key: number;
  keyName: string;
  scale: ScaleName;
  /** Scale degree of each bar's chord, cycling with the bar number. */
  progression: number[];
  instruments: Instruments;
  /** Register of the singer; null when the lead is an instrument. */
  voice: "f" | "m" | null;
  /** The chorus words (the title's, for a new song). */
  hook: string;
  /** First bar this seed planned: 0 for a new song, the bar of the joint for an extension. */
  startBar: number;
  form: "song" | "extension";
  /** Bars planned; the last two are the outro. */
  totalBars: number;
  /** Length of the file: the bars and the last chord's ring-out. */
  seconds: number;
};

/** A song to render: its arrangement and the words the singer follows. */
export interface Song {
  arrangement: Arrangement;
  lyrics: string;
}

export interface Stereo {
  left: Float32Array;
  right: Float32Array;
}

const RING_OUT = 1.6;
/** The longest crossfade before a joint that an extension may use (seconds). */
export const JOIN_LEAD = 0.5;

// ---------------------------------------------------------------------------------------------- seeding

/** A 32-bit PRNG (mulberry32) seeded by a string: the plan of each bar is a function of the seed alone. */
export function rng(...parts: Array<string | number>): () => number {
  let a = createHash("sha256").update(parts.join("\u0000")).digest().readUInt32BE(0);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;

/** Mood words of a prompt or style that steer tempo, scale and sounds. */
function mood(text: string) {
  const t = text.toLowerCase();
  return {
    slow: /\b(ballad|slow|ambient|chill|lo-?fi|sad|calm|lullaby|soft|piano|acoustic|dream)/.test(t),
    fast: /\b(dance|edm|house|techno|fast|punk|rock|upbeat|energetic|drum|disco|metal|party|trance)/.test(t),
    dark: /\b(sad|dark|melanchol|minor|moody|night|rain|lonely|cold|blues|goth|noir)/.test(t),
    bright: /\b(happy|bright|sunny|summer|joy|upbeat|love|pop|major|sweet)/.test(t),
    electronic: /\b(edm|house|techno|synth|electro|trance|disco|club|dance|808)/.test(t),
  };
}

/** A new song's arrangement from its description; `variation` changes the melody, harmony and sounds. */
export function newArrangement(input: {
  seed: string;
  variation: number;
  text: string;
  instrumental: boolean;
  hook: string;
  seconds?: number;
}): Arrangement {
  const base = rng(input.seed, "song");
  const m = mood(input.text);
  const bpm = Math.round(
    m.slow && !m.fast ? 70 + base() * 20 : m.fast && !m.slow ? 118 + base() * 16 : 86 + base() * 36,
  );
  const key = Math.floor(base() * 12);
  const dark = m.dark || (!m.bright && base() < 0.4);
  const scale: ScaleName = dark
    ? pick(base, ["minor", "minor", "dorian"] as const)
    : pick(base, ["major", "major", "mixolydian"] as const);
  const target = input.seconds ?? 30 + base() * 15;
  const v = rng(input.seed, "variation", input.variation);
  const barSeconds = 240 / bpm;
  const totalBars = Math.max(6, Math.round((target - RING_OUT) / barSeconds));
  const instruments = chooseInstruments(v, m, input.instrumental);
  return {
    kind: "mediagate-sandbox-music",
    version: 1,
    seed: `${input.seed}#${input.variation}`,
    bpm,
    beatsPerBar: 4,
    barSeconds,
    offset: 0,
    key,
    keyName: `${KEY_NAMES[key]} ${scale}`,
    scale,
    progression: [...pick(v, PROGRESSIONS[dark ? "dark" : "bright"])],
    instruments,
    voice: instruments.lead === "vocal" ? (v() < 0.5 ? "f" : "m") : null,
    hook: input.hook,
    startBar: 0,
    form: "song",
    totalBars,
    seconds: round3(totalBars * barSeconds + RING_OUT),
  };
}

function chooseInstruments(r: () => number, m: ReturnType<typeof mood>, instrumental: boolean): Instruments {
  const drums: DrumKit = m.electronic
    ? pick(r, ["four", "four", "breakbeat"] as const)
    : m.slow
      ? pick(r, ["halftime", "backbeat"] as const)
      : pick(r, ["backbeat", "four", "halftime", "breakbeat"] as const);
  return {
    drums,
    bass: pick(r, m.electronic ? (["saw", "sub"] as const) : (["sub", "saw", "pluck"] as const)),
    chords: pick(r, m.slow ? (["pad", "keys", "pluck"] as const) : (["pad", "keys", "pluck", "organ"] as const)),
    lead: instrumental ? pick(r, ["bell", "square"] as const) : "vocal",
  };
}

/** The arrangement of a continuation: the source's tempo, key, harmony and sounds, a new seed and form. */
export function continuation(
  source: Arrangement,
  input: {
    seed: string;
    variation: number;
    continueAt: number;
    instrumental: boolean;
    voice: "f" | "m" | null;
    hook?: string;
  },
): Arrangement {
  const v = rng(input.seed, "extension", input.variation);
  // The new part's first bar is the one sounding just before the joint, so the crossfade has music to fade into.
  const startBar = barAt(source, input.continueAt - JOIN_LEAD);
  const newPart = 20 + v() * 10;
  const totalBars = Math.max(
    startBar + 4,
    Math.ceil((input.continueAt + newPart - RING_OUT - source.offset) / source.barSeconds),
  );
  let lead = source.instruments.lead;
  if (input.instrumental && lead === "vocal") lead = pick(v, ["bell", "square"] as const);
  if (!input.instrumental) lead = "vocal";
  return {
    ...source,
    seed: `${input.seed}#${input.variation}`,
    instruments: { ...source.instruments, lead },
    voice: lead === "vocal" ? (input.voice ?? source.voice ?? (v() < 0.5 ? "f" : "m")) : null,
    hook: input.hook || source.hook,
    startBar,
    form: "extension",
    totalBars,
    seconds: round3(source.offset + totalBars * source.barSeconds + RING_OUT),
  };
}

/** A stored arrangement of ours, or null when the object is not one (an older or foreign shape). */
export function parseArrangement(value: Record<string, unknown> | null): Arrangement | null {
  if (value?.kind !== "mediagate-sandbox-music" || value.version !== 1) return null;
  const a = value as Arrangement;
  const num = (n: unknown) => typeof n === "number" && Number.isFinite(n);
  const ok =
    typeof a.seed === "string" &&
    num(a.bpm) &&
    a.bpm >= 40 &&
    a.bpm <= 240 &&
    num(a.offset) &&
    num(a.key) &&
    a.key >= 0 &&
    a.key < 12 &&
    a.scale in SCALES &&
    Array.isArray(a.progression) &&
    a.progression.length > 0 &&
    a.progression.every((d) => Number.isInteger(d) && d >= 0 && d < 7) &&
    typeof a.instruments === "object" &&
    a.instruments !== null &&
    typeof a.hook === "string";
  return ok ? { ...a, barSeconds: 240 / a.bpm } : null;
}

export const barAt = (a: Pick<Arrangement, "offset" | "barSeconds">, t: number) =>
  Math.max(0, Math.floor((t - a.offset) / a.barSeconds + 1e-9));
const round3 = (n: number) => Math.round(n * 1000) / 1000;

// ---------------------------------------------------------------------------------------------- lyrics

type Vowel = "a" | "e" | "i" | "o" | "u";
type Onset = "none" | "fricative" | "plosive" | "nasal" | "liquid";
export interface Syllable {
  vowel: Vowel;
  onset: Onset;
}

const VOCABLES = "la la la oh oh na na hey yeah";

/** The sung syllables of lyrics: section tags like [Chorus] dropped, one syllable per vowel group. */
export function syllables(text: string): Syllable[] {
  const words =
    text
      .replace(/\[[^[\]]*\]/g, " ")
      .toLowerCase()
      .match(/[a-z']+/g) ?? [];
  const out: Syllable[] = [];
  for (const word of words) {
    const groups = [...word.replace(/'/g, "").matchAll(/(?<![^aeiouy])([^aeiouy]*)([aeiouy]+)/g)];
    // A silent final e ("time", "love") is not a syllable of its own.
    if (groups.length > 1 && groups.at(-1)![2] === "e" && /[^aeiouy]e$/.test(word)) groups.pop();
    for (const [, onset, vowels] of groups) out.push({ vowel: vowelOf(vowels!), onset: onsetOf(onset!) });
  }
  return out.length ? out : syllables(VOCABLES);
}

function vowelOf(letters: string): Vowel {
  const c = letters[0]!;
  return c === "y" ? "i" : (c as Vowel);
}

function onsetOf(consonants: string): Onset {
  const c = consonants.at(-1);
  if (!c) return "none";
  if ("szfvhxjc".includes(c)) return "fricative";
  if ("pbtdkgq".includes(c)) return "plosive";
  if ("mn".includes(c)) return "nasal";
  return "liquid";
}

// ---------------------------------------------------------------------------------------------- planning

type Section = "intro" | "verse" | "chorus" | "bridge" | "outro";
type Inst = "kick" | "snare" | "hat" | "openhat" | "crash" | "bass" | "chord" | "lead";
interface NoteEvent {
  inst: Inst;
  /** File time of the onset, seconds. */
  t: number;
  dur: number;
  midi: number;
  vel: number;
  syllable?: Syllable;
}

interface SectionSpan {
  section: Section;
  /** Bar within the section, from 0. */
  pos: number;
  /** How many sections of this kind came before (in this arrangement's part). */
  count: number;
}

/** The section of every bar from the arrangement's first bar on. */
function sections(a: Arrangement): Map<number, SectionSpan> {
  const out = new Map<number, SectionSpan>();
  const bars = a.totalBars - a.startBar;
  const phrase = bars < 16 ? 4 : 8;
  const order: Section[] =
    a.form === "song"
      ? ["verse", "chorus", "verse", "chorus", "bridge", "chorus"]
      : rng(a.seed, "form")() < 0.5
        ? ["chorus", "bridge", "chorus", "verse"]
        : ["bridge", "chorus", "verse", "chorus"];
  const counts: Partial<Record<Section, number>> = {};
  let b = a.startBar;
  const push = (section: Section, length: number) => {
    const count = counts[section] ?? 0;
    counts[section] = count + 1;
    for (let pos = 0; pos < length && b < a.totalBars - 2; pos++) out.set(b++, { section, pos, count });
  };
  if (a.form === "song") push("intro", 2);
  for (let i = 0; b < a.totalBars - 2; i++) {
    const s = order[i % order.length]!;
    push(s, s === "bridge" ? phrase / 2 : phrase);
  }
  for (let pos = 0; b < a.totalBars; pos++) out.set(b++, { section: "outro", pos, count: 0 });
  return out;
}

const DRUMS: Record<DrumKit, { kick: number[]; snare: number[]; hat: number[]; open: number[] }> = {
  backbeat: { kick: [0, 8, 10], snare: [4, 12], hat: [0, 2, 4, 6, 8, 10, 12, 14], open: [] },
  four: { kick: [0, 4, 8, 12], snare: [4, 12], hat: [], open: [2, 6, 10, 14] },
  halftime: { kick: [0, 10], snare: [8], hat: [0, 2, 4, 6, 8, 10, 12, 14], open: [14] },
  breakbeat: { kick: [0, 7, 10], snare: [4, 12, 15], hat: [0, 2, 3, 4, 6, 8, 10, 11, 12, 14], open: [] },
};

const RHYTHMS: readonly (readonly number[])[] = [
  [0, 4, 8, 12],
  [0, 2, 4, 6, 8, 12],
  [0, 3, 6, 8, 10, 12],
  [2, 4, 6, 10, 12, 14],
  [0, 2, 4, 8, 10, 11, 12],
  [0, 6, 8, 12, 14],
];
const CADENCE: readonly (readonly number[])[] = [
  [0, 2, 4],
  [0, 4],
  [0, 3, 6],
];

/** Scale degree (any integer, 7 per octave) to MIDI note, from a tonic MIDI note. */
function degreeMidi(a: Arrangement, tonic: number, degree: number): number {
  const scale = SCALES[a.scale];
  const octave = Math.floor(degree / 7);
  return tonic + 12 * octave + scale[((degree % 7) + 7) % 7]!;
}

interface Plan {
  events: NoteEvent[];
}

/** Every note of bars [from, to) of the arrangement, in a fixed order (so renders are reproducible). */
function plan(song: Song, from: number, to: number): Plan {
  const a = song.arrangement;
  const map = sections(a);
  const verseWords = syllables(song.lyrics);
  const hookWords = syllables(a.hook || song.lyrics);
  const step = a.barSeconds / 16;
  const events: NoteEvent[] = [];
  // Verse syllables run on through the song: count the ones sung before `from`.
  let cursor = 0;
  for (let b = a.startBar; b < to; b++) {
    const span = map.get(b);
    if (!span) continue;
    const melody = a.instruments.lead === "vocal" || span.section !== "verse" ? melodyOf(a, b, span) : [];
    const sung = a.instruments.lead === "vocal" && span.section === "verse" ? melody.length : 0;
    if (b >= from) {
      const t0 = a.offset + b * a.barSeconds;
      barEvents(a, b, span, t0, step, events);
      for (const [i, n] of melody.entries()) {
        const syllable =
          span.section === "chorus" || span.section === "bridge"
            ? hookWords[(hookIndex(a, b, span) + i) % hookWords.length]!
            : verseWords[(cursor + i) % verseWords.length]!;
        events.push({
          inst: "lead",
          t: t0 + n.step * step,
          dur: n.steps * step * 0.92,
          midi: n.midi,
          vel: n.vel,
          syllable,
        });
      }
    }
    cursor += sung;
  }
  return { events };
}

/** Where in the hook a chorus bar starts: each 4-bar phrase sings the hook from its beginning. */
function hookIndex(a: Arrangement, b: number, span: SectionSpan): number {
  let n = 0;
  for (let p = span.pos - (span.pos % 4); p < span.pos; p++)
    n += melodyOf(a, b - span.pos + p, { ...span, pos: p }).length;
  return n;
}

function barEvents(a: Arrangement, b: number, span: SectionSpan, t0: number, step: number, events: NoteEvent[]) {
  const r = rng(a.seed, "bar", b);
  const degree = a.progression[b % a.progression.length]!;
  const chordTonic = 48 + a.key;
  const final = b === a.totalBars - 1;
  const energy = { intro: 0.55, verse: 0.8, chorus: 1, bridge: 0.7, outro: 0.6 }[span.section];
  const drum = (inst: Inst, s: number, vel: number, dur = 0.3) =>
    events.push({ inst, t: t0 + s * step, dur, midi: 0, vel: vel * energy });

  if (span.pos === 0 && span.section !== "intro" && span.section !== "verse") drum("crash", 0, 0.7, 2);
  if (final) {
    drum("kick", 0, 1);
    drum("crash", 0, 0.8, 2.5);
  } else if (span.section === "intro") {
    for (const s of [0, 4, 8, 12]) drum("hat", s, 0.6);
    if (span.pos === 1) drum("kick", 0, 0.8);
  } else {
    const kit = span.section === "bridge" ? DRUMS.halftime : DRUMS[a.instruments.drums];
    for (const s of kit.kick) drum("kick", s, 1);
    for (const s of kit.snare) drum("snare", s, s === 15 ? 0.35 : 0.9);
    const hats = span.section === "chorus" && a.instruments.drums !== "four" ? [...Array(16).keys()] : kit.hat;
    for (const s of hats) drum("hat", s, s % 4 === 0 ? 0.8 : s % 2 === 0 ? 0.6 : 0.4);
    for (const s of kit.open) drum("openhat", s, 0.6);
    // A fill closes every fourth bar: snare sixteenths over the last beat.
    if (span.pos % 4 === 3 && r() < 0.7) for (const s of [12, 13, 14, 15]) drum("snare", s, 0.35 + (s - 12) * 0.15);
  }

  const chordDegrees = [
    degree,
    degree + 2,
    degree + 4,
    ...(a.instruments.chords === "pad" && r() < 0.5 ? [degree + 6] : []),
  ];
  const chord = chordDegrees.map((d) => degreeMidi(a, chordTonic, d));
  const chordVel = 0.5 * (span.section === "chorus" ? 1 : 0.8);
  const ring = final ? RING_OUT + a.barSeconds * 0.5 : 0;
  const chordHit = (s: number, len: number, vel = chordVel) =>
    chord.forEach((midi) => events.push({ inst: "chord", t: t0 + s * step, dur: len * step + ring, midi, vel }));
  if (final || a.instruments.chords === "pad" || a.instruments.chords === "organ") chordHit(0, 16);
  else if (a.instruments.chords === "keys")
    for (const [s, len] of pick(r, [
      [
        [0, 6],
        [6, 4],
        [10, 6],
      ],
      [
        [0, 8],
        [8, 8],
      ],
      [
        [0, 3],
        [3, 5],
        [8, 3],
        [11, 5],
      ],
    ] as const))
      chordHit(s, len);
  else
    for (let s = 0; s < 16; s += 2)
      events.push({
        inst: "chord",
        t: t0 + s * step,
        dur: step * 3,
        midi: chord[[0, 1, 2, 1][(s / 2) % 4]!]! + (s >= 8 ? 12 : 0),
        vel: chordVel * 0.9,
      });

  const bassRoot = degreeMidi(a, 36 + a.key, degree);
  const fifth = degreeMidi(a, 36 + a.key, degree + 4);
  if (span.section === "intro" && span.pos === 0) return;
  const bassLine: ReadonlyArray<readonly [number, number, number]> = final
    ? [[0, 16, bassRoot]]
    : span.section === "bridge" || span.section === "outro"
      ? [
          [0, 8, bassRoot],
          [8, 8, bassRoot],
        ]
      : pick(r, [
          [
            [0, 6, bassRoot],
            [6, 2, bassRoot],
            [8, 6, bassRoot],
            [14, 2, fifth],
          ],
          [
            [0, 3, bassRoot],
            [3, 3, bassRoot],
            [6, 4, fifth],
            [10, 4, bassRoot],
            [14, 2, bassRoot + 12],
          ],
          [
            [0, 2, bassRoot],
            [2, 2, bassRoot + 12],
            [4, 2, bassRoot],
            [6, 2, fifth],
            [8, 2, bassRoot],
            [10, 2, bassRoot + 12],
            [12, 2, fifth],
            [14, 2, bassRoot],
          ],
        ] as const);
  for (const [s, len, midi] of bassLine)
    events.push({ inst: "bass", t: t0 + s * step, dur: len * step * 0.9 + ring, midi, vel: 0.8 });
}

interface MelodyNote {
  step: number;
  steps: number;
  midi: number;
  vel: number;
}

/** The lead's notes in a bar. Keyed by section and bar-in-phrase, so every chorus sings the same tune. */
function melodyOf(a: Arrangement, b: number, span: SectionSpan): MelodyNote[] {
  if (span.section === "intro" || span.section === "outro") return [];
  if (span.section === "bridge" && span.pos % 2 === 1) return [];
  const phrasePos = span.pos % 4;
  const r = rng(a.seed, "melody", span.section, phrasePos);
  const rhythm = phrasePos === 3 ? pick(r, CADENCE) : pick(r, RHYTHMS);
  const degree = a.progression[b % a.progression.length]!;
  const tonic = (a.voice === "m" ? 48 : 60) + a.key;
  const lift = span.section === "chorus" ? 4 : span.section === "bridge" ? 2 : 0;
  let d = degree + pick(r, [0, 2, 4]) + lift;
  while (d < 2) d += 7;
  while (d > 11) d -= 7;
  return rhythm.map((step, i) => {
    const next = rhythm[i + 1] ?? 16;
    if (i > 0) {
      // Stepwise motion, pulled back to the middle of the range.
      d += pick(r, [-2, -1, -1, 0, 1, 1, 2]) + (d > 9 ? -1 : d < 3 ? 1 : 0);
      if (step % 8 === 0) d = nearestChordTone(d, degree);
    }
    const steps = i === rhythm.length - 1 ? Math.min(16 - step, phrasePos === 3 ? 16 : 4) : next - step;
    return { step, steps, midi: degreeMidi(a, tonic, d), vel: step % 4 === 0 ? 0.9 : 0.75 };
  });
}

function nearestChordTone(d: number, root: number): number {
  for (const delta of [0, -1, 1]) {
    const interval = (((d + delta - root) % 7) + 7) % 7;
    if (interval === 0 || interval === 2 || interval === 4) return d + delta;
  }
  return d;
}

// ---------------------------------------------------------------------------------------------- synthesis

const hz = (midi: number) => 440 * 2 ** ((midi - 69) / 12);

/** Where an instrument sits: pan (-1 left .. 1 right), level and reverb send. */
const MIX: Record<Inst, { pan: number; gain: number; send: number }> = {
  kick: { pan: 0, gain: 0.9, send: 0 },
  snare: { pan: 0.05, gain: 0.5, send: 0.18 },
  hat: { pan: 0.3, gain: 0.12, send: 0.04 },
  openhat: { pan: 0.3, gain: 0.1, send: 0.08 },
  crash: { pan: -0.35, gain: 0.12, send: 0.1 },
  bass: { pan: 0, gain: 0.45, send: 0 },
  chord: { pan: -0.2, gain: 0.13, send: 0.3 },
  lead: { pan: 0.1, gain: 0.3, send: 0.3 },
};

/** A mono voice rendered into `out` from index `start` (which may be negative: the onset lies before the buffer). */
type Voice = (out: Float32Array, start: number, ev: NoteEvent, a: Arrangement) => void;

/** Deterministic white noise for one event. */
function noise(ev: NoteEvent): () => number {
  let s = (Math.round(ev.t * SR) ^ (ev.midi * 7919) ^ 0x9e3779b9) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) / 4294967296) * 2 - 1;
  };
}

/** The index range of a note of `len` seconds that falls inside `out`. */
function span(out: Float32Array, start: number, len: number): [number, number] {
  return [Math.max(0, -start), Math.min(Math.ceil(len * SR), out.length - start)];
}

const kick: Voice = (out, start, ev) => {
  const [i0, i1] = span(out, start, 0.45);
  const n = noise(ev);
  let phase = 0;
  for (let i = 0; i < i1; i++) {
    const t = i / SR;
    phase += (TAU * (42 + 120 * Math.exp(-t * 32))) / SR;
    if (i < i0) continue;
    const click = t < 0.004 ? n() * 0.35 * (1 - t / 0.004) : 0;
    out[start + i]! += (Math.sin(phase) * Math.exp(-t * 7) + click) * ev.vel;
  }
};

const snare: Voice = (out, start, ev) => {
  const [i0, i1] = span(out, start, 0.3);
  const n = noise(ev);
  let prev = 0;
  for (let i = 0; i < i1; i++) {
    const t = i / SR;
    const white = n();
    const bright = white - prev * 0.6;
    prev = white;
    if (i < i0) continue;
    out[start + i]! += (Math.sin(TAU * 190 * t) * Math.exp(-t * 30) * 0.6 + bright * Math.exp(-t * 16) * 0.7) * ev.vel;
  }
};

/** Hats and cymbals: twice-differentiated noise (a cheap high-pass), decaying at `decay` per second. */
const metal =
  (len: number, decay: number): Voice =>
  (out, start, ev) => {
    const [i0, i1] = span(out, start, len);
    const n = noise(ev);
    let p1 = 0;
    let p2 = 0;
    for (let i = 0; i < i1; i++) {
      const w = n();
      const hp = w - 2 * p1 + p2;
      p2 = p1;
      p1 = w;
      if (i < i0) continue;
      out[start + i]! += hp * 0.4 * Math.exp((-i / SR) * decay) * ev.vel;
    }
  };

/** Band-limited sawtooth step (PolyBLEP) so high notes do not alias into hiss. */
function blep(t: number, dt: number): number {
  if (t < dt) {
    const x = t / dt;
    return x + x - x * x - 1;
  }
  if (t > 1 - dt) {
    const x = (t - 1) / dt;
    return x * x + x + x + 1;
  }
  return 0;
}

/** Attack-sustain-release envelope over a note of `dur` seconds. */
function envelope(t: number, dur: number, attack: number, release: number): number {
  if (t < attack) return t / attack;
  if (t < dur) return 1;
  return Math.max(0, 1 - (t - dur) / release);
}

const bass: Voice = (out, start, ev, a) => {
  const f = hz(ev.midi);
  const sound = a.instruments.bass;
  if (sound === "pluck") return pluck(out, start, ev, 0.996, 0.5);
  const release = 0.06;
  const [i0, i1] = span(out, start, ev.dur + release);
  let phase = 0;
  let lp = 0;
  for (let i = 0; i < i1; i++) {
    const t = i / SR;
    phase += f / SR;
    phase -= Math.floor(phase);
    const env = envelope(t, ev.dur, 0.005, release);
    let x: number;
    if (sound === "sub") x = Math.sin(TAU * phase) + 0.25 * Math.sin(2 * TAU * phase);
    else {
      const saw = 2 * phase - 1 - blep(phase, f / SR);
      const cutoff = 180 + 900 * Math.exp(-t * 9);
      lp += (saw - lp) * (1 - Math.exp((-TAU * cutoff) / SR));
      x = lp * 1.3;
    }
    if (i >= i0) out[start + i]! += x * env * ev.vel;
  }
};

/** Karplus-Strong plucked string: a noise burst circulating in a damped delay line. */
function pluck(out: Float32Array, start: number, ev: NoteEvent, damping: number, len: number): void {
  const period = Math.max(2, Math.round(SR / hz(ev.midi)));
  const line = new Float32Array(period);
  const n = noise(ev);
  for (let i = 0; i < period; i++) line[i] = n();
  const [i0, i1] = span(out, start, Math.min(ev.dur + 0.3, len + ev.dur));
  let prev = 0;
  for (let i = 0; i < i1; i++) {
    const k = i % period;
    const y = line[k]!;
    line[k] = damping * 0.5 * (y + prev);
    prev = y;
    const fade = i / SR > ev.dur ? Math.max(0, 1 - (i / SR - ev.dur) / 0.3) : 1;
    if (i >= i0) out[start + i]! += y * ev.vel * fade;
  }
}

const chord: Voice = (out, start, ev, a) => {
  const f = hz(ev.midi);
  const sound = a.instruments.chords;
  if (sound === "pluck") return pluck(out, start, ev, 0.994, 1);
  const release = sound === "pad" ? 0.5 : 0.25;
  const [i0, i1] = span(out, start, ev.dur + release);
  let p1 = 0;
  let p2 = 0;
  let lp1 = 0;
  let lp2 = 0;
  const k = 1 - Math.exp((-TAU * 1400) / SR);
  for (let i = 0; i < i1; i++) {
    const t = i / SR;
    let x: number;
    if (sound === "pad") {
      // Two saws detuned by 7 cents beat slowly against each other; two low-pass poles soften them.
      p1 += (f * 1.004) / SR;
      p2 += (f * 0.996) / SR;
      p1 -= Math.floor(p1);
      p2 -= Math.floor(p2);
      const saw = 2 * p1 - 1 - blep(p1, (f * 1.004) / SR) + 2 * p2 - 1 - blep(p2, (f * 0.996) / SR);
      lp1 += (saw - lp1) * k;
      lp2 += (lp1 - lp2) * k;
      x = lp2 * 0.6 * envelope(t, ev.dur, 0.25, release);
    } else if (sound === "keys") {
      // Electric piano: FM whose brightness fades faster than its level.
      const index = 1.8 * Math.exp(-t * 6);
      x =
        Math.sin(TAU * f * t + index * Math.sin(TAU * f * t)) *
        Math.exp(-t * 2.2) *
        envelope(t, ev.dur, 0.003, release) *
        1.4;
    } else {
      const trem = 1 + 0.12 * Math.sin(TAU * 5.5 * t);
      x =
        (Math.sin(TAU * f * t) +
          0.5 * Math.sin(2 * TAU * f * t) +
          0.3 * Math.sin(3 * TAU * f * t) +
          0.15 * Math.sin(4 * TAU * f * t)) *
        0.7 *
        trem *
        envelope(t, ev.dur, 0.02, release);
    }
    if (i >= i0) out[start + i]! += x * ev.vel;
  }
};

// Formants (Hz) of sung vowels, for a low and a high voice; bandwidths grow with frequency.
const FORMANTS: Record<"m" | "f", Record<Vowel, readonly [number, number, number]>> = {
  m: { a: [730, 1090, 2440], e: [530, 1840, 2480], i: [270, 2290, 3010], o: [570, 840, 2410], u: [300, 870, 2240] },
  f: { a: [850, 1220, 2810], e: [610, 2330, 2990], i: [310, 2790, 3310], o: [590, 920, 2710], u: [370, 950, 2670] },
};
const FORMANT_GAINS = [1, 0.5, 0.3];
const ONSET_FORMANTS: Record<Onset, readonly [number, number, number] | null> = {
  none: null,
  fricative: null,
  plosive: null,
  nasal: [250, 1700, 2500],
  liquid: [360, 1300, 2600],
};

/** RBJ band-pass (constant 0 dB peak) coefficients. */
function bandpass(freq: number, q: number): [number, number, number, number, number] {
  const w = (TAU * freq) / SR;
  const alpha = Math.sin(w) / (2 * q);
  const a0 = 1 + alpha;
  return [alpha / a0, 0, -alpha / a0, (-2 * Math.cos(w)) / a0, (1 - alpha) / a0];
}

/** A sung syllable: a band-limited sawtooth with vibrato through three formant filters, gliding in from its consonant. */
const vocal: Voice = (out, start, ev, a) => {
  const syl = ev.syllable ?? { vowel: "a", onset: "none" };
  const f0 = hz(ev.midi);
  const voice = a.voice ?? "f";
  const target = FORMANTS[voice][syl.vowel];
  const from = ONSET_FORMANTS[syl.onset] ?? target;
  const consonant = syl.onset === "fricative" ? 0.07 : syl.onset === "plosive" ? 0.02 : 0;
  const release = 0.08;
  const [i0, i1] = span(out, start, consonant + ev.dur + release);
  const n = noise(ev);
  const state = [0, 0, 0, 0, 0, 0];
  let coef = [bandpass(from[0], 6), bandpass(from[1], 9), bandpass(from[2], 12)];
  let phase = 0;
  for (let i = 0; i < i1; i++) {
    const t = i / SR - consonant;
    if (i % 64 === 0 && t >= 0 && t < 0.08) {
      const g = t / 0.08;
      coef = [0, 1, 2].map((k) => bandpass(from[k]! + (target[k]! - from[k]!) * g, 6 + 3 * k));
    }
    let x = 0;
    if (t < 0) {
      // The consonant: hiss for s/f/h, a click for p/t/k.
      x =
        n() *
        (syl.onset === "fricative"
          ? 0.25 * Math.sin((Math.PI * (t + consonant)) / consonant)
          : 0.5 * Math.exp((t + consonant) * -200));
    } else {
      const vib = 1 + 0.006 * Math.sin(TAU * 5.4 * t) * Math.min(1, t / 0.25);
      phase += (f0 * vib) / SR;
      phase -= Math.floor(phase);
      const source = 2 * phase - 1 - blep(phase, f0 / SR) + n() * 0.04;
      let y = 0;
      for (let k = 0; k < 3; k++) {
        const [b0, , b2, a1, a2] = coef[k]!;
        const s1 = state[2 * k]!;
        const s2 = state[2 * k + 1]!;
        const v = source - a1 * s1 - a2 * s2;
        y += (b0 * v + b2 * s2) * FORMANT_GAINS[k]!;
        state[2 * k + 1] = s1;
        state[2 * k] = v;
      }
      x = y * 2.2 * envelope(t, ev.dur, 0.03, release);
    }
    if (i >= i0) out[start + i]! += x * ev.vel;
  }
};

const leadInstrument: Voice = (out, start, ev, a) => {
  const f = hz(ev.midi);
  const release = 0.12;
  const [i0, i1] = span(out, start, ev.dur + release + (a.instruments.lead === "bell" ? 0.8 : 0));
  let phase = 0;
  let lp = 0;
  for (let i = 0; i < i1; i++) {
    const t = i / SR;
    let x: number;
    if (a.instruments.lead === "bell") {
      x = Math.sin(TAU * f * t + 2.5 * Math.exp(-t * 3) * Math.sin(TAU * 3.5 * f * t)) * Math.exp(-t * 2.5) * 0.8;
    } else {
      phase += (f * (1 + 0.004 * Math.sin(TAU * 5 * t))) / SR;
      phase -= Math.floor(phase);
      // A square as the difference of two saws half a period apart.
      const p2 = (phase + 0.5) % 1;
      const sq = 2 * phase - 1 - blep(phase, f / SR) - (2 * p2 - 1 - blep(p2, f / SR));
      lp += (sq - lp) * (1 - Math.exp((-TAU * 2200) / SR));
      x = lp * 0.35 * envelope(t, ev.dur, 0.01, release);
    }
    if (i >= i0) out[start + i]! += x * ev.vel;
  }
};

const VOICES: Record<Inst, Voice> = {
  kick,
  snare,
  hat: metal(0.06, 70),
  openhat: metal(0.35, 9),
  crash: metal(2.5, 1.8),
  bass,
  chord,
  lead: (out, start, ev, a) => (a.instruments.lead === "vocal" ? vocal : leadInstrument)(out, start, ev, a),
};

/** Longest sound a note leaves after its bar (chords over the last bar, the crash), for choosing bars to plan. */
const MAX_TAIL_BARS = 2;
// Reverb needs this much of what came before to sound as it would have in a whole render.
const PREROLL = 2.5;

/**
 * Samples of file time [from, to): every note that sounds in that stretch, through the mix, a small room
 * reverb and a soft limiter, faded out over the song's last seconds. Stereo, SAMPLE_RATE.
 */
export function renderRange(song: Song, from: number, to: number): Stereo {
  const a = song.arrangement;
  const renderFrom = Math.max(0, from - PREROLL);
  const first = Math.max(a.startBar, barAt(a, renderFrom) - MAX_TAIL_BARS);
  const last = Math.min(a.totalBars, barAt(a, to) + 1);
  const length = Math.max(0, Math.round((to - renderFrom) * SR));
  const dry = [new Float32Array(length), new Float32Array(length)] as const;
  const send = new Float32Array(length);
  const scratch = new Float32Array(length);
  for (const ev of plan(song, first, last).events) {
    const start = Math.round((ev.t - renderFrom) * SR);
    if (start >= length) continue;
    const mix = MIX[ev.inst];
    // Each note lands in its own scratch buffer first, so it can be panned and sent to the reverb as one.
    const end = Math.min(length, start + Math.ceil((ev.dur + 3) * SR));
    const s0 = Math.max(0, start);
    scratch.fill(0, s0, end);
    VOICES[ev.inst](scratch, start, ev, a);
    const left = Math.cos(((mix.pan + 1) * Math.PI) / 4) * Math.SQRT2 * mix.gain;
    const right = Math.sin(((mix.pan + 1) * Math.PI) / 4) * Math.SQRT2 * mix.gain;
    for (let i = s0; i < end; i++) {
      const x = scratch[i]!;
      dry[0][i]! += x * left;
      dry[1][i]! += x * right;
      send[i]! += x * mix.gain * mix.send;
    }
  }
  reverb(send, dry);
  return master(dry, a, renderFrom, from);
}

/** A small Schroeder room (parallel damped combs, then all-passes), a little different on each side. */
function reverb(send: Float32Array, out: readonly [Float32Array, Float32Array]): void {
  const combs = [1116, 1188, 1277, 1356];
  for (const [side, spread] of [
    [0, 0],
    [1, 23],
  ] as const) {
    const wet = new Float32Array(send.length);
    for (const len of combs) {
      const line = new Float32Array(len + spread);
      let store = 0;
      for (let i = 0, k = 0; i < send.length; i++) {
        const y = line[k]!;
        store = y * 0.7 + store * 0.3;
        line[k] = send[i]! + store * 0.78;
        wet[i]! += y * 0.25;
        if (++k === line.length) k = 0;
      }
    }
    for (const len of [556, 441]) {
      const line = new Float32Array(len + spread);
      for (let i = 0, k = 0; i < wet.length; i++) {
        const buffered = line[k]!;
        const x = wet[i]!;
        line[k] = x + buffered * 0.5;
        wet[i] = buffered - x;
        if (++k === line.length) k = 0;
      }
    }
    const o = out[side];
    for (let i = 0; i < o.length; i++) o[i]! += wet[i]!;
  }
}

/** Soft limiting and the song's closing fade, then the pre-roll cut off. */
function master(dry: readonly [Float32Array, Float32Array], a: Arrangement, renderFrom: number, from: number): Stereo {
  const skip = Math.round((from - renderFrom) * SR);
  const fadeStart = a.seconds - 2;
  const out = dry.map((ch) => {
    const o = new Float32Array(ch.length - skip);
    for (let i = 0; i < o.length; i++) {
      const t = from + i / SR;
      const fade = t > fadeStart ? Math.max(0, (a.seconds - t) / 2) : 1;
      o[i] = Math.tanh(ch[i + skip]! * 0.9) * 0.92 * fade;
    }
    return o;
  });
  return { left: out[0]!, right: out[1]! };
}

// ---------------------------------------------------------------------------------------------- PCM helpers

/** 16-bit little-endian PCM WAV of a stereo buffer. */
export function wav(audio: Stereo): Uint8Array {
  const frames = audio.left.length;
  const fmt = new DataView(new ArrayBuffer(16));
  fmt.setUint16(0, 1, true); // PCM
  fmt.setUint16(2, 2, true); // channels
  fmt.setUint32(4, SR, true);
  fmt.setUint32(8, SR * 4, true); // bytes a second
  fmt.setUint16(12, 4, true); // bytes a frame
  fmt.setUint16(14, 16, true); // bits a sample
  const pcm = new Uint8Array(frames * 4);
  const v = new DataView(pcm.buffer);
  const q = (x: number) => Math.max(-32768, Math.min(32767, Math.round(x * 32767)));
  for (let i = 0; i < frames; i++) {
    v.setInt16(i * 4, q(audio.left[i]!), true);
    v.setInt16(i * 4 + 2, q(audio.right[i]!), true);
  }
  return writeRiff("WAVE", [riffChunk("fmt ", new Uint8Array(fmt.buffer)), riffChunk("data", pcm)]);
}

/** Interleaved s16le stereo PCM to float channels. */
export function fromPcm(pcm: Uint8Array): Stereo {
  const frames = Math.floor(pcm.length / 4);
  const v = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const left = new Float32Array(frames);
  const right = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = v.getInt16(i * 4, true) / 32768;
    right[i] = v.getInt16(i * 4 + 2, true) / 32768;
  }
  return { left, right };
}

/**
 * The source up to `at` seconds, then `next` (which starts `fade` seconds before `at`), crossfaded at equal
 * power over those `fade` seconds. A source shorter than `at` is padded with silence.
 */
export function join(source: Stereo, next: Stereo, at: number, fade: number): Stereo {
  const cut = Math.round(at * SR);
  const fadeLen = Math.round(fade * SR);
  const head = cut - fadeLen;
  const length = head + next.left.length;
  const join1 = (src: Float32Array, add: Float32Array) => {
    const o = new Float32Array(length);
    o.set(src.subarray(0, Math.min(head, src.length)));
    for (let i = 0; i < add.length; i++) {
      const g = i < fadeLen ? i / fadeLen : 1;
      const old = head + i < src.length && i < fadeLen ? src[head + i]! * Math.cos((g * Math.PI) / 2) : 0;
      o[head + i] = old + add[i]! * Math.sin((g * Math.PI) / 2);
    }
    return o;
  };
  return { left: join1(source.left, next.left), right: join1(source.right, next.right) };
}

/**
 * A rough tempo and beat phase of recorded music: the autocorrelation of its onset strength (rises in
 * short-time energy) over 70-160 BPM. Null when there is nothing rhythmic to go by (silence, a drone).
 */
export function estimateTempo(audio: Stereo): { bpm: number; beat: number } | null {
  const hop = 512;
  const frames = Math.floor(audio.left.length / hop);
  if (frames < 200) return null;
  const energy = new Float32Array(frames);
  for (let f = 0; f < frames; f++) {
    let e = 0;
    for (let i = f * hop; i < (f + 1) * hop; i++) e += audio.left[i]! ** 2 + audio.right[i]! ** 2;
    energy[f] = Math.log1p(e * 100);
  }
  const onset = new Float32Array(frames);
  for (let f = 1; f < frames; f++) onset[f] = Math.max(0, energy[f]! - energy[f - 1]!);
  const fps = SR / hop;
  let best = { lag: 0, score: 0 };
  let total = 0;
  for (let f = 0; f < frames; f++) total += onset[f]! * onset[f]!;
  for (let lag = Math.floor((60 / 160) * fps); lag <= Math.ceil((60 / 70) * fps); lag++) {
    let score = 0;
    for (let f = lag; f < frames; f++) score += onset[f]! * onset[f - lag]!;
    score /= frames - lag;
    if (score > best.score) best = { lag, score };
  }
  if (!best.lag || best.score < (total / frames) * 0.15) return null;
  let phase = { at: 0, sum: -1 };
  for (let p = 0; p < best.lag; p++) {
    let sum = 0;
    for (let f = p; f < frames; f += best.lag) sum += onset[f]!;
    if (sum > phase.sum) phase = { at: p, sum };
  }
  return { bpm: Math.round((60 * fps) / best.lag), beat: (phase.at * hop) / SR };
}

/** The arrangement for continuing audio that is not ours: a new song put on the upload's estimated beat. */
export function arrangementForUpload(input: {
  seed: string;
  variation: number;
  text: string;
  instrumental: boolean;
  hook: string;
  continueAt: number;
  tempo: { bpm: number; beat: number } | null;
  voice: "f" | "m" | null;
}): Arrangement {
  const fresh = newArrangement({
    seed: input.seed,
    variation: input.variation,
    text: input.text,
    instrumental: input.instrumental,
    hook: input.hook,
  });
  const bpm = input.tempo?.bpm ?? fresh.bpm;
  const barSeconds = 240 / bpm;
  const beat = input.tempo?.beat ?? 0;
  // Bar 0 at or before the first sample, on a beat of the upload.
  const offset = round3(beat - Math.ceil(beat / barSeconds) * barSeconds);
  return continuation(
    { ...fresh, bpm, barSeconds, offset },
    {
      seed: input.seed,
      variation: input.variation,
      continueAt: input.continueAt,
      instrumental: input.instrumental,
      voice: input.voice,
      hook: input.hook,
    },
  );
}
