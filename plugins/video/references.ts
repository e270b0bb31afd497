// Reference media of POST /generate-video, prepared inside the request and before the charge (billing uses
// measured seconds, never the request's word): each URL is downloaded through the outbound guard, measured
// with the media engine, checked against the model's limits, and normalized (videos to one H.264/AAC shape,
// audio to MP3). Normalization runs in one shared slot: a second request while it is taken gets the spec's 503.
//
// Choices where the spec is silent, written down here:
// - Size caps are decimal megabytes (95,000,000 and 50,000,000 bytes), as the spec itself spells its other
//   "95 MB" cap (captions: "single upload 95,000,000 bytes").
// - A download that fails without an HTTP status reports the status a gateway would give: 504 for a time-out
//   (120 s per file), 502 for a refused connection, a DNS failure, a reset or a TLS failure.
// - Measured seconds are the container duration of the file as downloaded, rounded to 0.01 and shown the same
//   way ("yours is 1.5s", "yours is 15.01s"); bounds are inclusive (2 and 15 pass, 15.01 does not). The total
//   is the sum of the rounded clips, which is what billing adds up.
// - Videos must be ISO-BMFF (MP4/MOV: the first box is ftyp, or moov/mdat/wide/free/skip for old QuickTime
//   files) with a real video track; audio must probe as MP3, WAV, or ISO-BMFF with sound and no picture (M4A;
//   cover art does not count as a picture).
// - Normalized videos: H.264 yuv420p, short edge at most 720 px (display orientation, aspect kept, even sizes,
//   never upscaled), constant 30 fps (one frame rate for the provider whatever the phone recorded; 24/25 fps
//   sources gain duplicated frames, which H.264 stores almost for free), AAC 48 kHz stereo 128 kb/s when the
//   clip has sound, moov in front, no container or stream metadata, cut at the measured length so the provider
//   never gets more than was billed. Audio: MP3 (libmp3lame, in native ffmpeg and in @ffmpeg/core alike)
//   44.1 kHz stereo 192 kb/s, no ID3 tag.
// - Engine failures on the partner's file (damaged, unsupported, too slow to finish within the slot's hold
//   time) answer "Could not prepare that ... as a reference."; an engine that is not there at all is ours and
//   is not blamed on the file.
import { ApiError, type Counters, probeOverBudget, createSharedSlots, fetchSource, firstAudio, firstVideo, isMediaError, isoBmffFirstBox, type MediaEngine, type OutboundGuard, type Probe, type ReferenceMedia, type SharedSlots } from "mediagate/plugin";
import { VIDEO_ERRORS as E } from "./errors.ts";

export const MAX_REFERENCE_VIDEO_BYTES = 95_000_000;
export const MAX_REFERENCE_AUDIO_BYTES = 50_000_000;
export const REFERENCE_DOWNLOAD_TIMEOUT_MS = 120_000;
/** Downloads of one request running side by side: enough to hide latency, few enough to bound memory. */
const DOWNLOADS_AT_ONCE = 3;
const PROBE_TIMEOUT_MS = 60_000;
/** The normalized file may be this much shorter than measured (frame-rate rounding, codec delay). */
const OUTPUT_SHORTFALL_S = 0.5;

export type NormalizationSlot = SharedSlots;

/** The one reference-encoder slot of every process sharing `counters` (core/shared-slots.ts). */
export function createNormalizationSlot(counters: Counters, options: { key?: string; ttlMs?: number; now?: () => number } = {}): NormalizationSlot {
  return createSharedSlots(counters, { key: options.key ?? "video:reference-normalization", capacity: 1, busy: () => new ApiError(503, E.referenceEncoderBusy), ttlMs: options.ttlMs, now: options.now });
}

export interface ReferenceDeps {
  guard: OutboundGuard;
  engine: MediaEngine;
  slot: NormalizationSlot;
  /** The request's signal: when it fires, work stops and its error is passed through (no 400 is made of it). */
  signal?: AbortSignal;
  /** Per-file download deadline (default REFERENCE_DOWNLOAD_TIMEOUT_MS); tests shorten it. */
  downloadTimeoutMs?: number;
}

