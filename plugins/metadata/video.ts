// Video metadata removal: the picture and sound streams are stream-copied (never re-encoded) into a new
// container by the media library's metadata-free remux (stripVideoMetadataArgs: what it leaves behind is
// listed there). MOV stays MOV (QuickTime-only features survive), anything else becomes MP4; the index (moov)
// goes in front so the copy plays while it downloads.
import {
  damagedMedia,
  FORMAT_LIMITS,
  isIsoBmffFirstBox,
  isMediaError,
  isoBmffFirstBox,
  latin1,
  type MediaEngine,
  type Mp4Box,
  mp4Boxes,
  mp4MetadataCategories,
  pacer,
  stripVideoMetadataArgs,
} from "mediagate/plugin";
import { type Category, type Cleaned, sortCategories } from "./damage.ts";

/** Old QuickTime files led by a `pnot` preview atom are MOV too. */
const START = { pnot: true } as const;

export interface VideoContainer {
  format: "mov" | "mp4";
  contentType: string;
  extension: string;
}

const MOV: VideoContainer = { format: "mov", contentType: "video/quicktime", extension: "mov" };
const MP4: VideoContainer = { format: "mp4", contentType: "video/mp4", extension: "mp4" };

/** The container the copy is written in, or null when `bytes` is not ISO-BMFF at all (the spec's 415). */
export function videoContainerOf(bytes: Uint8Array): VideoContainer | null {
  const box = isoBmffFirstBox(bytes, START);
  if (box) {
    if (box.type !== "ftyp") return MOV;
    if (box.body + 4 > box.end) return null;
    return latin1(bytes, box.body, box.body + 4) === "qt  " ? MOV : MP4;
  }
  // A first box that does not fit in the file is still recognisably ISO-BMFF (a truncated download): the
  // remux will call it damaged.
  return bytes.length >= 8 && isIsoBmffFirstBox(latin1(bytes, 4, 8), START)
    ? latin1(bytes, 8, 12) === "qt  " || latin1(bytes, 4, 8) !== "ftyp"
      ? MOV
      : MP4
    : null;
}

/**
 * Whether some track's edit list plays more than one stretch of its media. ffmpeg's demuxer applies such
 * lists to a stream copy by replaying packets (a QuickTime screen recording of 313 frames came out with 374,
 * timestamps running backwards); those files are copied packet for packet with their edit lists ignored.
 * Single-stretch lists (B-frame delay, AAC priming and trimming) are applied, as players do.
 */
export async function hasMultiEditList(bytes: Uint8Array): Promise<boolean> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Box by box, no list of them: past the walker's caps it is FormatLimitError (the 422), and the walk
  // lets the event loop turn after every slice of work.
  const pace = pacer();
  async function* within(type: string, from: number, to: number, maxBoxes: number): AsyncGenerator<Mp4Box> {
    for (const box of mp4Boxes(bytes, from, to, maxBoxes)) {
      if (box.type === type) yield box;
      await pace();
    }
  }
  const child = FORMAT_LIMITS.isoBmffChildBoxes;
  for await (const moov of within("moov", 0, bytes.length, FORMAT_LIMITS.isoBmffTopLevelBoxes))
    for await (const trak of within("trak", moov.body, moov.end, child))
      for await (const edts of within("edts", trak.body, trak.end, child))
        for await (const elst of within("elst", edts.body, edts.end, child)) {
          if (elst.body + 8 > elst.end) continue;
          const version = bytes[elst.body]!;
          const count = view.getUint32(elst.body + 4);
          const size = version === 1 ? 20 : 12;
          let media = 0;
          for (let i = 0, at = elst.body + 8; i < count && at + size <= elst.end; i++, at += size) {
            // media_time -1 is an empty edit (a delay), not a stretch of media.
            const empty = version === 1 ? view.getBigInt64(at + 8) === -1n : view.getInt32(at + 4) === -1;
            if (!empty) media++;
          }
          if (media > 1) return true;
        }
  return false;
}

export interface VideoCleanOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/**
 * Throws DamagedMediaError when the engine cannot read the file, or when it holds neither picture nor sound.
 * Failures that are not the file's (no engine, a time-out, a cancellation) pass through unchanged.
 */
export async function cleanVideo(
  engine: MediaEngine,
  bytes: Uint8Array,
  container: VideoContainer,
  options: VideoCleanOptions = {},
): Promise<Cleaned> {
  const found = new Set<Category>(mp4MetadataCategories(bytes));
  const ignoreEditList = await hasMultiEditList(bytes);
  const output = `out.${container.extension}`;
  let out: Uint8Array;
  try {
    const res = await engine.run(
      stripVideoMetadataArgs("in.bin", output, { format: container.format, ignoreEditList, strict: true }),
      { inputs: { "in.bin": bytes }, outputs: [output], signal: options.signal, timeoutMs: options.timeoutMs },
    );
    out = res[output]!;
  } catch (err) {
    // The arguments are fixed and tested on both engines, so a run that fails on its own ("invalid_input",
    // "unsupported", or "failed": ffmpeg's exit on a corrupt packet) failed on the file.
    if (isMediaError(err) && (err.isInputError || err.code === "failed")) damagedMedia(err.detail);
    throw err;
  }
  if (out.length === 0) damagedMedia("empty output");
  // What the copy still carries would be a bug of ours, not the file's: refuse to hand it out.
  const left = mp4MetadataCategories(out);
  if (left.length) throw new Error(`video copy still carries ${left.join(", ")}`);
  return { bytes: out, removed: sortCategories(found) };
}
