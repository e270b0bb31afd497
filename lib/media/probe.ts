// One Probe shape for both engines. Both normally read ffprobe's JSON (native ffprobe, or the ffprobe entry
// point the wasm core also exports), so the numbers agree exactly; the parser of `ffmpeg -i` output below is the
// fallback for a wasm core without ffprobe and is held to the same shape (durations there have 10 ms resolution).
import { MediaError } from "./errors.ts";

export type StreamType = "video" | "audio" | "subtitle" | "data";

export interface ProbeStream {
  index: number;
  type: StreamType;
  /** ffmpeg codec name: "h264", "aac", "mp3", "mov_text", ... ("unknown" when ffmpeg has no name for it). */
  codec: string;
  width?: number;
  height?: number;
  /** Average frame rate rounded to 0.01 (falls back to the base rate when the average is unknown). */
  fps?: number;
  sampleRate?: number;
  channels?: number;
  /** Display rotation in degrees (0, 90, 180, 270; clockwise) from the display matrix, when not 0. */
  rotation?: number;
  /** A still picture attached to the file (cover art), not a real video track. */
  attachedPicture?: boolean;
}

export interface Probe {
  durationSeconds: number;
  /** ffmpeg demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "mp3", "matroska,webm". */
  formatName: string;
  sizeBytes: number;
  streams: ProbeStream[];
}

const round2 = (n: number) => Math.round(n * 100) / 100;

function rate(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const [n, d] = value.split("/").map(Number);
  if (!n || !d || !Number.isFinite(n / d)) return undefined;
  return round2(n / d);
}

function streamType(t: unknown): StreamType {
  return t === "video" || t === "audio" || t === "subtitle" ? t : "data";
}

function normalizeRotation(deg: number): number {
  // ffprobe reports the display matrix rotation counter-clockwise (e.g. -90 for a portrait phone video).
  const cw = ((Math.round(-deg) % 360) + 360) % 360;
  return cw;
}

/** Turn `ffprobe -print_format json -show_format -show_streams` output into a Probe. */
export function parseFfprobeJson(json: string, sizeBytes: number): Probe {
  let data: any;
  try {
    data = JSON.parse(json);
  } catch (e) {
    throw new MediaError("failed", "ffprobe printed no valid JSON", { cause: e });
  }
  if (!data || typeof data !== "object" || !data.format)
    throw new MediaError("invalid_input", "ffprobe found no format");
  const streams: ProbeStream[] = (Array.isArray(data.streams) ? data.streams : []).map((s: any): ProbeStream => {
    const out: ProbeStream = {
      index: Number(s.index),
      type: streamType(s.codec_type),
      codec: String(s.codec_name ?? "unknown"),
    };
    if (out.type === "video") {
      if (s.width) out.width = Number(s.width);
      if (s.height) out.height = Number(s.height);
      const fps = rate(s.avg_frame_rate) ?? rate(s.r_frame_rate);
      if (fps) out.fps = fps;
      const sideRotation = (Array.isArray(s.side_data_list) ? s.side_data_list : []).find(
        (d: any) => typeof d?.rotation === "number",
      )?.rotation;
      const tagRotation = s.tags?.rotate !== undefined ? -Number(s.tags.rotate) : undefined;
      const rot = normalizeRotation(Number(sideRotation ?? tagRotation ?? 0));
      if (rot) out.rotation = rot;
      if (s.disposition?.attached_pic === 1) out.attachedPicture = true;
    } else if (out.type === "audio") {
      if (s.sample_rate) out.sampleRate = Number(s.sample_rate);
      if (s.channels) out.channels = Number(s.channels);
    }
    return out;
  });
  let duration = Number(data.format.duration);
  if (!Number.isFinite(duration)) {
    duration = Math.max(0, ...(data.streams ?? []).map((s: any) => Number(s.duration)).filter(Number.isFinite));
  }
  return { durationSeconds: duration, formatName: String(data.format.format_name ?? "unknown"), sizeBytes, streams };
}

// Literal patterns so the ReDoS test (test/security/redos.test.ts) sees them; a number starts where no digit
// precedes (the same first match; without it a long digit run was retried from each of its digits).
const RATE = { fps: /(?<!\d)(\d+(?:\.\d+)?)(k?) fps\b/, tbr: /(?<!\d)(\d+(?:\.\d+)?)(k?) tbr\b/ } as const;

function parseFps(text: string, unit: keyof typeof RATE): number | undefined {
  const m = RATE[unit].exec(text);
  if (!m) return undefined;
  return round2(Number(m[1]) * (m[2] ? 1000 : 1));
}

