// Reference media of POST /generate-video, prepared inside the request and before the charge (billing uses
// measured seconds, never the request's word): each URL is downloaded through the outbound guard, measured
// with the media engine, checked against the model's limits, and normalized (videos to one H.264/AAC shape,
// audio to MP3). Normalization runs in one shared slot: a second request while it is taken gets the spec's 503.
//
// Choices where the spec is silent, written down here:
// - Size caps are decimal megabytes (95,000,000 and 50,000,000 bytes), as the spec writes its other caps.
// - A download that fails without an HTTP status reports the nearest gateway status: 504 for a time-out,
//   502 for a refused connection, a DNS failure and the like.
// - Measured seconds are shown with two decimals at most ("yours is 1.5s").
// - Normalized videos: H.264 yuv420p, short edge at most 720 px (aspect kept, even sizes), 30 fps, AAC 48 kHz
//   stereo when the clip has sound, moov in front, no metadata. Audio: MP3 44.1 kHz stereo 192 kb/s.
import { ApiError } from "../../core/errors.ts";
import { firstAudio, firstVideo, type MediaEngine, type Probe } from "../../core/media/index.ts";
import { isOutboundError, type OutboundGuard } from "../../core/outbound/index.ts";
import type { Counters } from "../../storage/counters.ts";
import { VIDEO_ERRORS as E } from "./errors.ts";
import type { ReferenceMedia } from "./provider.ts";

export const MAX_REFERENCE_VIDEO_BYTES = 95_000_000;
export const MAX_REFERENCE_AUDIO_BYTES = 50_000_000;
const DOWNLOAD_TIMEOUT_MS = 120_000;
const NORMALIZE_TIMEOUT_MS = 300_000;

