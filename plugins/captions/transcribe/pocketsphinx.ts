// Offline recognition with CMU pocketsphinx, the chain's third provider (after our own spoken record and an
// embedded timed-text track, before the upstream adapter). Two runs of Debian 12's pocketsphinx tools
// (0.8+5prealpha; packages `pocketsphinx` and `pocketsphinx-en-us`) in a private temp dir:
//
//   1. pocketsphinx_continuous decodes the whole file with the en-us language model (-time yes prints every
//      word with its first and last frame and its posterior probability, utterance by utterance as its
//      voice-activity detector cuts them, times from the start of the file);
//   2. pocketsphinx_batch aligns that hypothesis to the audio (align.ts) to refine the word boundaries.
//
// The second pass is what makes the times usable: the recognizer's boundaries drift where the language model
// hesitated, and inside a long utterance its times run about 0.1 s early (its voice-activity detector holds
// frames back and does not count them). On our eSpeak speech the median start error goes from ~100 ms to
// ~10 ms (test/bench/transcribe-timing.bench.ts).
//
// The provider declines (null) when the tools or the en-us model are not installed, or for a language other
// than English (the only model the packages ship). Known limit, in docs/areas/captions.md: quality on real speech is
// modest (a small 2015 model; noisy or accented speech and music beds come out with many wrong words);
// operators who need better configure the next provider (the OpenAI-compatible adapter).

import { accessSync, constants } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  findOnPath,
  type Logger,
  type TimedWord,
  type TranscribeRequest,
  type Transcript,
  type TranscriptionProvider,
} from "mediagate/plugin";
import { LIMITS } from "../limits.ts";
import { alignUtterances, baseWord, FRAME_RATE, isFiller, type Utterance } from "./align.ts";
import { runSphinx } from "./sphinx-run.ts";
import { SPHINX_RATE, sphinxSamples, writeSphinxWav } from "./sphinx-wav.ts";

/** Every number of this provider. */
export const SPHINX = {
  /** Where pocketsphinx-en-us puts the model: acoustic model `en-us/`, `en-us.lm.bin`, `cmudict-en-us.dict`. */
  modelDir: "/usr/share/pocketsphinx/model/en-us",
  recognizer: "pocketsphinx_continuous",
  aligner: "pocketsphinx_batch",
  /**
   * A word's confidence when the CLI printed no usable probability. The CLI prints the word's posterior
   * (from the lattice) for every word, so this only covers a malformed field; 0.5 says "recognized, no more".
   */
  fallbackConfidence: 0.5,
  /**
   * Each run's time-out: a fixed start-up allowance plus this much per second of audio. Measured: recognition
   * 0.4 s and alignment 0.15 s per second of audio on one core of the shared 2-CPU machine.
   */
  timeoutBaseMs: 60_000,
  timeoutPerAudioSecondMs: 3_000,
  /** ≈40 bytes a word line, a few words a second: 1800 s of speech prints well under 1 MB. */
  maxOutputBytes: 8 * 1024 * 1024,
  /** Audio beyond the longest source a caption job accepts is refused (the caller cut it already). */
  maxAudioSeconds: LIMITS.maxSeconds + 10,
  /** Shorter than this holds no word (and the decoder needs a few frames of context): an empty transcript. */
  minAudioSeconds: 0.1,
  /**
   * The recognizer normalizes its features with a running cepstral mean that starts from the model's
   * average (-cmn live; the -cmninit option is overridden by the model's feat.params), so the first seconds
   * of a file are decoded with a mean far from the speaker's and come out wrong far more often than the
   * rest (eSpeak sentences: most first-sentence words wrong, the same sentence right when it came second).
   * So the recognizer hears the first few seconds twice: a copy, a pause long enough for its voice-activity
   * detector to end the utterance, then the file; what it says about the copy is dropped. Costs this many
   * seconds of decoding per file. 0 turns it off.
   */
  warmupSeconds: 6,
  warmupGapSeconds: 1,
  /** Share of the progress the recognition pass takes; the alignment gets the rest. */
  recognitionShare: 0.8,
} as const;

