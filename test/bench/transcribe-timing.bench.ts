// Benchmark: word timing error of each transcription provider against the known word times of our own
// synthesized speech (eSpeak NG): median and p95 of |start error| and |end error| in ms over the words a
// provider got right, with how many of the spoken words that is (recall) and its speed in seconds of audio
// per second of wall time.
//
//   - pocketsphinx: recognition only, recognition + forced alignment of its own hypothesis (what the chain
//     uses), and the latter without the warm-up pass (SPHINX.warmupSeconds);
//   - timed-text (plugins/captions/transcribe/timed-text.ts, when present): fed a WebVTT with one cue per
//     sentence, from its first word's start to its last word's end, as a subtitle track would carry it;
//   - spoken (plugins/captions/transcribe/spoken.ts, when present): fed our own record; 0 by construction
//     (it returns the record's times), measured anyway;
//   - baseline in the same run: each sentence's words spread evenly over the sentence's known span by their
//     length in letters (what sentence-level timing alone gives).
//
// Reference speech: each word synthesized alone, its silent edges trimmed to 20 ms, 50 ms between words,
// 500 ms between sentences, so every word's audible extent is known to the sample; and, when lib/speech's
// speakTimed is exported from mediagate/plugin, its continuous speech with its own record as a second set.
//
// A recognized word counts when it has the reference word's text and overlaps it in time (or is less than
// 0.25 s away), paired in order (longest common subsequence): a recognized "the" is not paired with a "the"
// a sentence away. Words further off count against recall, not in the error figures.
//
// Run: npx tsx test/bench/transcribe-timing.bench.ts   (BENCH_REPEAT=n sentences sets, default 2)
import process from "node:process";
import type { SpokenRecord, TimedWord, TranscriptionProvider } from "../../contracts/speech.ts";
import { createPocketsphinxProvider } from "../../plugins/captions/transcribe/pocketsphinx.ts";
import { SPHINX_RATE, sphinxSamples, sphinxWav } from "../../plugins/captions/transcribe/sphinx-wav.ts";
import {
  joinSamples,
  type KnownSpeech,
  matchWords,
  optionalModule,
  VOICE,
  wordByWordSpeech,
} from "../helpers/known-speech.ts";

const SENTENCES = [
  "the weather is nice today",
  "please open the door",
  "we will meet at seven o'clock",
  "captions make every video easier to follow",
  "the train leaves the station at noon",
  "she bought three green apples at the market",
  "turn left at the next corner",
  "my brother plays the guitar every evening",
];
const repeat = Number(process.env.BENCH_REPEAT ?? 2);

/** A set of reference speech: per sentence, its words with their known times. */
interface SpeechSet extends KnownSpeech {
  label: string;
}

async function wordByWord(sentences: readonly string[]): Promise<SpeechSet> {
  return { label: "word by word (trimmed eSpeak words)", ...(await wordByWordSpeech(sentences)) };
}

/** lib/speech's speakTimed, one sentence at a time with 0.5 s between (its record shifted accordingly). */
async function continuous(sentences: readonly string[]): Promise<SpeechSet | null> {
  const plugin = await optionalModule("mediagate/plugin");
  const speakTimed = plugin?.speakTimed ?? (await optionalModule("../../lib/speech/timed.ts"))?.speakTimed;
  if (typeof speakTimed !== "function") return null;
  const parts: Int16Array[] = [];
  const out: TimedWord[][] = [];
  let at = 0;
  for (const sentence of sentences) {
    const { wav, spoken } = (await speakTimed(sentence, VOICE)) as { wav: { bytes: Uint8Array }; spoken: SpokenRecord };
    const x = sphinxSamples(wav.bytes);
    const t0 = at / SPHINX_RATE;
    out.push(spoken.words.map((w) => ({ ...w, start: w.start + t0, end: w.end + t0 })));
    parts.push(x, new Int16Array(SPHINX_RATE / 2));
    at += x.length + SPHINX_RATE / 2;
  }
  return {
    label: "continuous speech (speakTimed's record)",
    wav: sphinxWav(joinSamples(parts)),
    seconds: at / SPHINX_RATE,
    sentences: out,
  };
}

