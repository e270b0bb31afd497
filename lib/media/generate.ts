// Argument builders for media we make ourselves: sandbox videos (a real H.264/AAC MP4 of a given size and
// length, docs/architecture.md "Sandbox providers") and metadata-free remuxes. They only use what both engines have
// (lavfi testsrc2/sine, libx264, the native aac encoder, drawtext with an explicit font file), so the same
// arguments give the same kind of file on native ffmpeg and on ffmpeg.wasm.
import { readFileSync } from "node:fs";
import { MediaError } from "./errors.ts";
import { BITEXACT_STREAM_ARGS, NO_METADATA_ARGS } from "./no-metadata.ts";
import type { MediaEngine } from "./types.ts";

/** Frame size for a video quality (short edge, docs/architecture.md "Sizes") in an aspect ratio like "16:9"; both even (H.264 4:2:0). */
export function videoFrameSize(aspectRatio: string, shortEdge: number): { width: number; height: number } {
  const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(aspectRatio.trim());
  if (!m || !Number(m[1]) || !Number(m[2])) throw new MediaError("failed", `bad aspect ratio ${aspectRatio}`);
  const w = Number(m[1]);
  const h = Number(m[2]);
  const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);
  const long = even((shortEdge * Math.max(w, h)) / Math.min(w, h));
  const short = even(shortEdge);
  return w >= h ? { width: long, height: short } : { width: short, height: long };
}

/** Well-known places of a TrueType font, for drawtext when no font is given. */
const FONT_CANDIDATES = [
  "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
  "/usr/share/fonts/TTF/DejaVuSans.ttf",
  "/usr/share/fonts/dejavu/DejaVuSans.ttf",
  "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
  "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
  "/System/Library/Fonts/Supplemental/Arial.ttf",
  "/Library/Fonts/Arial.ttf",
  "C:\\Windows\\Fonts\\arial.ttf",
];
let fontCache: Uint8Array | null | undefined;

/** A system font for drawtext, or null when the machine has none of the usual ones. */
export function findSystemFont(): Uint8Array | null {
  if (fontCache !== undefined) return fontCache;
  for (const path of FONT_CANDIDATES) {
    try {
      return (fontCache = new Uint8Array(readFileSync(path)));
    } catch {
      // try the next
    }
  }
  return (fontCache = null);
}

