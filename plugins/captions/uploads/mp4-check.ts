// Is this upload an MP4 we can caption, and how long is it? Decided before any charge, from the file's
// ISO BMFF structure only (ISO/IEC 14496-12), without a media tool and without holding the file: the
// top-level boxes are walked by their headers (a few bytes each, wherever they are), and only `moov` (and,
// in a fragmented file, each small `moof`) is read whole. A chunked upload is checked across its stored
// parts through `partsSource`, never concatenated.
//
// What passes (our rules; the spec says only "invalid MP4" and "duration"): the top-level boxes tile the
// file exactly (a tail shorter than a box header is ignored), an `ftyp` comes before `moov` and the media,
// exactly one `moov` with an `mvhd`, a track whose handler is `vide`, media present (`mdat`, or `moof`
// fragments), and a duration above 0 and at most `maxSeconds`. The duration is the longest of the movie
// header's, the fragment header's (`mehd`), each track's media header's, and, in a fragmented file, each
// track's last fragment end (`tfdt` + its samples' durations).
//
// Bounded (issue 45): no object is kept per box or per fragment (running counts and maxima only), the counts
// are capped by lib/formats FORMAT_LIMITS (top-level boxes, children of one box, fragments), and the walk
// lets the event loop turn every few milliseconds. Past a cap the file is `notMp4`: the partner's 400,
// before any charge. (A 30 MB file of 8-byte moofs had stalled /healthz 6.8 s and held an object each.)
import { FORMAT_LIMITS, pacer } from "mediagate/plugin";