export interface NormalizationSlot {
  /** Runs `fn` holding the slot; throws the spec's 503 when another holder has it. */
  run<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * One slot for every process sharing `counters` (Redis when configured). The TTL bounds how long a holder
 * that died keeps it: the key expires and the slot frees itself.
 */
export function createNormalizationSlot(counters: Counters, options: { key?: string; ttlMs?: number } = {}): NormalizationSlot {
  const key = options.key ?? "video:reference-normalization";
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  return {
    async run(fn) {
      const { value } = await counters.increment(key, ttlMs, 1);
      if (value > 1) {
        await counters.increment(key, ttlMs, -1);
        throw new ApiError(503, E.referenceEncoderBusy);
      }
      try {
        return await fn();
      } finally {
        await counters.increment(key, ttlMs, -1);
      }
    },
  };
}

export interface ReferenceDeps {
  guard: OutboundGuard;
  engine: MediaEngine;
  slot: NormalizationSlot;
  signal?: AbortSignal;
}

export interface ReferenceRules {
  minSeconds: number;
  maxSeconds: number;
  totalSeconds: number;
}

const seconds = (n: number) => Math.round(n * 100) / 100;

interface Kind {
  maxBytes: number;
  invalidUrl(url: string): string;
  download(status: number | string): string;
  tooLarge: string;
  unusable: string;
  length(min: number, max: number, s: number): string;
  total(s: number, model: string, max: number): string;
  /** Whether the probed file is acceptable as this kind. */
  accepts(bytes: Uint8Array, probe: Probe): boolean;
  normalize(probe: Probe): { args: string[]; output: string };
}

const isIsoBmff = (b: Uint8Array) => b.length > 12 && String.fromCharCode(b[4]!, b[5]!, b[6]!, b[7]!) === "ftyp";

const VIDEO: Kind = {
  maxBytes: MAX_REFERENCE_VIDEO_BYTES,
  invalidUrl: E.invalidReferenceVideoUrl,
  download: E.referenceVideoDownload,
  tooLarge: E.referenceVideoTooLarge,
  unusable: E.referenceVideoUnusable,
  length: E.referenceVideoLength,
  total: E.referenceVideosTotal,
  accepts: (bytes, probe) => isIsoBmff(bytes) && /mov|mp4/.test(probe.formatName) && firstVideo(probe) !== undefined,
  normalize(probe) {
    const v = firstVideo(probe)!;
    const landscape = (v.width ?? 0) >= (v.height ?? 0);
    // The short edge is at most 720; -2 keeps the other even and the aspect.
    const scale = landscape ? "scale=-2:'min(720,ih)'" : "scale='min(720,iw)':-2";
    const audio = firstAudio(probe) ? ["-map", "0:a:0", "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2"] : [];
    return {
      output: "ref.mp4",
      args: ["-i", "in.bin", "-map", "0:v:0", ...audio, "-vf", `${scale},fps=30,format=yuv420p`, "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-map_metadata", "-1", "-movflags", "+faststart", "ref.mp4"],
    };
  },
};

const AUDIO: Kind = {
  maxBytes: MAX_REFERENCE_AUDIO_BYTES,
  invalidUrl: E.invalidReferenceAudioUrl,
  download: E.referenceAudioDownload,
  tooLarge: E.referenceAudioTooLarge,
  unusable: E.referenceAudioUnusable,
  length: E.referenceAudioLength,
  total: E.referenceAudioTotal,
  // MP3, WAV, or M4A (an ISO-BMFF file with sound and no picture).
  accepts: (bytes, probe) => firstAudio(probe) !== undefined && !firstVideo(probe) && (/^(mp3|wav)$/.test(probe.formatName) || (isIsoBmff(bytes) && /mov|mp4|m4a/.test(probe.formatName))),
  normalize: () => ({ output: "ref.mp3", args: ["-i", "in.bin", "-map", "0:a:0", "-vn", "-c:a", "libmp3lame", "-b:a", "192k", "-ar", "44100", "-ac", "2", "-map_metadata", "-1", "ref.mp3"] }),
};

async function download(url: string, kind: Kind, deps: ReferenceDeps): Promise<Uint8Array> {
  try {
    const res = await deps.guard.fetch(url, { maxBytes: kind.maxBytes, timeoutMs: DOWNLOAD_TIMEOUT_MS, signal: deps.signal });
    return res.body;
  } catch (err) {
    if (!isOutboundError(err)) throw err;
    switch (err.kind) {
      case "invalid_url":
      case "not_public":
        throw new ApiError(400, kind.invalidUrl(url.slice(0, 200)));
      case "too_large":
        throw new ApiError(413, kind.tooLarge);
      case "http_status":
      case "redirect":
        throw new ApiError(400, kind.download(err.status ?? 502));
      case "timeout":
        throw new ApiError(400, kind.download(504));
      default:
        throw new ApiError(400, kind.download(502));
    }
  }
}

async function prepare(urls: string[], rules: ReferenceRules, model: string, kind: Kind, deps: ReferenceDeps): Promise<ReferenceMedia[]> {
  if (urls.length === 0) return [];
  // Downloads run side by side (each capped in bytes and time); the slot is only for the encoder.
  const files = await Promise.all(urls.map((u) => download(u, kind, deps)));
  const measured: Array<{ bytes: Uint8Array; probe: Probe; url: string }> = [];
  for (const [i, bytes] of files.entries()) {
    let probe: Probe;
    try {
      probe = await deps.engine.probe(bytes, "in.bin", { signal: deps.signal, timeoutMs: 60_000 });
    } catch {
      throw new ApiError(400, kind.unusable);
    }
    if (!kind.accepts(bytes, probe) || !(probe.durationSeconds > 0)) throw new ApiError(400, kind.unusable);
    const s = seconds(probe.durationSeconds);
    if (s < rules.minSeconds || s > rules.maxSeconds) throw new ApiError(400, kind.length(rules.minSeconds, rules.maxSeconds, s));
    measured.push({ bytes, probe, url: urls[i]! });
  }
  const total = seconds(measured.reduce((sum, m) => sum + m.probe.durationSeconds, 0));
  if (total > rules.totalSeconds) throw new ApiError(400, kind.total(total, model, rules.totalSeconds));

  return deps.slot.run(async () => {
    const out: ReferenceMedia[] = [];
    for (const m of measured) {
      const { args, output } = kind.normalize(m.probe);
      try {
        const res = await deps.engine.run(args, { inputs: { "in.bin": m.bytes }, outputs: [output], signal: deps.signal, timeoutMs: NORMALIZE_TIMEOUT_MS, durationSeconds: m.probe.durationSeconds });
        out.push({ bytes: res[output]!, seconds: seconds(m.probe.durationSeconds), url: m.url });
      } catch {
        throw new ApiError(400, kind.unusable);
      }
    }
    return out;
  });
}

/** Downloads, measures and normalizes reference videos; throws the spec's 400/413/503 (no charge yet). */
export const prepareReferenceVideos = (urls: string[], rules: ReferenceRules, model: string, deps: ReferenceDeps) => prepare(urls, rules, model, VIDEO, deps);

/** Downloads, measures and converts reference audio to MP3; the same errors in the audio's words. */
export const prepareReferenceAudio = (urls: string[], rules: ReferenceRules, model: string, deps: ReferenceDeps) => prepare(urls, rules, model, AUDIO, deps);
