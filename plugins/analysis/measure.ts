// What the frames stage measures on the downloaded ad, in one ffmpeg run (the file is decoded once) and
// libvips: the hard cuts (ffmpeg's scene score), the first frame and the frames after the first cuts (as
// small PNGs), and the loudness (EBU R128, `ebur128`). libvips reads each frame's brightness and dominant
// colours. The same arguments run on native ffmpeg and ffmpeg.wasm.
//
// The outputs are files, as the engine wants: the cuts as a `framecrc` listing (one line per selected frame,
// its timestamp in the stream's time base), the frames as one `image2pipe` stream of PNGs, the audio as a
// `framecrc` listing nobody reads (ebur128 is a pass-through filter whose summary goes to the log).
import {
  firstAudio,
  firstVideo,
  type MeasuredColour,
  type MeasuredFrame,
  type MediaEngine,
  MediaError,
  pngChunks,
  withVips,
} from "mediagate/plugin";
import { MEASURE } from "./limits.ts";

export interface AdMeasurements {
  duration: number;
  width: number;
  height: number;
  hasAudio: boolean;
  cutTimes: number[];
  frames: MeasuredFrame[];
  loudness: { integrated_lufs: number; true_peak_dbtp: number | null; range_lu: number | null } | null;
}

/** Plain colour names and the sRGB value each stands for; a measured colour is named by the nearest. */
const COLOUR_NAMES: ReadonlyArray<[string, readonly number[]]> = Object.entries({
  black: [20, 20, 24],
  white: [245, 245, 245],
  grey: [128, 128, 128],
  red: [205, 40, 45],
  orange: [240, 136, 62],
  yellow: [242, 204, 96],
  green: [30, 130, 60],
  teal: [30, 150, 150],
  blue: [35, 110, 230],
  purple: [130, 80, 220],
  pink: [230, 110, 170],
  brown: [130, 85, 45],
} satisfies Record<string, [number, number, number]>);

/** Perceptual-ish RGB distance ("redmean"): good enough to name a colour. */
function distance(a: readonly number[], b: readonly number[]): number {
  const r = (a[0]! + b[0]!) / 2;
  const dr = a[0]! - b[0]!;
  const dg = a[1]! - b[1]!;
  const db = a[2]! - b[2]!;
  return Math.sqrt((2 + r / 256) * dr * dr + 4 * dg * dg + (2 + (255 - r) / 256) * db * db);
}

export function colourName(rgb: readonly number[]): string {
  let best = COLOUR_NAMES[0]!;
  for (const entry of COLOUR_NAMES) if (distance(rgb, entry[1]) < distance(rgb, best[1])) best = entry;
  return best[0];
}

const hex = (rgb: readonly number[]) => rgb.map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The colours covering at least MEASURE.minColourShare of `pixels` (RGB triplets): pixels binned by their
 * top 3 bits per channel, each bin's colour the mean of its pixels, bins of one plain name merged.
 */
export function dominantColours(pixels: Uint8Array): MeasuredColour[] {
  const bins = new Map<number, { n: number; r: number; g: number; b: number }>();
  const count = Math.floor(pixels.length / 3);
  for (let i = 0; i < count * 3; i += 3) {
    const key = ((pixels[i]! >> 5) << 6) | ((pixels[i + 1]! >> 5) << 3) | (pixels[i + 2]! >> 5);
    const bin = bins.get(key) ?? { n: 0, r: 0, g: 0, b: 0 };
    bin.n++;
    bin.r += pixels[i]!;
    bin.g += pixels[i + 1]!;
    bin.b += pixels[i + 2]!;
    bins.set(key, bin);
  }
  const byName = new Map<string, { n: number; r: number; g: number; b: number }>();
  for (const bin of bins.values()) {
    const name = colourName([bin.r / bin.n, bin.g / bin.n, bin.b / bin.n]);
    const into = byName.get(name) ?? { n: 0, r: 0, g: 0, b: 0 };
    into.n += bin.n;
    into.r += bin.r;
    into.g += bin.g;
    into.b += bin.b;
    byName.set(name, into);
  }
  return [...byName.entries()]
    .map(([name, c]) => ({ hex: hex([c.r / c.n, c.g / c.n, c.b / c.n]), name, share: round(c.n / Math.max(1, count)) }))
    .filter((c) => c.share >= MEASURE.minColourShare)
    .sort((a, b) => b.share - a.share)
    .slice(0, MEASURE.maxColoursPerFrame);
}

/** Brightness (mean L* of CIELAB, 0-100) and dominant colours of one frame, by libvips. */
async function measureFrame(png: Uint8Array, at: number): Promise<MeasuredFrame> {
  return withVips("invalid_input", (vips, track) => {
    const image = track(vips.Image.newFromBuffer(png));
    const rgb = track(image.hasAlpha() ? image.flatten() : image);
    const lab = track(rgb.colourspace("lab"));
    const lightness = track(lab.extractBand(0));
    const brightness = round(lightness.avg(), 1);
    const small = track(rgb.thumbnailImage(MEASURE.colourGrid, { height: MEASURE.colourGrid, size: "force" }));
    const srgb = track(small.colourspace("srgb"));
    const bands = track(srgb.bands > 3 ? srgb.extractBand(0, { n: 3 }) : srgb);
    const pixels = new Uint8Array(bands.cast("uchar").writeToMemory());
    return { at: round(at), brightness, colours: dominantColours(pixels) };
  });
}