function hash(seed: string): number {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < seed.length; i++) {
    h ^= seed.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function wrap(text: string, perLine: number, maxLines: number): string {
  const words = text.replace(/\s+/g, " ").trim().split(" ");
  const lines: string[] = [];
  let cur = "";
  for (const w of words) {
    const word = w.length > perLine ? `${w.slice(0, perLine - 1)}…` : w;
    if (`${cur} ${word}`.trim().length > perLine) {
      lines.push(cur);
      cur = word;
    } else cur = `${cur} ${word}`.trim();
  }
  if (cur) lines.push(cur);
  if (lines.length > maxLines) {
    lines.length = maxLines;
    lines[maxLines - 1] = `${lines[maxLines - 1]!.slice(0, perLine - 1)}…`;
  }
  return lines.join("\n");
}

export interface TestVideoOptions {
  width: number;
  height: number;
  seconds: number;
  fps?: number;
  /** Text drawn in the middle (needs a font: `font`, or a system font; skipped silently when there is none). */
  text?: string;
  /** Varies colours and tone deterministically (default: the text). */
  seed?: string;
  /** TrueType font bytes for the text; `false` never draws text. */
  font?: Uint8Array | false;
  /** x264 preset (default "ultrafast": sandbox speed matters more than size). */
  preset?: string;
  /** Output name (default "video.mp4"). */
  output?: string;
}

export interface EngineJob {
  args: string[];
  inputs: Record<string, Uint8Array>;
  outputs: string[];
  durationSeconds: number;
  /** Whether the text will be drawn. */
  textDrawn: boolean;
}

/** Arguments and inputs for a real H.264 (yuv420p) + AAC (48 kHz stereo) MP4 with the moov atom in front. */
export function testVideoJob(o: TestVideoOptions): EngineJob {
  const { width, height, seconds } = o;
  const fps = o.fps ?? 25;
  if (
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width < 16 ||
    height < 16 ||
    width > 7680 ||
    height > 7680 ||
    width % 2 ||
    height % 2
  ) {
    throw new MediaError("failed", `bad video size ${width}x${height} (even, 16-7680)`);
  }
  if (!(seconds > 0 && seconds <= 600)) throw new MediaError("failed", `bad duration ${seconds}`);
  if (!(fps >= 1 && fps <= 120)) throw new MediaError("failed", `bad fps ${fps}`);
  const output = o.output ?? "video.mp4";
  const h = hash(o.seed ?? o.text ?? `${width}x${height}`);
  const hue = h % 360;
  const tone = 220 + ((h >>> 9) % 660);
  const inputs: Record<string, Uint8Array> = {};
  const filters = [`hue=h=${hue}`];
  const font = o.font === false ? null : (o.font ?? (o.text ? findSystemFont() : null));
  const textDrawn = Boolean(o.text?.trim() && font);
  if (textDrawn) {
    const size = Math.max(12, Math.round(Math.min(width, height) / 14));
    const perLine = Math.max(8, Math.floor(width / (size * 0.6)) - 2);
    // Text goes through a file, never into the filter graph, so no prompt can inject filter syntax;
    // expansion=none keeps "%{...}" literal.
    inputs["text.txt"] = new TextEncoder().encode(wrap(o.text!, perLine, 4));
    inputs["font.ttf"] = font!;
    filters.push(
      `drawtext=fontfile=font.ttf:textfile=text.txt:expansion=none:fontsize=${size}:fontcolor=white:line_spacing=${Math.round(size / 4)}` +
        `:box=1:boxcolor=black@0.55:boxborderw=${Math.round(size / 2)}:x=(w-text_w)/2:y=(h-text_h)/2`,
    );
  }
  filters.push("format=yuv420p");
  const t = String(seconds);
  const args = [
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${width}x${height}:rate=${fps}:duration=${t}`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=${tone}:sample_rate=48000:duration=${t}`,
    "-map",
    "0:v",
    "-map",
    "1:a",
    "-vf",
    filters.join(","),
    "-c:v",
    "libx264",
    "-preset",
    o.preset ?? "ultrafast",
    "-crf",
    "28",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "128k",
    "-ac",
    "2",
    "-t",
    t,
    "-movflags",
    "+faststart",
    "-fflags",
    "+bitexact",
    "-map_metadata",
    "-1",
    output,
  ];
  return { args, inputs, outputs: [output], durationSeconds: seconds, textDrawn };
}

/** Make a test/sandbox video on any engine. */
export async function generateTestVideo(
  engine: MediaEngine,
  options: TestVideoOptions,
  io: { onProgress?(fraction: number): void; signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<Uint8Array> {
  const job = testVideoJob(options);
  const out = await engine.run(job.args, {
    inputs: job.inputs,
    outputs: job.outputs,
    durationSeconds: job.durationSeconds,
    ...io,
  });
  return out[job.outputs[0]!]!;
}

export interface StripVideoOptions {
  /** The container written (default "mp4"); "mov" keeps QuickTime-only features and writes no timecode track. */
  format?: "mp4" | "mov";
  /**
   * Copy packets as stored, ignoring the edit lists: for files whose lists play more than one stretch of
   * media, which ffmpeg's demuxer would otherwise replay into the copy (timestamps running backwards).
   */
  ignoreEditList?: boolean;
  /**
   * End the run on any read error (a truncated mdat, a corrupt packet), so a partial copy is never returned:
   * metadata removal answers 422 for a damaged upload. Off for clips from a provider, where a damaged packet
   * is still the clip the partner paid for.
   */
  strict?: boolean;
}

/**
 * Remux a video without metadata: every video and audio stream is copied bit for bit (never re-encoded), with
 * the display rotation (side data, not metadata). Whatever ffmpeg does not copy on its own stays behind (C2PA
 * and XMP uuid boxes, udta, meta), and the options drop container and stream tags, chapters, timecode, data
 * and subtitle tracks and cover art; the index (moov) goes in front. The same list runs on both engines.
 */
export function stripVideoMetadataArgs(input: string, output: string, options: StripVideoOptions = {}): string[] {
  return [
    ...(options.strict ? ["-xerror"] : []),
    ...(options.ignoreEditList ? ["-ignore_editlist", "1"] : []),
    "-i",
    input,
    // Capital V: video streams that are not attached pictures (cover art is metadata, not picture).
    "-map",
    "0:V?",
    "-map",
    "0:a?",
    "-c",
    "copy",
    ...NO_METADATA_ARGS,
    ...BITEXACT_STREAM_ARGS,
    ...(options.format === "mov" ? ["-write_tmcd", "0", "-f", "mov"] : ["-f", "mp4"]),
    "-movflags",
    "+faststart",
    output,
  ];
}

/**
 * The last step of a generated clip's job: its provenance metadata removed when the partner asked
 * (`strip_metadata`, a lossless remux), then its length measured from the file that will be stored.
 */
export async function finishGeneratedClip(
  engine: MediaEngine,
  clip: Uint8Array,
  options: { strip: boolean; signal?: AbortSignal; timeoutMs?: number },
): Promise<{ bytes: Uint8Array; seconds: number }> {
  let bytes = clip;
  if (options.strip) {
    const out = await engine.run(stripVideoMetadataArgs("in.mp4", "out.mp4"), {
      inputs: { "in.mp4": bytes },
      outputs: ["out.mp4"],
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? 300_000,
    });
    bytes = out["out.mp4"]!;
  }
  const probe = await engine.probe(bytes, "clip.mp4", { signal: options.signal });
  return { bytes, seconds: probe.durationSeconds };
}