export interface ReferenceRules {
  minSeconds: number;
  maxSeconds: number;
  totalSeconds: number;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

interface Kind {
  maxBytes: number;
  invalidUrl(url: string): string;
  download(status: number | string): string;
  tooLarge: string;
  unusable: string;
  length(min: number, max: number, s: number): string;
  total(s: number, model: string, max: number): string;
  /** Whether the downloaded bytes and their probe are this kind of file. */
  accepts(bytes: Uint8Array, probe: Probe): boolean;
  normalize(probe: Probe, engine: MediaEngine): { args: string[]; output: string };
  /** Whether the normalized file is what `normalize` promised. */
  produced(probe: Probe): boolean;
}

const ISO_BMFF = "mov,mp4,m4a,3gp,3g2,mj2";

// Global, per-stream and chapter metadata all go; bitexact keeps the encoder's name out of the file.
const NO_METADATA = ["-map_metadata", "-1", "-map_metadata:s", "-1", "-map_chapters", "-1", "-fflags", "+bitexact"];

const VIDEO: Kind = {
  maxBytes: MAX_REFERENCE_VIDEO_BYTES,
  invalidUrl: E.invalidReferenceVideoUrl,
  download: E.referenceVideoDownload,
  tooLarge: E.referenceVideoTooLarge,
  unusable: E.referenceVideoUnusable,
  length: E.referenceVideoLength,
  total: E.referenceVideosTotal,
  accepts: (bytes, probe) => isoBmffFirstBox(bytes) !== undefined && probe.formatName === ISO_BMFF && firstVideo(probe) !== undefined,
  normalize(probe, engine) {
    const v = firstVideo(probe)!;
    const a = firstAudio(probe);
    // ffmpeg rotates phone videos upright before the filters, so the short edge is chosen from iw/ih there,
    // not from the stored size; -2 keeps the other edge even and the aspect.
    const scale = "scale='if(gte(iw,ih),-2,min(720,iw))':'if(gte(iw,ih),min(720,ih),-2)'";
    const audio = a ? ["-map", `0:${a.index}`, "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2"] : [];
    return {
      output: "ref.mp4",
      args: [
        "-i", "in.bin",
        "-map", `0:${v.index}`, ...audio,
        "-vf", `${scale},fps=30,format=yuv420p`,
        // The wasm engine is several times slower; its clips must still fit the slot's hold time.
        "-c:v", "libx264", "-preset", engine.kind === "wasm" ? "ultrafast" : "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
        "-t", String(probe.durationSeconds),
        ...NO_METADATA, "-flags:v", "+bitexact", "-flags:a", "+bitexact",
        "-movflags", "+faststart",
        "ref.mp4",
      ],
    };
  },
  produced: (p) => firstVideo(p)?.codec === "h264",
};

const AUDIO: Kind = {
  maxBytes: MAX_REFERENCE_AUDIO_BYTES,
  invalidUrl: E.invalidReferenceAudioUrl,
  download: E.referenceAudioDownload,
  tooLarge: E.referenceAudioTooLarge,
  unusable: E.referenceAudioUnusable,
  length: E.referenceAudioLength,
  total: E.referenceAudioTotal,
  accepts: (bytes, probe) =>
    firstAudio(probe) !== undefined &&
    firstVideo(probe) === undefined &&
    (probe.formatName === "mp3" || probe.formatName === "wav" || (probe.formatName === ISO_BMFF && isoBmffFirstBox(bytes) !== undefined)),
  normalize: (probe) => ({
    output: "ref.mp3",
    args: [
      "-i", "in.bin",
      "-map", `0:${firstAudio(probe)!.index}`,
      "-c:a", "libmp3lame", "-b:a", "192k", "-ar", "44100", "-ac", "2",
      "-t", String(probe.durationSeconds),
      ...NO_METADATA, "-flags:a", "+bitexact", "-id3v2_version", "0",
      "ref.mp3",
    ],
  }),
  produced: (p) => p.formatName === "mp3" && firstAudio(p)?.codec === "mp3",
};

interface Measured {
  url: string;
  bytes: Uint8Array;
  probe: Probe;
  seconds: number;
}

/** The request's own cancellation passes through untouched; everything else is for the caller to map. */
function cancelled(deps: ReferenceDeps): boolean {
  return deps.signal?.aborted === true;
}

function download(url: string, kind: Kind, deps: ReferenceDeps, signal: AbortSignal): Promise<Uint8Array> {
  // The download text names the status a gateway would give (the file header above): the answered one, 504
  // for a time-out, 502 for the rest.
  const texts = { invalidUrl: kind.invalidUrl(url.slice(0, 200)), tooLarge: kind.tooLarge, download: kind.download };
  return fetchSource(url, { maxBytes: kind.maxBytes, timeoutMs: deps.downloadTimeoutMs ?? REFERENCE_DOWNLOAD_TIMEOUT_MS, texts }, { guard: deps.guard, signal });
}

/** Media failures on the partner's file are the file's; a missing engine is ours. */
function unusable(err: unknown, kind: Kind, deps: ReferenceDeps): unknown {
  if (cancelled(deps)) return err;
  if (isMediaError(err) && err.code === "engine_unavailable") return err;
  if (err instanceof ApiError) return err;
  return new ApiError(400, kind.unusable);
}

async function measure(url: string, rules: ReferenceRules, kind: Kind, deps: ReferenceDeps, signal: AbortSignal): Promise<Measured> {
  const bytes = await download(url, kind, deps, signal);
  let probe: Probe;
  try {
    // Junk is refused on its first bytes, before the engine spends time on it.
    if (kind === VIDEO && !isoBmffFirstBox(bytes)) throw new ApiError(400, kind.unusable);
    probe = await deps.engine.probe(bytes, "in.bin", { signal, timeoutMs: PROBE_TIMEOUT_MS });
  } catch (err) {
    throw unusable(err, kind, deps);
  }
  if (!kind.accepts(bytes, probe) || !Number.isFinite(probe.durationSeconds) || probe.durationSeconds <= 0) throw new ApiError(400, kind.unusable);
  // lib/media/budgets.ts before normalization decodes anything: an 8K frame, 240 fps, 4 hours, cover art of
  // 40 MP at most. A duration past it is also past every model's reference limit.
  const excess = probeOverBudget(probe);
  if (excess?.kind === "duration") throw new ApiError(400, kind.length(rules.minSeconds, rules.maxSeconds, round2(probe.durationSeconds)));
  if (excess) throw new ApiError(400, kind.unusable);
  const seconds = round2(probe.durationSeconds);
  if (seconds < rules.minSeconds || seconds > rules.maxSeconds) throw new ApiError(400, kind.length(rules.minSeconds, rules.maxSeconds, seconds));
  return { url, bytes, probe, seconds };
}

/** Downloads and measures every URL, a few at a time; the first failure stops the others and is thrown. */
async function measureAll(urls: string[], rules: ReferenceRules, kind: Kind, deps: ReferenceDeps): Promise<Measured[]> {
  const stop = new AbortController();
  const signal = deps.signal ? AbortSignal.any([deps.signal, stop.signal]) : stop.signal;
  const results: Measured[] = [];
  let next = 0;
  let failed = false;
  let failure: unknown;
  const worker = async () => {
    while (!failed && next < urls.length) {
      const i = next++;
      try {
        results[i] = await measure(urls[i]!, rules, kind, deps, signal);
      } catch (err) {
        if (failed) continue; // a sibling stopped by the first failure
        failed = true;
        failure = err;
        stop.abort();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DOWNLOADS_AT_ONCE, urls.length) }, worker));
  if (failed) throw failure;
  return results;
}