/** The PNGs of an image2pipe stream, in order. */
export function splitPngStream(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    let end = -1;
    for (const chunk of pngChunks(bytes.subarray(pos))) if (chunk.type === "IEND") end = chunk.end;
    if (end <= 0) break;
    out.push(bytes.subarray(pos, pos + end));
    pos += end;
  }
  return out;
}

/** Timestamps (seconds) of a framecrc listing's frames of stream 0. */
export function framecrcTimes(text: string): number[] {
  const tb = /^#tb 0: (\d+)\/(\d+)/m.exec(text);
  const [num, den] = tb ? [Number(tb[1]), Number(tb[2])] : [1, 1];
  const times: number[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const fields = line.split(",").map((f) => f.trim());
    if (fields[0] !== "0" || fields.length < 3) continue;
    const pts = Number(fields[2]);
    if (Number.isFinite(pts)) times.push((pts * num) / den);
  }
  return times;
}

/** The summary ebur128 logs at the end: integrated loudness, loudness range, true peak. */
export function parseEbur128(lines: readonly string[]): AdMeasurements["loudness"] {
  const at = lines.findLastIndex((l) => /Summary:/.test(l));
  if (at < 0) return null;
  const rest = lines.slice(at);
  const value = (re: RegExp) => {
    for (const l of rest) {
      const m = re.exec(l);
      if (m) return Number(m[1]);
    }
    return null;
  };
  const integrated = value(/^\s*I:\s*(-?[\d.]+|-inf)\s*LUFS/);
  if (integrated === null || !Number.isFinite(integrated)) return null;
  const peak = value(/^\s*Peak:\s*(-?[\d.]+)\s*dBFS/);
  const range = value(/^\s*LRA:\s*(-?[\d.]+)\s*LU/);
  return {
    integrated_lufs: round(integrated, 1),
    true_peak_dbtp: peak === null ? null : round(peak, 1),
    range_lu: range === null ? null : round(range, 1),
  };
}

/** Measures the ad. Throws MediaError when the file has no readable video. */
export async function measureAd(engine: MediaEngine, ad: Uint8Array, signal: AbortSignal): Promise<AdMeasurements> {
  const probe = await engine.probe(ad, "ad.mp4", { signal, timeoutMs: 60_000 });
  const video = firstVideo(probe);
  if (!video?.width || !video.height || !(probe.durationSeconds > 0))
    throw new MediaError("invalid_input", "no video stream to measure");
  const hasAudio = firstAudio(probe) !== undefined;
  const duration = probe.durationSeconds;
  const graph = [
    // The first frame and each frame whose scene score says the picture changed; the cut list keeps them
    // all, the frames output only the first MEASURE.maxFrames, made small.
    `[0:v]select='eq(n\\,0)+gt(scene\\,${MEASURE.sceneThreshold})',split[cuts][pick]`,
    `[pick]select='lt(n\\,${MEASURE.maxFrames})',scale='min(${MEASURE.frameWidth}\\,iw)':-2[frames]`,
    ...(hasAudio ? ["[0:a:0]ebur128=peak=true[loud]"] : []),
  ];
  const args = [
    "-i",
    "ad.mp4",
    "-filter_complex",
    graph.join(";"),
    "-map",
    "[cuts]",
    "-vsync",
    "vfr",
    "-f",
    "framecrc",
    "cuts.txt",
    "-map",
    "[frames]",
    "-vsync",
    "vfr",
    "-c:v",
    "png",
    "-f",
    "image2pipe",
    "frames.png",
    ...(hasAudio ? ["-map", "[loud]", "-f", "framecrc", "loud.txt"] : []),
  ];
  const log: string[] = [];
  const out = await engine.run(args, {
    inputs: { "ad.mp4": ad },
    outputs: ["cuts.txt", "frames.png", ...(hasAudio ? ["loud.txt"] : [])],
    durationSeconds: duration,
    signal,
    timeoutMs: MEASURE.timeoutBaseMs + MEASURE.timeoutPerSecondMs * duration,
    onLog: (line) => {
      if (log.length < 10_000) log.push(line);
    },
  });
  const selected = framecrcTimes(new TextDecoder().decode(out["cuts.txt"]));
  const start = selected[0] ?? 0;
  const cutTimes = selected.slice(1).map((t) => round(t - start));
  const pngs = splitPngStream(out["frames.png"]!);
  const frames: MeasuredFrame[] = [];
  for (const [i, png] of pngs.entries()) frames.push(await measureFrame(png, i === 0 ? 0 : cutTimes[i - 1]!));
  return {
    duration: round(duration),
    width: video.width,
    height: video.height,
    hasAudio,
    cutTimes,
    frames,
    loudness: hasAudio ? parseEbur128(log) : null,
  };
}