export interface ByteSource {
  readonly size: number;
  /** Exactly `length` bytes at `offset` (within `size`). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

export type Mp4Verdict =
  | { ok: true; seconds: number }
  /** `notMp4`: not an MP4 we can read; `noVideo`: no video track; `tooLong`: over `maxSeconds`. */
  | { ok: false; reason: "notMp4" | "noVideo" | "tooLong" };

/** The largest `moov` (or `moof`) read into memory; real ones for 30 minutes of video are a few MB. */
export const MAX_HEADER_BOX_BYTES = 64 * 1024 * 1024;

export function bytesSource(bytes: Uint8Array): ByteSource {
  return { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

/**
 * The file made of `parts` in order, read part by part: at most one part is held (the last one read), and
 * a read that spans parts copies only its own bytes.
 */
export function partsSource(parts: ReadonlyArray<{ size: number; read(): Promise<Uint8Array> }>): ByteSource {
  const starts: number[] = [];
  let size = 0;
  for (const p of parts) {
    starts.push(size);
    size += p.size;
  }
  let cached: { index: number; bytes: Uint8Array } | null = null;
  const part = async (index: number) => {
    if (cached?.index !== index) {
      cached = null; // let the previous part go before the next one arrives
      const bytes = await parts[index]!.read();
      if (bytes.byteLength !== parts[index]!.size) throw new PartChanged();
      cached = { index, bytes };
    }
    return cached.bytes;
  };
  const partAt = (offset: number) => {
    let lo = 0;
    let hi = parts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  return {
    size,
    async read(offset, length) {
      let index = partAt(offset);
      const first = await part(index);
      const within = offset - starts[index]!;
      if (within + length <= first.byteLength) return first.subarray(within, within + length);
      const out = new Uint8Array(length);
      let filled = 0;
      let from = within;
      while (filled < length) {
        const bytes = await part(index);
        const n = Math.min(length - filled, bytes.byteLength - from);
        out.set(bytes.subarray(from, from + n), filled);
        filled += n;
        index++;
        from = 0;
      }
      return out;
    },
  };
}

/** A stored part was not the size recorded for it (storage changed under us): not a readable file. */
export class PartChanged extends Error {}

class NotMp4 extends Error {}

const u32 = (b: Uint8Array, o: number) => ((b[o]! << 24) >>> 0) + (b[o + 1]! << 16) + (b[o + 2]! << 8) + b[o + 3]!;
const u64 = (b: Uint8Array, o: number) => u32(b, o) * 2 ** 32 + u32(b, o + 4);
const fourcc = (b: Uint8Array, o: number) => String.fromCharCode(b[o]!, b[o + 1]!, b[o + 2]!, b[o + 3]!);
const printable = (b: Uint8Array, o: number) => [0, 1, 2, 3].every((i) => b[o + i]! >= 0x20 && b[o + i]! <= 0x7e);

interface Box {
  type: string;
  /** Offset of the box (its header) and of its payload, and its total size. */
  start: number;
  payload: number;
  end: number;
}

/**
 * The boxes inside `buf` between `from` and `to` (a box's payload), header by header, none kept; more than
 * FORMAT_LIMITS.isoBmffChildBoxes side by side is not an MP4 we read (a 30 MB moov of 8-byte children was
 * accepted and charged, after an object per child).
 */
function* children(buf: Uint8Array, from: number, to: number): Generator<Box> {
  let at = from;
  for (let count = 1; at + 8 <= to; count++) {
    if (count > FORMAT_LIMITS.isoBmffChildBoxes) throw new NotMp4();
    let size = u32(buf, at);
    const type = fourcc(buf, at + 4);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) throw new NotMp4();
      size = u64(buf, at + 8);
      header = 16;
    } else if (size === 0) {
      size = to - at;
    }
    if (size < header || at + size > to) throw new NotMp4();
    yield { type, start: at, payload: at + header, end: at + size };
    at += size;
  }
}

/** The first child of `box` of each type asked for; every child is still checked to fit. */
function firstChildren(buf: Uint8Array, box: Box, ...types: string[]): Map<string, Box> {
  const found = new Map<string, Box>();
  for (const b of children(buf, box.payload, box.end))
    if (types.includes(b.type) && !found.has(b.type)) found.set(b.type, b);
  return found;
}

/** Timescale and duration of a full box laid out as mvhd/mdhd (version 0: 32-bit times, version 1: 64-bit). */
function timesOf(buf: Uint8Array, box: Box): { timescale: number; duration: number } {
  const p = box.payload;
  const v1 = buf[p] === 1;
  const need = v1 ? 36 : 24;
  if (box.end - p < need) throw new NotMp4();
  const timescale = u32(buf, p + (v1 ? 20 : 12));
  let duration = v1 ? u64(buf, p + 24) : u32(buf, p + 16);
  // All ones: "duration unknown".
  if ((v1 && u32(buf, p + 24) === 0xffffffff && u32(buf, p + 28) === 0xffffffff) || (!v1 && duration === 0xffffffff))
    duration = 0;
  return { timescale, duration };
}

interface Track {
  id: number;
  video: boolean;
  timescale: number;
  seconds: number;
  /** From `trex`: the duration of a sample whose fragment says none. */
  defaultSampleDuration: number;
}

function trackOf(buf: Uint8Array, trak: Box): Track | null {
  const { tkhd, mdia } = Object.fromEntries(firstChildren(buf, trak, "tkhd", "mdia"));
  if (!tkhd || !mdia) return null;
  const v1 = buf[tkhd.payload] === 1;
  if (tkhd.end - tkhd.payload < (v1 ? 24 : 16)) throw new NotMp4();
  const id = u32(buf, tkhd.payload + (v1 ? 20 : 12));
  const { hdlr, mdhd } = Object.fromEntries(firstChildren(buf, mdia, "hdlr", "mdhd"));
  if (!hdlr || !mdhd || hdlr.end - hdlr.payload < 12) return null;
  const media = timesOf(buf, mdhd);
  return {
    id,
    video: fourcc(buf, hdlr.payload + 8) === "vide",
    timescale: media.timescale,
    seconds: media.timescale > 0 ? media.duration / media.timescale : 0,
    defaultSampleDuration: 0,
  };
}

function readMoov(buf: Uint8Array): { movieSeconds: number; tracks: Map<number, Track> } {
  // One pass over the children: tracks as they come, the first mvhd and mvex kept for after.
  let mvhd: Box | undefined;
  let mvex: Box | undefined;
  const tracks = new Map<number, Track>();
  for (const box of children(buf, 0, buf.byteLength)) {
    if (box.type === "mvhd") mvhd ??= box;
    else if (box.type === "mvex") mvex ??= box;
    else if (box.type === "trak") {
      const track = trackOf(buf, box);
      if (track) tracks.set(track.id, track);
    }
  }
  if (!mvhd) throw new NotMp4();
  const movie = timesOf(buf, mvhd);
  if (movie.timescale === 0) throw new NotMp4();
  let movieSeconds = movie.duration / movie.timescale;
  if (mvex) {
    for (const box of children(buf, mvex.payload, mvex.end)) {
      if (box.type === "mehd" && box.end - box.payload >= 8) {
        const fragment =
          buf[box.payload] === 1 && box.end - box.payload >= 12 ? u64(buf, box.payload + 4) : u32(buf, box.payload + 4);
        movieSeconds = Math.max(movieSeconds, fragment / movie.timescale);
      } else if (box.type === "trex" && box.end - box.payload >= 24) {
        const track = tracks.get(u32(buf, box.payload + 4));
        if (track) track.defaultSampleDuration = u32(buf, box.payload + 12);
      }
    }
  }
  return { movieSeconds, tracks };
}

/** Samples summed between two chances for the event loop to turn. */
const SAMPLES_PER_PACE = 4096;

/** Where each track's samples in one `moof` end, in seconds (tfdt + the durations of its runs), into `ends`. */
async function fragmentEnds(
  buf: Uint8Array,
  tracks: Map<number, Track>,
  ends: Map<number, number>,
  pace: Pace,
): Promise<void> {
  for (const traf of children(buf, 0, buf.byteLength)) {
    if (traf.type !== "traf") continue;
    const { tfhd, tfdt } = Object.fromEntries(firstChildren(buf, traf, "tfhd", "tfdt"));
    if (!tfhd || tfhd.end - tfhd.payload < 8) throw new NotMp4();
    const flags = u32(buf, tfhd.payload) & 0xffffff;
    const track = tracks.get(u32(buf, tfhd.payload + 4));
    if (!track || track.timescale === 0) continue;
    let at = tfhd.payload + 8;
    if (flags & 0x1) at += 8; // base-data-offset
    if (flags & 0x2) at += 4; // sample-description-index
    let defaultDuration = track.defaultSampleDuration;
    if (flags & 0x8) {
      if (at + 4 > tfhd.end) throw new NotMp4();
      defaultDuration = u32(buf, at);
    }
    let time =
      tfdt && tfdt.end - tfdt.payload >= 8
        ? buf[tfdt.payload] === 1 && tfdt.end - tfdt.payload >= 12
          ? u64(buf, tfdt.payload + 4)
          : u32(buf, tfdt.payload + 4)
        : (ends.get(track.id) ?? 0) * track.timescale;
    for (const trun of children(buf, traf.payload, traf.end)) {
      if (trun.type !== "trun") continue;
      if (trun.end - trun.payload < 8) throw new NotMp4();
      const rflags = u32(buf, trun.payload) & 0xffffff;
      const count = u32(buf, trun.payload + 4);
      let p = trun.payload + 8;
      if (rflags & 0x1) p += 4; // data-offset
      if (rflags & 0x4) p += 4; // first-sample-flags
      const perSample = [0x100, 0x200, 0x400, 0x800].filter((f) => rflags & f).length * 4;
      if (!(rflags & 0x100)) {
        time += count * defaultDuration;
        continue;
      }
      if (p + count * perSample > trun.end) throw new NotMp4();
      for (let i = 0; i < count; i++, p += perSample) {
        time += u32(buf, p);
        if (i % SAMPLES_PER_PACE === SAMPLES_PER_PACE - 1) await pace();
      }
    }
    ends.set(track.id, Math.max(ends.get(track.id) ?? 0, time / track.timescale));
  }
}

const HEADER_ONLY = new Set([
  "ftyp",
  "styp",
  "free",
  "skip",
  "wide",
  "uuid",
  "pdin",
  "sidx",
  "ssix",
  "prft",
  "emsg",
  "meta",
  "mfra",
  "bloc",
]);

type Pace = () => Promise<void> | undefined;

interface TopBox {
  type: string;
  start: number;
  header: number;
  size: number;
}

/**
 * The file's top-level boxes, by their headers (16 bytes read each), with a turn of the event loop after
 * every slice of work; more than FORMAT_LIMITS.isoBmffTopLevelBoxes is not an MP4 we read.
 */
async function* topLevel(src: ByteSource, pace: Pace): AsyncGenerator<TopBox> {
  let at = 0;
  for (let count = 1; src.size - at >= 8; count++) {
    if (count > FORMAT_LIMITS.isoBmffTopLevelBoxes) throw new NotMp4();
    const head = await src.read(at, Math.min(16, src.size - at));
    if (!printable(head, 4)) throw new NotMp4();
    let size = u32(head, 0);
    const type = fourcc(head, 4);
    let header = 8;
    if (size === 1) {
      if (head.byteLength < 16) throw new NotMp4();
      size = u64(head, 8);
      header = 16;
    } else if (size === 0) {
      size = src.size - at;
    }
    if (size < header || at + size > src.size) throw new NotMp4();
    yield { type, start: at, header, size };
    at += size;
    await pace();
  }
}

/**
 * The verdict on `src` (see the file's header); `maxSeconds` is the duration cap. Nothing is kept per box:
 * one pass over the top level finds the movie header and counts the fragments, a second one (only for a
 * fragmented file whose headers leave the length open) reads the fragments one at a time.
 */
export async function checkMp4(
  src: ByteSource,
  opts: { maxSeconds: number; maxBoxBytes?: number },
): Promise<Mp4Verdict> {
  const maxBox = opts.maxBoxBytes ?? MAX_HEADER_BOX_BYTES;
  const paceNow = pacer();
  const pace: Pace = () => paceNow();
  try {
    let sawFtyp = false;
    let moov: ReturnType<typeof readMoov> | null = null;
    let media = false;
    let fragments = 0;
    for await (const { type, start, header, size } of topLevel(src, pace)) {
      if (type === "ftyp") sawFtyp = true;
      else if (!sawFtyp && !HEADER_ONLY.has(type)) throw new NotMp4(); // media or moov before the file type
      if (type === "moov") {
        if (moov || size - header > maxBox) throw new NotMp4();
        moov = readMoov(await src.read(start + header, size - header));
      } else if (type === "mdat") {
        media = true;
      } else if (type === "moof") {
        if (size - header > maxBox || ++fragments > FORMAT_LIMITS.isoBmffFragments) throw new NotMp4();
      }
    }
    if (!sawFtyp || !moov) return { ok: false, reason: "notMp4" };
    if (![...moov.tracks.values()].some((t) => t.video)) return { ok: false, reason: "noVideo" };
    if (!media && fragments === 0) return { ok: false, reason: "notMp4" };
    let seconds = moov.movieSeconds;
    for (const t of moov.tracks.values()) seconds = Math.max(seconds, t.seconds);
    // A fragmented file says its length in its fragments (an empty moov, no mehd): walked only while the
    // headers leave it unknown or short of the cap, so a long fragmented file is read a moof at a time.
    if (fragments > 0 && seconds <= opts.maxSeconds) {
      const ends = new Map<number, number>();
      for await (const { type, start, header, size } of topLevel(src, pace)) {
        if (type !== "moof") continue;
        await fragmentEnds(await src.read(start + header, size - header), moov.tracks, ends, pace);
        for (const end of ends.values()) seconds = Math.max(seconds, end);
        if (seconds > opts.maxSeconds) break;
      }
    }
    if (!(seconds > 0) || !Number.isFinite(seconds)) return { ok: false, reason: "notMp4" };
    if (seconds > opts.maxSeconds) return { ok: false, reason: "tooLong" };
    return { ok: true, seconds };
  } catch (err) {
    if (err instanceof NotMp4) return { ok: false, reason: "notMp4" };
    throw err;
  }
}
