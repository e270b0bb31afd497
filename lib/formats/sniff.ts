// What a file is, by its first bytes: never by a name's extension or a server's content type. Media tools
// probe content and some of their formats are manifests that name other files or URLs (HLS, DASH, concat
// lists, SVG, subtitles with includes); deciding the format here, from a short list of plain media
// containers, is what lets the media engine open every input with one named demuxer and nothing else.

import { latin1 } from "./bytes.ts";
import { isoBmffFirstBox } from "./isobmff.ts";
import { isJpeg } from "./jpeg.ts";
import { isPng } from "./png.ts";
import { isWebp } from "./riff.ts";

const SIGNATURES = { "image/jpeg": isJpeg, "image/png": isPng, "image/webp": isWebp } as const;

export type ImageMimeType = keyof typeof SIGNATURES;

const ALL = Object.keys(SIGNATURES) as ImageMimeType[];

/** The media type the bytes' signature announces, among `accepted` (default: JPEG, PNG, WebP); null when none. */
export function sniffImageType<T extends ImageMimeType = ImageMimeType>(
  bytes: Uint8Array,
  accepted: readonly T[] = ALL as T[],
): T | null {
  return accepted.find((type) => SIGNATURES[type](bytes)) ?? null;
}

/**
 * The containers media inputs may be. Each is read by exactly one demuxer that only ever reads the bytes it is
 * given: none of them follows a reference to another file or URL.
 */
export const MEDIA_CONTAINERS = [
  "isobmff",
  "matroska",
  "mp3",
  "aac",
  "wav",
  "ogg",
  "flac",
  "png",
  "jpeg",
  "webp",
] as const;
export type MediaContainer = (typeof MEDIA_CONTAINERS)[number];

export const AUDIO_CONTAINERS: readonly MediaContainer[] = ["isobmff", "matroska", "mp3", "aac", "wav", "ogg", "flac"];
export const VIDEO_CONTAINERS: readonly MediaContainer[] = ["isobmff", "matroska"];
export const IMAGE_CONTAINERS: readonly MediaContainer[] = ["png", "jpeg", "webp"];

/** An ID3v2 tag's total length (header, body, optional footer), or 0 when the bytes do not start with one. */
function id3v2Length(b: Uint8Array, at: number): number {
  if (b.length < at + 10 || latin1(b, at, at + 3) !== "ID3" || b[at + 3] === 0xff || b[at + 4] === 0xff) return 0;
  const size = b.subarray(at + 6, at + 10);
  if (size.some((x) => x & 0x80)) return 0; // sizes are "syncsafe": 7 bits a byte
  const body = (size[0]! << 21) | (size[1]! << 14) | (size[2]! << 7) | size[3]!;
  return 10 + body + (b[at + 5]! & 0x10 ? 10 : 0);
}

/** ADTS (raw AAC): 12 sync bits, layer 00. */
const isAdts = (b: Uint8Array, at: number) => b.length >= at + 7 && b[at] === 0xff && (b[at + 1]! & 0xf6) === 0xf0;

/** An MPEG audio (layer I-III) frame header: 11 sync bits, a defined version, layer, bit rate and sample rate. */
function isMpegAudioFrame(b: Uint8Array, at: number): boolean {
  if (b.length < at + 4 || b[at] !== 0xff || (b[at + 1]! & 0xe0) !== 0xe0) return false;
  const version = (b[at + 1]! >> 3) & 3;
  const layer = (b[at + 1]! >> 1) & 3;
  const bitrate = b[at + 2]! >> 4;
  const rate = (b[at + 2]! >> 2) & 3;
  return version !== 1 && layer !== 0 && bitrate !== 15 && rate !== 3;
}

const isEbml = (b: Uint8Array) => b.length >= 4 && b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3;
const isWav = (b: Uint8Array) =>
  b.length >= 12 && (latin1(b, 0, 4) === "RIFF" || latin1(b, 0, 4) === "RF64") && latin1(b, 8, 12) === "WAVE";

/**
 * The container the bytes' signature announces, or null when it is none we accept (a playlist, a manifest, a
 * concat list, subtitles, SVG or any other text, an unknown binary). ISO-BMFF includes QuickTime files that
 * start with a `pnot` preview atom; callers with narrower rules (no 3GP, ftyp only) check those themselves.
 */
export function sniffMedia(
  bytes: Uint8Array,
  accepted: readonly MediaContainer[] = MEDIA_CONTAINERS,
): MediaContainer | null {
  const found = sniffAny(bytes);
  return found && accepted.includes(found) ? found : null;
}

function sniffAny(b: Uint8Array): MediaContainer | null {
  if (isoBmffFirstBox(b, { pnot: true })) return "isobmff";
  if (isEbml(b)) return "matroska";
  if (isWav(b)) return "wav";
  if (b.length >= 4 && latin1(b, 0, 4) === "OggS") return "ogg";
  if (b.length >= 4 && latin1(b, 0, 4) === "fLaC") return "flac";
  if (isPng(b)) return "png";
  if (isJpeg(b)) return "jpeg";
  if (isWebp(b)) return "webp";
  // An ID3v2 tag may lead MP3, AAC and FLAC files; what follows it decides (ffmpeg skips the tag itself).
  const tag = id3v2Length(b, 0);
  if (tag) {
    if (b.length >= tag + 4 && latin1(b, tag, tag + 4) === "fLaC") return "flac";
    if (isAdts(b, tag)) return "aac";
    // Encoders pad after the tag; the MP3 demuxer looks for the first frame itself and reads nothing else.
    return "mp3";
  }
  if (isAdts(b, 0)) return "aac";
  if (isMpegAudioFrame(b, 0)) return "mp3";
  return null;
}
