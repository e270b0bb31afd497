// How every input reaches ffmpeg and ffprobe, on both engines. ffmpeg picks a demuxer by probing content,
// and some demuxers follow what the content names: an HLS or DASH manifest, a concat list, an image2 pattern,
// SVG. An upload called "up.mp3" that is really a DASH manifest pointing at `file:/...` would make native
// ffmpeg read a local file into the partner's output. So no input is ever probed:
// - its container is decided from its bytes (lib/formats/sniff.ts) among plain media formats only (raw
//   PCM or pixels only by an explicit raw demuxer, which interprets nothing);
// - it is opened with that one demuxer (`-f`), `-protocol_whitelist file` and `-format_whitelist <demuxer>`,
//   by a bare name we chose (a file of the run's private temp dir, or of the wasm core's memory);
// - an `-i` that names anything but one of the run's inputs is refused, except lavfi sources we generate;
// - a concat list (our own, for stream-copy merges) may only name other inputs, each sniffed the same way.
// Anything that does not pass is refused before a tool starts: "invalid_input" (422) when the input's bytes are
// at fault, "failed" when the arguments are (our bug).
import { type MediaContainer, sniffMedia } from "../formats/sniff.ts";
import { MediaError } from "./errors.ts";
import { FILE_NAME } from "./types.ts";

interface Demuxers {
  /** The demuxer used when the caller names none. */
  default: string;
  /** Demuxers a caller may ask for by `-f`. */
  allowed: readonly string[];
  /** For image2 (which decodes by the name's extension): the extensions that fit the bytes. */
  extensions?: readonly string[];
}

const DEMUXERS: Record<MediaContainer, Demuxers> = {
  isobmff: { default: "mov", allowed: ["mov", "mp4"] },
  matroska: { default: "matroska", allowed: ["matroska", "webm"] },
  mp3: { default: "mp3", allowed: ["mp3"] },
  aac: { default: "aac", allowed: ["aac"] },
  wav: { default: "wav", allowed: ["wav"] },
  ogg: { default: "ogg", allowed: ["ogg"] },
  flac: { default: "flac", allowed: ["flac"] },
  // image2 only when asked for (or for looping a still, which the pipe demuxers cannot), always with
  // `-pattern_type none` so the name is a name, not a sequence pattern.
  png: { default: "png_pipe", allowed: ["png_pipe", "image2"], extensions: ["png"] },
  jpeg: { default: "jpeg_pipe", allowed: ["jpeg_pipe", "image2"], extensions: ["jpg", "jpeg"] },
  webp: { default: "webp_pipe", allowed: ["webp_pipe", "image2"], extensions: ["webp"] },
};

/**
 * Raw sample and pixel demuxers: they take the bytes as numbers and interpret nothing, so any bytes are safe
 * to open with them. Only by a caller's explicit `-f` (raw data has no signature to sniff).
 */
const RAW_DEMUXERS = new Set(["s16le", "s16be", "s24le", "s32le", "f32le", "f32be", "f64le", "u8", "s8", "rawvideo"]);

/** Options that decide what may be opened: the engine sets them, a caller never does. */
const RESERVED = new Set([
  "-protocol_whitelist",
  "-protocol_blacklist",
  "-format_whitelist",
  "-codec_whitelist",
  "-safe",
  "-pattern_type",
  "-allowed_extensions",
  "-enable_drefs",
  "-use_absolute_path",
]);

/** Filters that open files or URLs by name; no argument list of ours uses them. */
const FILE_FILTERS = /(^|[\s,;\]])(a?movie|subtitles|ass|a?sendcmd|zmq|azmq)\s*=/;
const FILTER_OPTIONS = new Set([
  "-vf",
  "-af",
  "-filter",
  "-filter:v",
  "-filter:a",
  "-filter_complex",
  "-lavfi",
  "-filter_complex_script",
  "-filter_script",
  "-filter_script:v",
  "-filter_script:a",
]);

/** The container of one input, or the 422 that refuses it. */
export function sniffInput(name: string, bytes: Uint8Array): MediaContainer {
  const container = sniffMedia(bytes);
  if (!container)
    throw new MediaError("invalid_input", `input ${name} is not a media file we accept (refused by its first bytes)`);
  return container;
}

/** The last value of an option among an input's options. */
function lastValue(options: readonly string[], option: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < options.length - 1; i++) if (options[i] === option) value = options[i + 1];
  return value;
}

/**
 * Our concat lists: `ffconcat version 1.0`, comments, blank lines and `file '<name>'` lines naming inputs of
 * the same run. Any other directive (options, inpoints, nested lists, paths, URLs) is refused.
 */
