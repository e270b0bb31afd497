// The engine contract shared by the native and the wasm implementation. Files are passed by name, never by
// path: arguments refer to bare names, which are files in a private temp dir (native, as the cwd) or in the wasm
// core's in-memory FS. That is what lets one argument list run unchanged on both engines.
import type { Probe } from "./probe.ts";
import type { VipsModule } from "./vips.ts";

export type MediaEngineMode = "auto" | "native" | "wasm";
export type MediaEngineKind = "native" | "wasm";

export interface RunIO {
  /** Input files by bare name (letters, digits, '.', '_', '-'), referenced by the arguments. */
  inputs?: Record<string, Uint8Array>;
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

export interface MediaEngine {
  readonly kind: MediaEngineKind;
  /**
   * Run ffmpeg with `args` (no program name; the engine adds `-nostdin -y -hide_banner` and its progress
   * options in front, so later arguments may override the log level). Resolves with the named outputs.
   */
  run(args: string[], io: RunIO): Promise<Record<string, Uint8Array>>;
  /** Describe a media file. `name` only sets the file's extension hint (default "input"). */
  probe(data: Uint8Array, name?: string, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Probe>;
  /** The shared libvips instance (wasm-vips, loaded once per process on first use). */
  vips(): Promise<VipsModule>;
  /** Load the engine now rather than on first use (the wasm core takes ~0.2 s to compile). */
  warmup(): Promise<void>;
  /** Runs waiting or in progress. */
  readonly pending: number;
  /** Stop accepting work, kill what runs, free workers. */
  close(): Promise<void>;
}

/** Names must be bare so they cannot leave the temp dir or the in-memory FS, and cannot look like options/URLs. */
export const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
