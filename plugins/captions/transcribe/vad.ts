// The voice-activity step: does the audio hold speech at all? The chain asks before it runs a recognizer
// (after our own record and an embedded track, which need no audio), and silence answers an empty transcript,
// the caption job's `no_speech` (refunded) without a recognizer guessing words into noise.
//
// An energy detector over the PCM samples, read directly from the WAV, rather than ffmpeg's `silencedetect`:
// the extractor hands us 16 kHz mono 16-bit PCM already, so no engine run is needed (a second full decode on
// ffmpeg.wasm costs seconds per minute of audio), the numbers are the same on both engines by construction,
// and a threshold alone (all silencedetect has) cannot tell speech from a steady tone or hum at the same level.
//
// What counts as speech (every number in VAD below):
//   - a 20 ms frame is active when its RMS level is at least `marginDb` above the file's noise floor (the
//     `floorPercentile`-th percentile of all frame levels, but never above `maxFloorDb`, so a file that is
//     speech from end to end still has speech above its floor) and above `minLevelDb` absolute;
//   - active frames closer than `bridgeSeconds` join into one segment; a segment shorter than
//     `minSegmentSeconds` is a click, not a word;
//   - a segment is speech only if its level moves: the spread between its quiet and loud active frames
//     (`spreadLow`-th to `spreadHigh`-th percentile) is at least `minSpreadDb`. Speech rises and falls with
//     every syllable (8-30 dB, a lone eSpeak "a" 8 dB); a tone or hum, steady or beeping, is flat (under 1 dB);
//   - the file holds speech when its speech segments add up to at least `minSpeechSeconds`.
// So digital silence, low noise (anything under -50 dBFS, or steady noise at any level), and a pure tone
// (steady, or starting and stopping) are not speech; eSpeak's speech is (test/captions/transcribe-vad.test.ts).
// The margin was tuned on eSpeak sentences mixed with a steady tone and with white noise: 6 dB finds the
// speech over a bed about 8 dB quieter than it (10 dB missed it there; 4 dB began to take noise frames for
// speech). Known limit: a louder bed hides the speech (`no_speech`), and loud, itself fluctuating music can be
// taken for speech (the recognizer then answers with few or no words, which is `no_speech` too).
import type { MediaEngine } from "mediagate/plugin";
import { SPHINX_RATE, SphinxAudioError, sphinxSamples } from "./sphinx-wav.ts";

export const VAD = {
  frameSeconds: 0.02,
  floorPercentile: 10,
  marginDb: 6,
  maxFloorDb: -45,
  minLevelDb: -50,
  bridgeSeconds: 0.2,
  minSegmentSeconds: 0.08,
  spreadLow: 10,
  spreadHigh: 90,
  minSpreadDb: 6,
  minSpeechSeconds: 0.2,
  /** Converting a WAV that is not 16-bit PCM (the engine run's time-out). */
  convertTimeoutMs: 120_000,
} as const;

export interface SpeechSegment {
  start: number;
  end: number;
}

export interface SpeechDetection {
  speech: boolean;
  /** The segments judged speech, in seconds from the start of the file. */
  segments: SpeechSegment[];
}

const SILENT_DB = -120;

/** The RMS level of each frame in dBFS (-120 for digital silence). */
export function frameLevels(samples: Int16Array, rate = SPHINX_RATE, signal?: AbortSignal): Float64Array {
  const size = Math.max(1, Math.round(rate * VAD.frameSeconds));
  const n = Math.floor(samples.length / size);
  const levels = new Float64Array(n);
  for (let f = 0; f < n; f++) {
    if (f % 8192 === 0) signal?.throwIfAborted();
    let sum = 0;
    for (let i = f * size, end = i + size; i < end; i++) sum += samples[i]! * samples[i]!;
    const ms = sum / size / (32768 * 32768);
    levels[f] = ms > 0 ? Math.max(SILENT_DB, 10 * Math.log10(ms)) : SILENT_DB;
  }
  return levels;
}

function percentile(values: Float64Array, p: number): number {
  if (values.length === 0) return SILENT_DB;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.floor((p / 100) * sorted.length)))]!;
}

/** The speech segments of a level track (see the rules at the top of this file). */
export function speechSegments(levels: Float64Array): SpeechSegment[] {
  // Capped: in a file that is speech from end to end (a single word, a talk without pauses) the percentile
  // lands on speech itself, and the speech would then have nothing to rise above.
  const floor = Math.min(VAD.maxFloorDb, percentile(levels, VAD.floorPercentile));
  const threshold = Math.max(VAD.minLevelDb, floor + VAD.marginDb);
  const bridge = Math.round(VAD.bridgeSeconds / VAD.frameSeconds);
  const runs: { from: number; to: number }[] = [];
  for (let f = 0; f < levels.length; f++) {
    if (levels[f]! < threshold) continue;
    const last = runs.at(-1);
    if (last && f - last.to <= bridge) last.to = f + 1;
    else runs.push({ from: f, to: f + 1 });
  }
  const out: SpeechSegment[] = [];
  for (const run of runs) {
    if ((run.to - run.from) * VAD.frameSeconds < VAD.minSegmentSeconds) continue;
    // Over the active frames only: the pauses bridged inside a segment would give beeps a spread they lack.
    const inside = levels.subarray(run.from, run.to).filter((l) => l >= threshold);
    const spread = percentile(inside, VAD.spreadHigh) - percentile(inside, VAD.spreadLow);
    if (spread < VAD.minSpreadDb) continue;
    out.push({ start: round(run.from * VAD.frameSeconds), end: round(run.to * VAD.frameSeconds) });
  }
  return out;
}

const round = (s: number) => Math.round(s * 1000) / 1000;

/** 16 kHz mono samples of `wav`; a WAV that is not 16-bit PCM (float, 24-bit, or not a WAV) is converted by the engine. */
async function samplesOf(engine: MediaEngine, wav: Uint8Array, signal: AbortSignal): Promise<Int16Array> {
  try {
    return sphinxSamples(wav);
  } catch (err) {
    if (!(err instanceof SphinxAudioError)) throw err;
  }
  const out = await engine.run(
    ["-i", "in.audio", "-vn", "-ac", "1", "-ar", String(SPHINX_RATE), "-c:a", "pcm_s16le", "-f", "wav", "out.wav"],
    {
      inputs: { "in.audio": wav },
      outputs: ["out.wav"],
      signal,
      timeoutMs: VAD.convertTimeoutMs,
    },
  );
  return sphinxSamples(out["out.wav"]!);
}

/** Whether `wav` holds speech, and where. Empty audio holds none. */
export async function detectSpeech(
  engine: MediaEngine,
  wav: Uint8Array,
  signal: AbortSignal,
): Promise<SpeechDetection> {
  signal.throwIfAborted();
  if (wav.byteLength === 0) return { speech: false, segments: [] };
  const samples = await samplesOf(engine, wav, signal);
  const segments = speechSegments(frameLevels(samples, SPHINX_RATE, signal));
  const seconds = segments.reduce((s, g) => s + (g.end - g.start), 0);
  return { speech: seconds >= VAD.minSpeechSeconds, segments };
}
