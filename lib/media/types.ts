// The engine contract shared by the native and the wasm implementation. Files are passed by name, never by
// path: arguments refer to bare names, which are files in a private temp dir (native, as the cwd) or in the wasm
// core's in-memory FS. That is what lets one argument list run unchanged on both engines.
import type { Probe } from "./probe.ts";
import type { VipsModule } from "./vips.ts";

export type MediaEngineMode = "auto" | "native" | "wasm";
export type MediaEngineKind = "native" | "wasm";

/**
 * An input read piece by piece (a blob-store object, an upload's parts) so that a large file is never held whole
 * by the server: native ffmpeg gets it written to its temp file chunk by chunk. `chunks()` may be called more
 * than once (the engine reads the first bytes to decide the demuxer, then the whole file) and must yield the
 * same `size` bytes from the start each time.
 */
export interface StreamedInput {
  size: number;
  chunks(): AsyncIterable<Uint8Array>;
}

/** What a run takes as an input file: its bytes, or a stream of them. */
export type EngineInput = Uint8Array | StreamedInput;

export interface RunIO {
  /**
   * Input files by bare name (letters, digits, '.', '_', '-'), referenced by the arguments. A StreamedInput is
   * written to disk as it is read on the native engine; the wasm engine has to hold it whole (its files live in
   * the core's memory): size it accordingly.
   */
  inputs?: Record<string, EngineInput>;
  /**
   * Font files by bare name, put in a directory of their own named FONTS_DIR next to the inputs: what libass's
   * `fontsdir` points at (it loads every file of that directory whole, so the inputs must not be in it).
   */
  fonts?: Record<string, Uint8Array>;
  /** Names of the files the arguments write; each must exist after a successful run. */
  outputs: string[];
  /** Called with increasing fractions in (0, 1]; 1 once the run succeeded. */
  onProgress?(fraction: number): void;
  /** Aborting kills the work at once (native: SIGKILL; wasm: the worker is terminated and replaced). */
  signal?: AbortSignal;
  /** Kill the run after this many milliseconds (MediaError "timeout"). */
  timeoutMs?: number;
  /** Expected output duration in seconds, when the arguments do not make it evident (for progress only). */
  durationSeconds?: number;
  /** Every log line ffmpeg prints (for debugging). */
  onLog?(line: string): void;
}

import type { MediaPool } from "./pool.ts";

export interface MediaEngine {
  readonly kind: MediaEngineKind;
  /**
   * Run ffmpeg with `args` (no program name; the engine adds `-nostdin -y -hide_banner` and its progress
   * options in front, so later arguments may override the log level). Resolves with the named outputs.
   */
  run(args: string[], io: RunIO): Promise<Record<string, Uint8Array>>;
  /**
   * Describe a media file. `name` only sets the file's extension hint (default "input"). A StreamedInput is
   * sniffed by its first bytes and written to disk as it is read (native) or read whole (wasm), as in run().
   */
  probe(data: EngineInput, name?: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Probe>;
  /** The shared libvips instance (wasm-vips, loaded once per process on first use). */
  vips(): Promise<VipsModule>;
  /** Load the engine now rather than on first use (the wasm core takes ~0.2 s to compile). */
  warmup(): Promise<void>;
  /** Runs waiting or in progress. */
  readonly pending: number;
  /**
   * The process's pool of places for CPU-heavy work (lib/media/pool.ts): every run of this engine takes one,
   * and other heavy work (a resample, a synthesis) should too: `await engine.pool.run(() => work(), signal)`.
   */
  readonly pool: MediaPool;
  /** Stop accepting work, kill what runs, free workers. */
  close(): Promise<void>;
}

/** The directory of RunIO.fonts, relative to the run's files (the libass `fontsdir`). */
export const FONTS_DIR = "fonts";

/** Names must be bare so they cannot leave the temp dir or the in-memory FS, and cannot look like options/URLs. */
export const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
