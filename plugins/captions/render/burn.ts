// Burning captions into a video: the ASS script (ass.ts) drawn by libass through ffmpeg's `subtitles` filter, on
// either media engine, into a new H.264/AAC MP4 of the source's size and frame rate. The source is an input
// file of the run (a copy in the engine's temp dir or memory), so it is never modified.
//
// Fonts: ffmpeg.wasm's libass has no fontconfig, so the font travels with the run as a file of its own
// directory (RunIO.fonts, the filter's `fontsdir`); native ffmpeg gets the same, so both engines draw with the
// very file the card maker measured, never a system substitute. The directory holds the font only, because
// libass reads every file of its fontsdir whole (the source video must not be one of them).
import {
  BITEXACT_STREAM_ARGS,
  type EngineInput,
  libassFilter,
  type MediaEngine,
  NO_METADATA_ARGS,
} from "mediagate/plugin";
import type { Frame } from "../types.ts";

/**
 * The x264 settings of a burn. `veryfast` is about 2x faster than `medium` for a few percent more bytes at the
 * same quality; crf 20 keeps the burned text's edges clean (captions are hard-edged detail that a higher crf
 * smears). The benchmark (test/bench/captions-burn.bench.ts) compares a burn with a bare encode at this preset.
 */
export const BURN_ENCODE = { preset: "veryfast", crf: 20, audioBitrate: "192k" } as const;

/** The run's file names. */
export const BURN_FILES = { source: "source.media", ass: "captions.ass", output: "captioned.mp4" } as const;

export interface BurnOptions {
  /** The source video: bytes, or a stream of them (native writes it to disk as it reads; wasm holds it whole). */
  source: EngineInput;
  /** The script buildAss made. */
  ass: string;
  /** The font the script names (FontEntry.file and its bytes). */
  font: { file: string; bytes: Uint8Array };
  /** The source's picture (the script was built for it). */
  frame: Frame;
  /** The source's duration, for progress. */
  durationSeconds: number;
  /** The source's audio codec when the caller knows it: AAC is copied as it is, anything else re-encoded to AAC. */
  audioCodec?: string | null;
  onProgress?(fraction: number): void;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** The ffmpeg arguments of a burn (no engine prefix). */
export function burnArgs(opts: { audioCodec?: string | null }): string[] {
  const copyAudio = opts.audioCodec === "aac";
  return [
    "-i",
    BURN_FILES.source,
    // The first picture stream (not cover art) and the first audio stream when there is one; no subtitle,
    // data or attachment streams, no chapters, no metadata.
    "-map",
    "0:V:0",
    "-map",
    "0:a:0?",
    // libx264 4:2:0 needs even sides: an odd-sized source loses its last row or column (a no-op otherwise).
    "-vf",
    `${libassFilter(BURN_FILES.ass)},crop=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p`,
    // Frames keep their timestamps: the source's frame rate (constant or not) is the output's.
    "-fps_mode",
    "passthrough",
    "-c:v",
    "libx264",
    "-preset",
    BURN_ENCODE.preset,
    "-crf",
    String(BURN_ENCODE.crf),
    "-pix_fmt",
    "yuv420p",
    // x264 writes its version and every option into an SEI message of the stream: no metadata means none.
    // (x264 writes no other SEI with these settings, so removing SEI units removes only that.)
    "-bsf:v",
    "filter_units=remove_types=6",
    ...(copyAudio ? ["-c:a", "copy"] : ["-c:a", "aac", "-b:a", BURN_ENCODE.audioBitrate]),
    ...NO_METADATA_ARGS,
    ...BITEXACT_STREAM_ARGS,
    "-movflags",
    "+faststart",
    "-f",
    "mp4",
    BURN_FILES.output,
  ];
}

/** Burn the script onto the source; resolves with the new MP4's bytes. */
export async function burnCaptions(engine: MediaEngine, opts: BurnOptions): Promise<Uint8Array> {
  const out = await engine.run(burnArgs(opts), {
    inputs: { [BURN_FILES.source]: opts.source, [BURN_FILES.ass]: new TextEncoder().encode(opts.ass) },
    fonts: { [opts.font.file]: opts.font.bytes },
    outputs: [BURN_FILES.output],
    durationSeconds: opts.durationSeconds > 0 ? opts.durationSeconds : undefined,
    onProgress: opts.onProgress,
    signal: opts.signal,
    timeoutMs: opts.timeoutMs,
  });
  return out[BURN_FILES.output]!;
}
