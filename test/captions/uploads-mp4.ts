// MP4 files for the upload tests, built box by box (ISO/IEC 14496-12) so a test can make any size (a 1 GB
// upload's header, then filler generated part by part) or any defect, and real ones from the media engine.
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";

export function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const size = 8 + payload.reduce((n, p) => n + p.byteLength, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  out.set(new TextEncoder().encode(type), 4);
  let at = 8;
  for (const p of payload) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

const words = (...values: number[]) => {
  const out = new Uint8Array(values.length * 4);
  const v = new DataView(out.buffer);
  values.forEach((x, i) => v.setUint32(i * 4, x));
  return out;
};
const ascii = (s: string) => new TextEncoder().encode(s);

export const ftyp = () => box("ftyp", ascii("isom"), words(0x200), ascii("isomiso2mp41"));

/** mvhd/mdhd version 0: timescale and duration. */
const mvhd = (timescale: number, duration: number) =>
  box("mvhd", words(0, 0, 0, timescale, duration, 0x10000), new Uint8Array(2 + 10 + 36 + 24), words(2));
const mdhd = (timescale: number, duration: number) => box("mdhd", words(0, 0, 0, timescale, duration, 0x55c40000));
const tkhd = (id: number) =>
  box("tkhd", words(3, 0, 0, id, 0, 0), new Uint8Array(8 + 8 + 36), words(64 << 16, 48 << 16));
const hdlr = (type: string) => box("hdlr", words(0, 0), ascii(type), new Uint8Array(12), ascii("Handler\0"));

export interface MoovOptions {
  seconds: number;
  /** Track handler types; default one video track. */
  tracks?: string[];
  /** Durations left 0 in the headers (a fragmented file's empty moov). */
  emptyDurations?: boolean;
}

export function moov(o: MoovOptions): Uint8Array {
  const ts = 1000;
  const d = o.emptyDurations ? 0 : Math.round(o.seconds * ts);
  const traks = (o.tracks ?? ["vide"]).map((h, i) => box("trak", tkhd(i + 1), box("mdia", mdhd(ts, d), hdlr(h))));
  return box("moov", mvhd(ts, d), ...traks);
}

/** An mdat header announcing `payload` bytes (the payload itself is the caller's). */
export function mdatHeader(payload: number): Uint8Array {
  if (payload + 8 <= 0xffffffff) {
    const h = new Uint8Array(8);
    new DataView(h.buffer).setUint32(0, payload + 8);
    h.set(ascii("mdat"), 4);
    return h;
  }
  const h = new Uint8Array(16);
  const v = new DataView(h.buffer);
  v.setUint32(0, 1);
  h.set(ascii("mdat"), 4);
  v.setBigUint64(8, BigInt(payload + 16));
  return h;
}

/** The bytes before an mdat's payload of a file of exactly `total` bytes: ftyp, moov, the mdat header. */
export function headerFor(total: number, o: MoovOptions): Uint8Array {
  const head = [ftyp(), moov(o)];
  const used = head.reduce((n, b) => n + b.byteLength, 0);
  const large = total - used - 8 > 0xffffffff - 8;
  const mdat = mdatHeader(total - used - (large ? 16 : 8));
  const out = new Uint8Array(used + mdat.byteLength);
  let at = 0;
  for (const b of [...head, mdat]) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out;
}

/** A whole synthetic MP4 of `total` bytes (filler payload). */
export function syntheticMp4(total: number, o: MoovOptions): Uint8Array {
  const out = new Uint8Array(total);
  out.set(headerFor(total, o));
  return out;
}

/** Byte `i` (0-based) of a synthetic file whose header is `header`: the header, then a cheap pattern. */
export function fillPart(header: Uint8Array, start: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (start + i) & 0xff;
  if (start < header.byteLength) out.set(header.subarray(start, Math.min(header.byteLength, start + size)), 0);
  return out;
}

let engine: MediaEngine | undefined;
/** A real small MP4 (H.264 test pattern, optional AAC tone) from the media engine; `movflags` as ffmpeg takes them. */
export async function realMp4(
  seconds: number,
  opts: { audio?: boolean; movflags?: string; videoOnly?: boolean; audioOnly?: boolean } = {},
): Promise<Uint8Array> {
  engine ??= createMediaEngine();
  const args = ["-f", "lavfi", "-i", `testsrc=size=64x48:rate=10:duration=${seconds}`];
  if (opts.audio || opts.audioOnly) args.push("-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`);
  if (opts.audioOnly) args.push("-map", "1:a");
  args.push("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac");
  if (opts.movflags) args.push("-movflags", opts.movflags);
  args.push("out.mp4");
  const out = await engine.run(["-y", ...args], { inputs: {}, outputs: ["out.mp4"] });
  return out["out.mp4"]!;
}