async function normalize(m: Measured, kind: Kind, deps: ReferenceDeps, signal: AbortSignal, deadline: number): Promise<ReferenceMedia> {
  const { args, output } = kind.normalize(m.probe, deps.engine);
  try {
    const timeoutMs = Math.max(1, deadline - Date.now());
    const res = await deps.engine.run(args, { inputs: { "in.bin": m.bytes }, outputs: [output], signal, timeoutMs, durationSeconds: m.probe.durationSeconds });
    const bytes = res[output]!;
    // A file whose header promises more than its frames deliver comes out short: not a usable reference.
    const out = await deps.engine.probe(bytes, output, { signal, timeoutMs: Math.max(1, deadline - Date.now()) });
    if (!kind.produced(out) || out.durationSeconds < m.probe.durationSeconds - OUTPUT_SHORTFALL_S) throw new ApiError(400, kind.unusable);
    return { bytes, seconds: m.seconds, url: m.url };
  } catch (err) {
    throw unusable(err, kind, deps);
  }
}

async function prepare(urls: string[], rules: ReferenceRules, model: string, kind: Kind, deps: ReferenceDeps): Promise<ReferenceMedia[]> {
  if (urls.length === 0) return [];
  const measured = await measureAll(urls, rules, kind, deps);
  const total = round2(measured.reduce((sum, m) => sum + m.seconds, 0));
  if (total > rules.totalSeconds) throw new ApiError(400, kind.total(total, model, rules.totalSeconds));

  // One acquisition per request: the files go through the encoder one after the other while it is held.
  return deps.slot.run(async (hold) => {
    const signal = deps.signal ? AbortSignal.any([deps.signal, hold]) : hold;
    const deadline = Date.now() + deps.slot.holdMs;
    const out: ReferenceMedia[] = [];
    for (const m of measured) out.push(await normalize(m, kind, deps, signal, deadline));
    return out;
  });
}

/** Downloads, measures and normalizes reference videos; throws the spec's 400/413/503 (no charge yet). */
export const prepareReferenceVideos = (urls: string[], rules: ReferenceRules, model: string, deps: ReferenceDeps): Promise<ReferenceMedia[]> =>
  prepare(urls, rules, model, VIDEO, deps);

/** Downloads, measures and converts reference audio to MP3; the same errors in the audio's words. */
export const prepareReferenceAudio = (urls: string[], rules: ReferenceRules, model: string, deps: ReferenceDeps): Promise<ReferenceMedia[]> =>
  prepare(urls, rules, model, AUDIO, deps);