const quantile = (xs: number[], q: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (x: number) => (Number.isNaN(x) ? "   -" : String(Math.round(x * 1000)).padStart(4));

function report(
  label: string,
  known: readonly TimedWord[],
  got: readonly TimedWord[],
  seconds: number,
  wallMs: number | null,
) {
  const p = matchWords(known, got);
  const se = p.map(([k, g]) => Math.abs(k.start - g.start));
  const ee = p.map(([k, g]) => Math.abs(k.end - g.end));
  const speed = wallMs === null ? "" : `  ${(seconds / (wallMs / 1000)).toFixed(1)} s/s`;
  if (process.env.BENCH_DEBUG)
    for (const [k, g] of p)
      console.log(
        `    ${k.text} known ${k.start.toFixed(2)}-${k.end.toFixed(2)} got ${g.start.toFixed(2)}-${g.end.toFixed(2)}`,
      );
  console.log(
    `  ${label.padEnd(40)} start median ${ms(quantile(se, 0.5))} p95 ${ms(quantile(se, 0.95))} ms | end median ${ms(quantile(ee, 0.5))} p95 ${ms(quantile(ee, 0.95))} ms | ${String(p.length).padStart(3)}/${known.length} words (${Math.round((100 * p.length) / known.length)}%)${speed}`,
  );
}

/** Each sentence's words spread over its known span in proportion to their letters. */
function evenSpread(sentences: readonly TimedWord[][]): TimedWord[] {
  return sentences.flatMap((ws) => {
    const start = ws[0]!.start;
    const span = ws.at(-1)!.end - start;
    const letters = ws.reduce((n, w) => n + w.text.length, 0);
    let at = start;
    return ws.map((w) => {
      const d = (span * w.text.length) / letters;
      const out = { text: w.text, start: at, end: at + d, confidence: 1 };
      at += d;
      return out;
    });
  });
}

const vttTime = (s: number) => {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${sec.toFixed(3).padStart(6, "0")}`;
};
const webvtt = (sentences: readonly TimedWord[][]) =>
  `WEBVTT\n\n${sentences.map((ws, i) => `${i + 1}\n${vttTime(ws[0]!.start)} --> ${vttTime(ws.at(-1)!.end)}\n${ws.map((w) => w.text).join(" ")}\n`).join("\n")}`;

/** The provider a module exports under `name`: the object itself, or what a no-argument factory returns. */
function providerIn(mod: Record<string, any> | null, name: string): TranscriptionProvider | null {
  for (const value of Object.values(mod ?? {})) {
    if (value && typeof value === "object" && value.name === name && typeof value.transcribe === "function")
      return value;
    if (typeof value === "function" && value.length === 0) {
      try {
        const made = value();
        if (made && made.name === name && typeof made.transcribe === "function") return made;
      } catch {
        // not a factory
      }
    }
  }
  return null;
}

async function timed(p: TranscriptionProvider, request: Parameters<TranscriptionProvider["transcribe"]>[0]) {
  const t0 = performance.now();
  const got = await p.transcribe(request);
  return { words: got?.words ?? null, wallMs: performance.now() - t0 };
}

const sets: SpeechSet[] = [];
const sentences = Array.from({ length: repeat }, () => SENTENCES).flat();
sets.push(await wordByWord(sentences));
const natural = await continuous(sentences);
if (natural) sets.push(natural);

const timedText = providerIn(await optionalModule("../../plugins/captions/transcribe/timed-text.ts"), "timed-text");
const spoken = providerIn(await optionalModule("../../plugins/captions/transcribe/spoken.ts"), "spoken");
const signal = new AbortController().signal;

console.log(`word timing error against known eSpeak word times; ${sentences.length} sentences per set`);
for (const set of sets) {
  const known = set.sentences.flat();
  console.log(`\n${set.label}: ${known.length} words, ${set.seconds.toFixed(1)} s of audio`);
  report("baseline: even spread over each sentence", known, evenSpread(set.sentences), set.seconds, null);
  for (const [label, opts] of [
    ["pocketsphinx, recognition only", { align: false }],
    ["pocketsphinx, recognition + alignment", {}],
    ["pocketsphinx, + alignment, no warm-up", { warmupSeconds: 0 }],
  ] as const) {
    const r = await timed(createPocketsphinxProvider(opts), { audio: set.wav, language: "en", signal });
    if (r.words) report(label, known, r.words, set.seconds, r.wallMs);
    else console.log(`  ${label.padEnd(40)} declined (pocketsphinx or its en-us model not installed)`);
  }
  if (timedText) {
    const r = await timed(timedText, { audio: set.wav, language: "en", timedText: webvtt(set.sentences), signal });
    if (r.words) report("timed-text, one WebVTT cue per sentence", known, r.words, set.seconds, r.wallMs);
    else console.log("  timed-text declined");
  } else console.log("  timed-text: plugins/captions/transcribe/timed-text.ts not found (not measured)");
  if (spoken) {
    const r = await timed(spoken, { audio: set.wav, language: "en", spoken: { language: "en", words: known }, signal });
    if (r.words) report("spoken record (0 by construction)", known, r.words, set.seconds, r.wallMs);
    else console.log("  spoken declined");
  } else
    console.log(
      "  spoken: plugins/captions/transcribe/spoken.ts not found; it returns the record's own times: 0 ms by construction",
    );
}
