// Result intake (issue 39 item 5): an upstream's output URL turned into what the spec promises, at once,
// because fal and Replicate delete their outputs after a while and the partner must never see their URLs.
// Each file is downloaded through the outbound guard (capped, timed), judged by its first bytes and its
// probe, and converted by the media engine (ffmpeg runs as a child process or in a wasm worker, never on the
// event loop); the result holds our bytes only.
//
// Two kinds of failure, for the gateway's poll (helper A's providers.ts) to tell apart:
// - UpstreamOutputError: the output is not what it says (an HTML page as a PNG, zero bytes, a file that does
//   not decode, a video of the wrong length class, a file that is gone). Looking again cannot help: the poll
//   answers `{ state: "failed", error }`, which the consuming plugin turns into its sanitized failure,
//   refunded once.
// - IntakeDownloadError: the download itself was out of reach (connect error, time-out, a 5xx or 429 of the
//   file host). It carries `upstreamStatus`, so isTransient() says yes: thrown from a poll, the runtime looks
//   again with back-off, and a later look downloads again.
// Neither message ever holds the URL (it names the kind of file only), and neither keeps the guard's error
// as its cause (the guard's messages name the URL).
//
// Choices where the spec is silent, written down here:
// - Images: decoded and written as PNG at exactly the requested size. An upstream of another size is scaled
//   to cover the requested frame and centre-cropped (the aspect is kept, nothing is stretched, no bars): what
//   the sandboxes do with a picture of another aspect. An alpha channel is kept (a transparent background).
// - Videos: always re-encoded to H.264 (yuv420p) with AAC 48 kHz stereo, at exactly the requested frame size
//   (cover and centre-crop as for images), cut at the requested seconds. A length is accepted from 75% of the
//   requested seconds minus half a second to 150% plus one second (a 5 s clip for a 10 s request is another
//   duration class: refused). When sound is wanted and the upstream sent none, a silent AAC track is added, so
//   the file is the shape the spec promises (the partner hears silence, as from a model that made a silent
//   scene); when sound is not wanted, the upstream's audio is dropped.
// - Music: MP3. An MP3 is copied as is without its tags (no re-encode of a lossy file); anything else is
//   encoded to MP3 192 kb/s 44.1 kHz stereo, as the sandbox's tracks are. A track shorter than one second (or
//   than the part an extension keeps) is refused. The cover is a square PNG (COVER_SIZE, cover and crop) from
//   the upstream's picture, or a plain one when the upstream sent none.
// - Every output loses all container and stream metadata here (an upstream's tags can name its own URLs or
//   request ids); a plugin that writes its own provenance does so afterwards.
import {
  AAC_STEREO_ARGS,
  BITEXACT_STREAM_ARGS,
  checkPicture,
  FASTSTART_ARGS,
  firstAudio,
  firstVideo,
  type GeneratedImage,
  type GeneratedVideo,
  h264Args,
  isMediaError,
  isOutboundError,
  type MediaEngine,
  type MusicTrack,
  NO_METADATA_ARGS,
  type OutboundGuard,
  type Probe,
  probeOverBudget,
  sniffImageType,
  sniffMedia,
  VIDEO_CONTAINERS,
} from "mediagate/plugin";

/** What the gateway gets from its CapabilityHost: `host.capability("outbound")`, `host.capability("media")`. */
export interface IntakeDeps {
  outbound: OutboundGuard;
  media: MediaEngine;
}

/** The output is not what it says; looking again cannot help (the poll answers `failed`). */
export class UpstreamOutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UpstreamOutputError";
  }
}

/** The download was out of reach; `upstreamStatus` makes it transient (the poll throws it: looked at again). */
export class IntakeDownloadError extends Error {
  readonly upstreamStatus: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = "IntakeDownloadError";
    this.upstreamStatus = status;
  }
}

