// Forced alignment of pocketsphinx's own hypothesis: the recognizer's pass decodes with the language model,
// whose word boundaries drift where the model hesitated between words; a second pass that may only say the
// words already found, in that order (a straight-line finite-state grammar per utterance, with silence and
// noise fillers allowed between words), places each boundary on the acoustics alone.
//
// Debian 12's pocketsphinx (0.8+5prealpha) has no `align` command, so this is pocketsphinx_batch: one run for
// the whole file, one control-file line per utterance of the first pass (its frame range in the WAV) and one
// FSG file per utterance (-fsgctl). Its -hypseg output gives each word's first frame, relative to the
// utterance's. An utterance the grammar cannot match comes back empty; its words keep the first pass's times,
// and so do all of them when pocketsphinx_batch fails as a whole.

import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runSphinx } from "./sphinx-run.ts";

/** Frames per second of the en-us model (-frate 100): times in the CLI's output are frames / 100. */
export const FRAME_RATE = 100;

/** A word of the first pass: `word` as the dictionary spells it (no `(2)` suffix), times in seconds. */
export interface HypWord {
  word: string;
  start: number;
  end: number;
}

/** One utterance of the first pass: the stretch between its `<s>` and `</s>` and the words in it. */
export interface Utterance {
  start: number;
  end: number;
  words: HypWord[];
}

/** The alignment's search beams (see the run's arguments). */
export const ALIGN_BEAM = { beam: "1e-80", pbeam: "1e-80", wbeam: "1e-60" } as const;

/**
 * Seconds added before and after each utterance of the first pass for its alignment. The recognizer's
 * times run up to 0.1 s early inside a long utterance (its voice-activity detector holds frames back at the
 * start and does not count them), so an utterance's own end may cut its last word; fillers absorb the
 * extra silence.
 */
export const ALIGN_PAD = { before: 0.1, after: 0.25 } as const;

/** A straight-line grammar: exactly these words, in order (fillers come from -fsgusefiller). */
export function lineFsg(name: string, words: readonly string[]): string {
  const lines = [`FSG_BEGIN ${name}`, `NUM_STATES ${words.length + 1}`, "START_STATE 0", `FINAL_STATE ${words.length}`];
  words.forEach((w, i) => lines.push(`TRANSITION ${i} ${i + 1} 1.0 ${w}`));
  lines.push("FSG_END", "");
  return lines.join("\n");
}

/** Fillers of the model's noise dictionary and the sentence markers: never caption text. */
export function isFiller(token: string): boolean {
  return (
    token === "<s>" ||
    token === "</s>" ||
    token === "<sil>" ||
    /^\[.*\]$/.test(token) ||
    /^\+\+?.*\+\+?$/.test(token) ||
    token === "NULL"
  );
}

/** `word(2)`: the dictionary's second pronunciation of `word`. */
export const baseWord = (token: string): string => token.replace(/\(\d+\)$/, "");

/**
 * Parses -hypseg lines: `uttid S s T t A a L l (sf ascr lscr word)* nframes`. Returns, per utterance id, the
 * words (fillers dropped) with start and end frames relative to the utterance; a word ends where the next
 * segment (word or filler) starts.
 */
export function parseHypseg(text: string): Map<string, Array<{ word: string; startFrame: number; endFrame: number }>> {
  const result = new Map<string, Array<{ word: string; startFrame: number; endFrame: number }>>();
  for (const line of text.split("\n")) {
    const t = line.trim().split(/\s+/);
    if (t.length < 10 || t[1] !== "S" || t[3] !== "T" || t[5] !== "A" || t[7] !== "L") continue;
    const segs: Array<{ token: string; sf: number }> = [];
    let i = 9;
    for (; i + 3 < t.length; i += 4) segs.push({ sf: Number(t[i]), token: t[i + 3]! });
    const total = Number(t[i]);
    const words: Array<{ word: string; startFrame: number; endFrame: number }> = [];
    segs.forEach((s, k) => {
      if (isFiller(s.token)) return;
      const next = segs[k + 1]?.sf ?? total;
      words.push({ word: baseWord(s.token), startFrame: s.sf, endFrame: next });
    });
    if (segs.every((s) => Number.isFinite(s.sf)) && Number.isFinite(total)) result.set(t[0]!, words);
  }
  return result;
}