export interface PocketsphinxOptions {
  /** pocketsphinx_continuous: a path, or a name looked up on PATH (default). */
  binary?: string;
  /** pocketsphinx_batch for the alignment: default the one beside `binary`, else on PATH; without it no alignment. */
  alignBinary?: string;
  modelDir?: string;
  /** false: recognition times only (the benchmark compares both). Default true. */
  align?: boolean;
  /** Overrides SPHINX.warmupSeconds (the benchmark measures both). */
  warmupSeconds?: number;
  /** Overrides the per-run time-out (tests). */
  timeoutMs?: number;
  /** Where a failed alignment is reported (the words then keep the recognizer's times). */
  log?: Pick<Logger, "warn">;
}

export interface Installed {
  recognizer: string;
  aligner: string | undefined;
  hmm: string;
  lm: string;
  dict: string;
}

/** Whether this process may use `path` in `mode` (constants.X_OK, constants.R_OK). */
function allowed(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

const executable = (path: string) => allowed(path, constants.X_OK);
const readable = (path: string) => allowed(path, constants.R_OK);

function resolveBinary(name: string): string | undefined {
  if (name.includes("/")) return executable(name) ? name : undefined;
  return findOnPath(name);
}

/**
 * The tools and model files, or why not (the first required one missing). A few access() calls: looked up on
 * each transcription (an operator may install the packages without a restart), at boot for the boot line,
 * and before an upload is accepted (uploads/operations.ts).
 */
export function locatePocketsphinx(opts: PocketsphinxOptions = {}): Installed | { missing: string } {
  const wanted = opts.binary ?? SPHINX.recognizer;
  const recognizer = resolveBinary(wanted);
  if (!recognizer) return { missing: wanted.includes("/") ? `no executable ${wanted}` : `${wanted} not on PATH` };
  const modelDir = opts.modelDir ?? SPHINX.modelDir;
  const hmm = join(modelDir, "en-us");
  const lm = join(modelDir, "en-us.lm.bin");
  const dict = join(modelDir, "cmudict-en-us.dict");
  for (const f of [join(hmm, "mdef"), join(hmm, "means"), lm, dict])
    if (!readable(f)) return { missing: `no en-us model (${f})` };
  let aligner: string | undefined;
  if (opts.align !== false) {
    aligner =
      opts.alignBinary !== undefined
        ? resolveBinary(opts.alignBinary)
        : (resolveBinary(join(dirname(recognizer), SPHINX.aligner)) ?? findOnPath(SPHINX.aligner));
  }
  return { recognizer, aligner, hmm, lm, dict };
}

/** The tools and model files, or null when any required one is missing. */
function installed(opts: PocketsphinxOptions): Installed | null {
  const found = locatePocketsphinx(opts);
  return "missing" in found ? null : found;
}

const SEGMENT = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (\S+)$/;

/** A clamped probability, or the fixed value when the field is not a number. */
function confidenceOf(field: string): number {
  const p = Number(field);
  return Number.isFinite(p) ? Math.min(1, Math.max(0, p)) : SPHINX.fallbackConfidence;
}

/**
 * pocketsphinx_continuous -time yes output: per utterance, the hypothesis text, then one `token start end
 * prob` line per segment from `<s>` to `</s>`. Returns the utterances (fillers dropped, `(2)` suffixes cut)
 * and each word's confidence, in order. `shift` seconds of warm-up audio before the file are taken off every
 * time, and what was said in them is dropped.
 */
export function parseRecognition(text: string, shift = 0): { utterances: Utterance[]; confidences: number[] } {
  const utterances: Utterance[] = [];
  const confidences: number[] = [];
  let current: Utterance | undefined;
  for (const line of text.split("\n")) {
    const m = SEGMENT.exec(line.trim());
    if (!m) continue; // the hypothesis line
    const [, token = "", s = "", e = "", prob = ""] = m; // every group is in the pattern, so each matched
    const start = Number(s) - shift;
    const end = Number(e) + 1 / FRAME_RATE - shift; // the printed end is the segment's last frame, not the frame after it
    if (token === "<s>" || !current) {
      current = { start: Math.max(0, start), end, words: [] };
      utterances.push(current);
    }
    current.end = Math.max(current.end, end);
    if (token === "</s>") {
      current = undefined;
      continue;
    }
    if (isFiller(token) || start < 0) continue;
    current.words.push({ word: baseWord(token), start, end });
    confidences.push(confidenceOf(prob));
  }
  return { utterances: utterances.filter((u) => u.end > 0), confidences };
}

const isEnglish = (language: string | undefined) => language === undefined || /^en(?:[-_][a-z]{2})?$/i.test(language);

export function createPocketsphinxProvider(opts: PocketsphinxOptions = {}): TranscriptionProvider {
  return {
    name: "pocketsphinx",
    async transcribe(request: TranscribeRequest): Promise<Transcript | null> {
      if (!isEnglish(request.language)) return null;
      const tools = installed(opts);
      if (!tools) return null;
      request.signal.throwIfAborted();

      const samples = sphinxSamples(request.audio, SPHINX.maxAudioSeconds);
      const seconds = samples.length / SPHINX_RATE;
      const transcript = (words: TimedWord[]): Transcript => ({ language: "en", words, provider: "pocketsphinx" });
      if (seconds < SPHINX.minAudioSeconds) return transcript([]);

      const timeoutMs = opts.timeoutMs ?? SPHINX.timeoutBaseMs + SPHINX.timeoutPerAudioSecondMs * seconds;
      const progress = (f: number) => request.onProgress?.(Math.min(1, Math.max(0, f)));
      const dir = await mkdtemp(join(tmpdir(), "mediagate-sphinx-"));
      try {
        await writeSphinxWav(join(dir, "audio.wav"), [samples]);
        // The recognizer's input: the warm-up copy, a pause, the file (see SPHINX.warmupSeconds).
        const warm = Math.round(Math.min(opts.warmupSeconds ?? SPHINX.warmupSeconds, seconds) * SPHINX_RATE);
        const gap = warm > 0 ? Math.round(SPHINX.warmupGapSeconds * SPHINX_RATE) : 0;
        await writeSphinxWav(join(dir, "heard.wav"), [samples.subarray(0, warm), gap, samples]);
        const shift = (warm + gap) / SPHINX_RATE;
        progress(0);
        const out = await runSphinx(
          tools.recognizer,
          [
            "-hmm",
            tools.hmm,
            "-lm",
            tools.lm,
            "-dict",
            tools.dict,
            "-infile",
            "heard.wav",
            "-time",
            "yes",
            "-logfn",
            "recognize.log",
          ],
          {
            cwd: dir,
            timeoutMs,
            maxOutputBytes: SPHINX.maxOutputBytes,
            signal: request.signal,
            logFile: "recognize.log",
            onLine: request.onProgress
              ? (line) => {
                  const m = SEGMENT.exec(line.trim());
                  if (m) progress(((Number(m[3]) - shift) / seconds) * SPHINX.recognitionShare);
                }
              : undefined,
          },
        );
        const { utterances, confidences } = parseRecognition(out, shift);
        progress(SPHINX.recognitionShare);
        const timed = tools.aligner
          ? await alignUtterances(utterances, {
              batchBinary: tools.aligner,
              hmmDir: tools.hmm,
              dictFile: tools.dict,
              dir,
              wavName: "audio.wav",
              seconds,
              timeoutMs,
              maxOutputBytes: SPHINX.maxOutputBytes,
              signal: request.signal,
              onFailure: (err) =>
                opts.log?.warn("pocketsphinx alignment failed; keeping the recognizer's word times", {
                  error: err instanceof Error ? err.message : String(err),
                }),
            })
          : utterances.map((u) => u.words);
        // Milliseconds: frames are 10 ms, and the sums of floats above should not show as 0.41000000000000003.
        const ms = (x: number) => Math.round(x * 1000) / 1000;
        const words = timed.flat().map(
          (w, i): TimedWord => ({
            text: w.word,
            start: ms(w.start),
            // A word lasts at least one frame (an aligner's zero-length segment would be an invisible caption).
            end: ms(Math.max(w.end, w.start + 0.01)),
            confidence: confidences[i] ?? SPHINX.fallbackConfidence,
          }),
        );
        progress(1);
        return transcript(words);
      } finally {
        await rm(dir, { recursive: true, force: true }).catch(() => {});
      }
    },
  };
}