/**
 * Parse the input description `ffmpeg -i <file>` prints (to stderr) into a Probe. Only input #0 is read.
 * Resolution limits: duration is printed to 10 ms, fps to 0.01.
 */
export function parseFfmpegInfo(lines: readonly string[], sizeBytes: number): Probe {
  let formatName: string | undefined;
  let duration = 0;
  const streams: ProbeStream[] = [];
  let inInput0 = false;
  let last: ProbeStream | undefined;
  for (const raw of lines) {
    const line = raw.replace(/\r$/, "");
    const input = /^Input #(\d+), ([^']+?), from '.*':$/.exec(line);
    if (input) {
      inInput0 = input[1] === "0";
      if (inInput0) formatName = input[2];
      continue;
    }
    if (/^(Output|Stream mapping)/.test(line)) inInput0 = false;
    if (!inInput0) continue;
    const d = /^\s+Duration: (N\/A|(\d+):(\d+):(\d+(?:\.\d+)?))/.exec(line);
    if (d) {
      if (d[2] !== undefined) duration = Number(d[2]) * 3600 + Number(d[3]) * 60 + Number(d[4]);
      continue;
    }
    const s =
      /^\s+Stream #0:(\d+)(?:\[[^\]]*\])?(?:\([^)]*\))?: (Video|Audio|Subtitle|Data|Attachment): ([^\s,]+)([\s\S]*)$/.exec(
        line,
      );
    if (s) {
      const type = streamType(s[2]!.toLowerCase());
      const rest = s[4] ?? "";
      last = { index: Number(s[1]), type, codec: s[3] === "none" ? "unknown" : s[3]! };
      if (type === "video") {
        const size = /, (\d{1,5})x(\d{1,5})(?=[\s,]|$)/.exec(rest);
        if (size) {
          last.width = Number(size[1]);
          last.height = Number(size[2]);
        }
        const fps = parseFps(rest, "fps") ?? parseFps(rest, "tbr");
        if (fps) last.fps = fps;
        if (/\(attached pic\)/.test(rest)) last.attachedPicture = true;
      } else if (type === "audio") {
        const hz = /, (\d+) Hz/.exec(rest);
        if (hz) last.sampleRate = Number(hz[1]);
        const ch = /Hz, ([^,]+)/.exec(rest)?.[1]?.trim();
        const channels = ch ? channelCount(ch) : undefined;
        if (channels) last.channels = channels;
      }
      streams.push(last);
      continue;
    }
    const rot = /^\s+displaymatrix: rotation of (-?\d+(?:\.\d+)?) degrees/.exec(line);
    if (rot && last?.type === "video") {
      const r = normalizeRotation(Number(rot[1]));
      if (r) last.rotation = r;
    }
  }
  if (formatName === undefined) {
    throw new MediaError("invalid_input", "ffmpeg printed no input description", { log: lines.slice(-15) });
  }
  return { durationSeconds: duration, formatName, sizeBytes, streams };
}

const LAYOUT_CHANNELS: Record<string, number> = {
  mono: 1,
  stereo: 2,
  "2.1": 3,
  "3.0": 3,
  "3.0(back)": 3,
  "3.1": 4,
  "4.0": 4,
  quad: 4,
  "quad(side)": 4,
  "4.1": 5,
  "5.0": 5,
  "5.0(side)": 5,
  "5.1": 6,
  "5.1(side)": 6,
  "6.0": 6,
  "6.1": 7,
  "7.0": 7,
  "7.1": 8,
  "7.1(wide)": 8,
  downmix: 2,
  octagonal: 8,
  hexagonal: 6,
};

function channelCount(layout: string): number | undefined {
  if (LAYOUT_CHANNELS[layout]) return LAYOUT_CHANNELS[layout];
  const m = /^(\d+) channels/.exec(layout);
  return m ? Number(m[1]) : undefined;
}

/** Convenience views most callers want. */
export const firstVideo = (p: Probe) => p.streams.find((s) => s.type === "video" && !s.attachedPicture);
export const firstAudio = (p: Probe) => p.streams.find((s) => s.type === "audio");

/** Width and height as displayed (rotation applied), for aspect-ratio decisions. */
export function displaySize(p: Probe): { width: number; height: number } | undefined {
  const v = firstVideo(p);
  if (!v?.width || !v.height) return undefined;
  return v.rotation === 90 || v.rotation === 270
    ? { width: v.height, height: v.width }
    : { width: v.width, height: v.height };
}