/** The one table of intake limits, each with why. */
export const INTAKE_LIMITS = {
  /** An image: 50 MB (a 4096 x 4096 PNG of noise is about 50 MB; models send far less). */
  imageBytes: 50_000_000,
  /**
   * A video: 200 MB, held whole while it is converted (the wasm engine holds its inputs whole anyway). Generated
   * clips are seconds long: 15 s of 4K at 50 Mb/s is under 100 MB.
   */
  videoBytes: 200_000_000,
  /** A song: 100 MB (ten minutes of WAV). */
  audioBytes: 100_000_000,
  /** A cover picture: 20 MB. */
  coverBytes: 20_000_000,
  /** One download, start to end: outputs sit on the service's CDN, two minutes is far beyond a healthy one. */
  downloadMs: 120_000,
  /** A video's download: large files on a slow link. */
  videoDownloadMs: 600_000,
  /** One conversion run. */
  convertMs: 600_000,
  /** Redirects followed (each target checked by the guard again; no header of ours is ever sent). */
  redirects: 3,
  /** The accepted length of a video: from `min * seconds - minSlack` to `max * seconds + maxSlack`. */
  videoLength: { min: 0.75, minSlack: 0.5, max: 1.5, maxSlack: 1 },
  /** The shortest song. */
  songSeconds: 1,
} as const;

/** The side of a song's square cover (the sandbox's size). */
export const COVER_SIZE = 512;

interface CallOptions {
  signal: AbortSignal;
  /** 0-1 of the intake (download then conversion). */
  onProgress?(fraction: number): void | Promise<void>;
}

export interface ImageIntake extends CallOptions {
  width: number;
  height: number;
}

export interface VideoIntake extends CallOptions {
  width: number;
  height: number;
  seconds: number;
  sound: boolean;
}

export interface MusicIntake extends CallOptions {
  /** The track's audio. */
  audioUrl: string;
  /** Its cover picture, when the upstream made one. */
  coverUrl?: string;
  title: string;
  /** The shortest acceptable length (an extension: at least the part of the source it keeps). */
  minSeconds?: number;
  /** MusicTrack.arrangement: what the route wants back on extension (null: nothing). */
  arrangement?: Record<string, unknown> | null;
}

/** The upstream's picture as a PNG of exactly `width` x `height`. */
export async function intakeImage(deps: IntakeDeps, url: string, o: ImageIntake): Promise<GeneratedImage> {
  const bytes = await download(deps, url, "image", INTAKE_LIMITS.imageBytes, INTAKE_LIMITS.downloadMs, o);
  await o.onProgress?.(0.5);
  const png = await toPng(deps.media, bytes, "image", o.width, o.height, o.signal);
  await o.onProgress?.(1);
  return { bytes: png, mimeType: "image/png" };
}

/** The upstream's clip as an H.264/AAC MP4 of exactly `width` x `height`, cut at `seconds`. */
export async function intakeVideo(deps: IntakeDeps, url: string, o: VideoIntake): Promise<GeneratedVideo> {
  const bytes = await download(deps, url, "video", INTAKE_LIMITS.videoBytes, INTAKE_LIMITS.videoDownloadMs, o);
  await o.onProgress?.(0.4);
  if (!sniffMedia(bytes, VIDEO_CONTAINERS)) throw new UpstreamOutputError("the upstream's video is not a video file");
  const probe = await probed(deps.media, bytes, "video", o.signal);
  const video = firstVideo(probe);
  if (!video || probeOverBudget(probe)) throw new UpstreamOutputError("the upstream's video is not a usable video");
  const { min, minSlack, max, maxSlack } = INTAKE_LIMITS.videoLength;
  if (probe.durationSeconds < o.seconds * min - minSlack || probe.durationSeconds > o.seconds * max + maxSlack)
    throw new UpstreamOutputError(
      `the upstream's video lasts ${probe.durationSeconds.toFixed(2)} s where ${o.seconds} s was asked`,
    );
  const audio = firstAudio(probe);
  const W = o.width;
  const H = o.height;
  const sound = o.sound
    ? audio
      ? ["-map", `0:${audio.index}`, ...AAC_STEREO_ARGS]
      : ["-map", "1:a", ...AAC_STEREO_ARGS]
    : ["-an"];
  const silence = o.sound && !audio ? ["-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo"] : [];
  const args = [
    "-i",
    "in.bin",
    ...silence,
    "-map",
    `0:${video.index}`,
    ...sound,
    "-vf",
    `${coverCrop(W, H)},format=yuv420p`,
    ...h264Args({ preset: deps.media.kind === "wasm" ? "ultrafast" : "veryfast", crf: 20 }),
    "-t",
    String(Math.min(o.seconds, probe.durationSeconds)),
    ...NO_METADATA_ARGS,
    ...BITEXACT_STREAM_ARGS,
    ...FASTSTART_ARGS,
    "out.mp4",
  ];
  const out = await converted(deps.media, "video", args, { "in.bin": bytes }, "out.mp4", o, 0.4);
  const made = await probed(deps.media, out, "video", o.signal);
  const v = firstVideo(made);
  if (v?.codec !== "h264" || v.width !== W || v.height !== H || (o.sound && firstAudio(made)?.codec !== "aac"))
    throw new UpstreamOutputError("the upstream's video could not be converted");
  await o.onProgress?.(1);
  return { bytes: out, mimeType: "video/mp4", spoken: null };
}