export function concatListNames(list: Uint8Array): string[] {
  const names: string[] = [];
  const text = new TextDecoder("utf-8", { fatal: false }).decode(list);
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line === "ffconcat version 1.0") continue;
    const m = /^file\s+(?:'([^'\\]*)'|([^\s'\\]+))$/.exec(line);
    const name = m?.[1] ?? m?.[2];
    if (!name || !FILE_NAME.test(name))
      throw new MediaError("failed", `concat list line ${JSON.stringify(line.slice(0, 80))} is not a file of this run`);
    names.push(name);
  }
  if (!names.length) throw new MediaError("failed", "empty concat list");
  return names;
}

interface Opened {
  /** Options put right before `-i` (after the caller's, so they win). */
  options: string[];
}

function openInput(
  name: string,
  inputs: Readonly<Record<string, Uint8Array>>,
  callerOptions: readonly string[],
): Opened {
  const bytes = inputs[name];
  if (!bytes) throw new MediaError("failed", `-i ${JSON.stringify(name)} is not one of the run's inputs`);
  const asked = lastValue(callerOptions, "-f");
  if (asked !== undefined && RAW_DEMUXERS.has(asked))
    return { options: ["-f", asked, "-protocol_whitelist", "file", "-format_whitelist", asked] };
  if (asked === "concat") {
    const names = concatListNames(bytes);
    const demuxers = new Set<string>();
    for (const n of names) {
      if (n === name || !inputs[n])
        throw new MediaError("failed", `concat list names ${n}, which is not another input of the run`);
      const c = sniffInput(n, inputs[n]!);
      if (c !== "isobmff" && c !== "matroska")
        throw new MediaError("invalid_input", `concat input ${n} is not a video container`);
      demuxers.add(DEMUXERS[c].default);
    }
    // The list's entries are probed by the concat demuxer: the whitelists (copied to them) keep that probe to
    // the containers sniffed above, read from files only.
    return {
      options: [
        "-f",
        "concat",
        "-safe",
        "1",
        "-protocol_whitelist",
        "file",
        "-format_whitelist",
        ["concat", ...demuxers].join(","),
      ],
    };
  }
  const container = sniffInput(name, bytes);
  const d = DEMUXERS[container];
  const demuxer = asked ?? (d.extensions && callerOptions.includes("-loop") ? "image2" : d.default);
  if (!d.allowed.includes(demuxer))
    throw new MediaError("invalid_input", `input ${name} is ${container}, not for demuxer ${demuxer}`);
  const extra: string[] = [];
  if (demuxer === "image2") {
    const ext = name.toLowerCase().split(".").pop() ?? "";
    if (!name.includes(".") || !d.extensions!.includes(ext))
      throw new MediaError(
        "failed",
        `image input ${name} needs an extension that fits its bytes (${d.extensions!.join(", ")})`,
      );
    extra.push("-pattern_type", "none");
  }
  return { options: ["-f", demuxer, ...extra, "-protocol_whitelist", "file", "-format_whitelist", demuxer] };
}

/**
 * The ffmpeg argument list as it is run: every `-i` of a file gets its sniffed demuxer and the whitelists in
 * front of it. Throws MediaError before anything runs when an input or the arguments break the rules above.
 */
export function secureFfmpegArgs(args: readonly string[], inputs: Readonly<Record<string, Uint8Array>>): string[] {
  const out: string[] = [];
  let groupStart = 0;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (RESERVED.has(a)) throw new MediaError("failed", `${a} is set by the media engine`);
    if (FILTER_OPTIONS.has(a) && (a.includes("script") || FILE_FILTERS.test(args[k + 1] ?? "")))
      throw new MediaError("failed", `filter graph of ${a} opens files by name`);
    if (a !== "-i") {
      out.push(a);
      continue;
    }
    const target = args[k + 1];
    if (target === undefined) throw new MediaError("failed", "-i without a value");
    const options = args.slice(groupStart, k);
    if (lastValue(options, "-f") === "lavfi") {
      // A source we generate (testsrc2, sine, anullsrc, aevalsrc); never one that opens a file.
      if (FILE_FILTERS.test(target)) throw new MediaError("failed", "lavfi source opens files by name");
      out.push("-i", target);
    } else {
      out.push(...openInput(target, inputs, options).options, "-i", target);
    }
    k++;
    groupStart = k + 1;
  }
  return out;
}

/** The input options of an ffprobe run on one file (before its name). */
export function probeInputOptions(name: string, bytes: Uint8Array): string[] {
  return openInput(name, { [name]: bytes }, []).options;
}
