// Picks the engine (docs/architecture.md "Runtime": native ffmpeg on PATH in production, ffmpeg.wasm embedded otherwise).
// The choice is made once, at creation, so a machine never mixes engines within one process.

import { MediaError } from "./errors.ts";
import { type ChildLimits, createNativeEngine, findOnPath } from "./native.ts";
import type { MediaPool } from "./pool.ts";
import type { MediaEngine, MediaEngineMode } from "./types.ts";
import { createWasmEngine } from "./wasm.ts";

export interface MediaEngineOptions {
  /** "auto" (default): native when both ffmpeg and ffprobe are on PATH, else wasm. Usually `config.mediaEngine`. */
  mode?: MediaEngineMode;
  /** Where native runs make their per-run temp dirs (default: the OS temp dir). */
  tmpDir?: string;
  /** Parallel runs. Native default: half the cores; wasm default: 1 (each worker holds its own core). */
  concurrency?: number;
  /** The process's media pool (the kernel's, sized by MEDIA_CONCURRENCY): runs take their places there. */
  pool?: MediaPool;
  /** Caps on each native ffmpeg/ffprobe child, and on each wasm run (memory and time). */
  childLimits?: ChildLimits;
  /** Explicit binaries (otherwise looked up on PATH). */
  ffmpegPath?: string;
  ffprobePath?: string;
}

/** Paths of native ffmpeg and ffprobe, when both are on PATH. */
export function detectNativeFfmpeg(pathEnv?: string): { ffmpegPath: string; ffprobePath: string } | undefined {
  const ffmpegPath = findOnPath("ffmpeg", pathEnv);
  const ffprobePath = findOnPath("ffprobe", pathEnv);
  return ffmpegPath && ffprobePath ? { ffmpegPath, ffprobePath } : undefined;
}

export function createMediaEngine(options: MediaEngineOptions = {}): MediaEngine {
  const mode = options.mode ?? "auto";
  if (mode !== "auto" && mode !== "native" && mode !== "wasm")
    throw new MediaError("engine_unavailable", `unknown media engine mode ${String(mode)}`);
  const shared = {
    concurrency: options.concurrency,
    ...(options.pool ? { pool: options.pool } : {}),
    ...(options.childLimits ? { childLimits: options.childLimits } : {}),
  };
  if (mode === "wasm") return createWasmEngine(shared);
  const explicit =
    options.ffmpegPath && options.ffprobePath
      ? { ffmpegPath: options.ffmpegPath, ffprobePath: options.ffprobePath }
      : undefined;
  const native = explicit ?? detectNativeFfmpeg();
  if (native) return createNativeEngine({ ...native, tmpDir: options.tmpDir, ...shared });
  if (mode === "native")
    throw new MediaError("engine_unavailable", "MEDIA_ENGINE=native but ffmpeg/ffprobe are not on PATH");
  return createWasmEngine(shared);
}