/** The upstream's song as MP3 with its cover, title and measured length. */
export async function intakeMusic(deps: IntakeDeps, o: MusicIntake): Promise<MusicTrack> {
  const bytes = await download(deps, o.audioUrl, "audio", INTAKE_LIMITS.audioBytes, INTAKE_LIMITS.downloadMs, o);
  await o.onProgress?.(0.3);
  const container = sniffMedia(bytes, ["mp3", "wav", "ogg", "flac", "aac", "isobmff"]);
  if (!container) throw new UpstreamOutputError("the upstream's audio is not an audio file");
  const probe = await probed(deps.media, bytes, "audio", o.signal);
  const audio = firstAudio(probe);
  const shortest = Math.max(INTAKE_LIMITS.songSeconds, o.minSeconds ?? 0);
  if (!audio || probeOverBudget(probe) || probe.durationSeconds < shortest)
    throw new UpstreamOutputError("the upstream's audio is not a usable song");
  const codec =
    container === "mp3"
      ? ["-c:a", "copy"]
      : ["-c:a", "libmp3lame", "-b:a", "192k", "-ar", "44100", "-ac", "2", "-flags:a", "+bitexact"];
  const args = [
    "-i",
    "in.bin",
    "-map",
    `0:${audio.index}`,
    ...codec,
    ...NO_METADATA_ARGS,
    "-id3v2_version",
    "0",
    // The Xing header stays: a VBR song's length is read from it (by our probe and by every player).
    "-f",
    "mp3",
    "out.mp3",
  ];
  const mp3 = await converted(deps.media, "audio", args, { "in.bin": bytes }, "out.mp3", o, 0.3, 0.8);
  const made = await probed(deps.media, mp3, "audio", o.signal);
  if (firstAudio(made)?.codec !== "mp3") throw new UpstreamOutputError("the upstream's audio could not be converted");
  const cover = o.coverUrl
    ? await toPng(
        deps.media,
        await download(deps, o.coverUrl, "cover", INTAKE_LIMITS.coverBytes, INTAKE_LIMITS.downloadMs, o),
        "cover",
        COVER_SIZE,
        COVER_SIZE,
        o.signal,
      )
    : await plainCover(deps.media, o.signal);
  await o.onProgress?.(1);
  return {
    audio: mp3,
    cover,
    coverMimeType: "image/png",
    title: o.title,
    duration: made.durationSeconds,
    arrangement: o.arrangement ?? null,
  };
}

/** Scale to cover the frame, then crop its centre: the aspect kept, nothing stretched, no bars. */
const coverCrop = (W: number, H: number) =>
  `scale=${W}:${H}:force_original_aspect_ratio=increase:flags=lanczos,crop=${W}:${H},setsar=1`;

/** One frame (through `filter`, when given) written to `output` as a PNG of its pixels only: no metadata, no
 * encoder name. */
function onePngArgs(output: string, filter?: string): string[] {
  return [
    ...["-frames:v", "1"],
    ...(filter === undefined ? [] : ["-vf", filter]),
    ...["-c:v", "png", ...NO_METADATA_ARGS, "-flags:v", "+bitexact"],
    ...["-f", "image2", "-update", "1", output],
  ];
}

async function toPng(
  media: MediaEngine,
  bytes: Uint8Array,
  what: string,
  width: number,
  height: number,
  signal: AbortSignal,
): Promise<Uint8Array> {
  // By the bytes, never the service's content type; and by the header's size before anything decodes it.
  if (!sniffImageType(bytes) || !checkPicture(bytes).ok)
    throw new UpstreamOutputError(`the upstream's ${what} is not a picture`);
  const args = ["-i", "in.bin", ...onePngArgs("out.png", coverCrop(width, height))];
  return converted(media, what, args, { "in.bin": bytes }, "out.png", { signal }, 0, 0);
}