export interface AlignOptions {
  batchBinary: string;
  hmmDir: string;
  dictFile: string;
  /** The private run directory; `wavName` (16 kHz mono, 44-byte header) is in it. */
  dir: string;
  wavName: string;
  /** The WAV's length: padded ranges end there. */
  seconds: number;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Told why the alignment did not run (its words then keep the first pass's times). */
  onFailure?(err: unknown): void;
}

/**
 * The utterances' words with aligned times (seconds, absolute). An utterance whose alignment failed or came
 * back with other words keeps its first-pass times, so the result always has the hypothesis's words in order.
 */
export async function alignUtterances(utterances: readonly Utterance[], opts: AlignOptions): Promise<HypWord[][]> {
  // Each utterance's range in frames, padded (ALIGN_PAD) and kept inside the file.
  const ranges = utterances.map((u) => ({
    from: Math.max(0, Math.floor((u.start - ALIGN_PAD.before) * FRAME_RATE)),
    to: Math.min(Math.floor(opts.seconds * FRAME_RATE), Math.ceil((u.end + ALIGN_PAD.after) * FRAME_RATE)),
  }));
  const todo = utterances
    .map((u, i) => ({ u, id: `u${i}`, range: ranges[i]! }))
    .filter(({ u, range }) => u.words.length > 0 && range.to > range.from);
  const aligned = new Map<string, Array<{ word: string; startFrame: number; endFrame: number }>>();
  if (todo.length > 0) {
    const stem = opts.wavName.replace(/\.wav$/, "");
    const ctl: string[] = [];
    const fsgctl: string[] = [];
    for (const { u, id, range } of todo) {
      await writeFile(
        join(opts.dir, `${id}.fsg`),
        lineFsg(
          id,
          u.words.map((w) => w.word),
        ),
      );
      ctl.push(`${stem} ${range.from} ${range.to} ${id}`);
      fsgctl.push(`${id}.fsg`);
    }
    await writeFile(join(opts.dir, "align.ctl"), `${ctl.join("\n")}\n`);
    await writeFile(join(opts.dir, "align.fsgctl"), `${fsgctl.join("\n")}\n`);
    const ran = await runSphinx(
      opts.batchBinary,
      [
        "-hmm",
        opts.hmmDir,
        "-dict",
        opts.dictFile,
        "-adcin",
        "yes",
        "-adchdr",
        "44",
        // A control-file range is already an utterance: no voice-activity detector to drop frames from it.
        "-remove_silence",
        "no",
        // Beams far wider than recognition's (1e-48, 1e-48, 7e-29): the grammar leaves one path, and with the
        // defaults a long utterance whose hypothesis has wrong words loses it to pruning ("Final result does
        // not match the grammar") and keeps the recognizer's times. A one-path search stays cheap at any width.
        "-beam",
        ALIGN_BEAM.beam,
        "-pbeam",
        ALIGN_BEAM.pbeam,
        "-wbeam",
        ALIGN_BEAM.wbeam,
        "-cepdir",
        opts.dir,
        "-cepext",
        ".wav",
        "-ctl",
        "align.ctl",
        "-fsgctl",
        "align.fsgctl",
        "-hypseg",
        "align.hypseg",
        "-logfn",
        "align.log",
      ],
      {
        cwd: opts.dir,
        timeoutMs: opts.timeoutMs,
        maxOutputBytes: opts.maxOutputBytes,
        signal: opts.signal,
        logFile: "align.log",
      },
    ).then(
      () => true,
      (err) => {
        // The alignment only refines: when it cannot run (crash, time-out, output cap) the first pass's times
        // stand. The caller's abort is not such a case.
        if (opts.signal.aborted) throw opts.signal.reason;
        opts.onFailure?.(err);
        return false;
      },
    );
    const hypseg = join(opts.dir, "align.hypseg");
    const size = ran
      ? await stat(hypseg).then(
          (s) => s.size,
          () => 0,
        )
      : 0;
    if (size > opts.maxOutputBytes)
      opts.onFailure?.(new Error(`pocketsphinx_batch wrote ${size} bytes of segmentation`));
    else if (size > 0) for (const [id, words] of parseHypseg(await readFile(hypseg, "utf8"))) aligned.set(id, words);
  }
  return utterances.map((u, i) => {
    const got = aligned.get(`u${i}`);
    const offset = ranges[i]!.from;
    if (!got || got.length !== u.words.length || got.some((w, k) => w.word !== u.words[k]!.word)) return u.words;
    return got.map((w) => ({
      word: w.word,
      start: (offset + w.startFrame) / FRAME_RATE,
      end: (offset + w.endFrame) / FRAME_RATE,
    }));
  });
}