async function plainCover(media: MediaEngine, signal: AbortSignal): Promise<Uint8Array> {
  const args = ["-f", "lavfi", "-i", `color=c=0x1f2433:s=${COVER_SIZE}x${COVER_SIZE}:d=1`, ...onePngArgs("cover.png")];
  return converted(media, "cover", args, {}, "cover.png", { signal }, 0, 0);
}

/** Runs one conversion; a file the engine cannot read is the upstream's fault, an engine failure is ours. */
async function converted(
  media: MediaEngine,
  what: string,
  args: string[],
  inputs: Record<string, Uint8Array>,
  output: string,
  o: CallOptions,
  from: number,
  to = 1,
): Promise<Uint8Array> {
  try {
    const out = await media.run(args, {
      inputs,
      outputs: [output],
      signal: o.signal,
      timeoutMs: INTAKE_LIMITS.convertMs,
      onProgress: to > from ? (f) => void o.onProgress?.(from + (to - from) * f) : undefined,
    });
    return out[output]!;
  } catch (err) {
    if (o.signal.aborted) throw o.signal.reason ?? err;
    if (isMediaError(err) && err.isInputError) throw new UpstreamOutputError(`the upstream's ${what} does not decode`);
    throw err;
  }
}

async function probed(media: MediaEngine, bytes: Uint8Array, what: string, signal: AbortSignal): Promise<Probe> {
  try {
    return await media.probe(bytes, "in.bin", { signal, timeoutMs: 60_000 });
  } catch (err) {
    if (signal.aborted) throw signal.reason ?? err;
    if (isMediaError(err) && err.isInputError) throw new UpstreamOutputError(`the upstream's ${what} does not decode`);
    throw err;
  }
}

/**
 * The file at `url`, whole. Redirects are followed by hand (the guard never follows one), each target checked
 * by the guard like the first; no header of ours goes with any of them.
 */
async function download(
  deps: IntakeDeps,
  url: string,
  what: string,
  maxBytes: number,
  timeoutMs: number,
  o: CallOptions,
): Promise<Uint8Array> {
  let target = url;
  for (let hop = 0; ; hop++) {
    try {
      const res = await deps.outbound.fetch(target, { maxBytes, timeoutMs, signal: o.signal });
      if (res.body.byteLength === 0) throw new UpstreamOutputError(`the upstream's ${what} is empty`);
      return res.body;
    } catch (err) {
      if (o.signal.aborted) throw o.signal.reason ?? new Error(`the ${what} download was cancelled`);
      if (err instanceof UpstreamOutputError) throw err;
      const next = isOutboundError(err, "redirect") && err.location ? redirected(target, err.location) : null;
      if (next && hop < INTAKE_LIMITS.redirects) {
        target = next;
        continue;
      }
      throw downloadFailure(err, what);
    }
  }
}

function redirected(from: string, location: string): string | null {
  try {
    return new URL(location, from).href;
  } catch {
    return null;
  }
}

function downloadFailure(err: unknown, what: string): Error {
  if (!isOutboundError(err)) return new IntakeDownloadError(`the upstream's ${what} could not be downloaded`, 502);
  switch (err.kind) {
    case "timeout":
      return new IntakeDownloadError(`the upstream's ${what} download timed out`, 504);
    case "network":
      return new IntakeDownloadError(`the upstream's ${what} could not be reached`, 502);
    case "http_status": {
      const status = err.status ?? 502;
      if (status === 429 || status === 408 || status >= 500)
        return new IntakeDownloadError(`the upstream's ${what} answered ${status}`, status);
      return new UpstreamOutputError(`the upstream's ${what} answered ${status}`);
    }
    case "too_large":
      return new UpstreamOutputError(`the upstream's ${what} is over the size limit`);
    case "redirect":
      return new UpstreamOutputError(`the upstream's ${what} redirected too often, or nowhere`);
    default:
      // invalid_url, not_public: the URL itself is unacceptable; the guard's text names it, ours does not.
      return new UpstreamOutputError(`the upstream's ${what} URL was refused (${err.kind})`);
  }
}
