// Concatenating clips for POST /merge-videos, for real, with the media engine. Clips that share their codec
// parameters are joined by stream copy (fast, lossless); anything else is re-encoded once to the first clip's
// size and frame rate. "Share" is decided from the files themselves: the probe's codecs, sizes, rates and
// audio layout, and the H.264 decoder configuration (avcC) byte for byte, because an MP4 has room for one
// decoder configuration per track and a copy across two different ones would not play past the first clip.
import { h264Args, type MediaEngine, mp4Boxes, type Probe } from "mediagate/plugin";

export interface MergeResult {
  bytes: Uint8Array;
  reencoded: boolean;
  durationSeconds: number;
}

const OUTPUT_ARGS = ["-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact", "-movflags", "+faststart"];

/**
 * The decoder configuration of the first video track: the sample entry's codec (avc1, hvc1, ...) and its
 * configuration box (avcC, hvcC) as bytes, or null. Other parts of the description (bit-rate boxes) differ
 * between clips that copy together fine, so they are left out.
 */
export function videoDecoderConfig(bytes: Uint8Array): Uint8Array | null {
  const path = ["moov", "trak", "mdia", "minf", "stbl", "stsd"];
  const find = (from: number, to: number, depth: number): Uint8Array | null => {
    for (const box of mp4Boxes(bytes, from, to)) {
      if (box.type !== path[depth]) continue;
      if (depth === path.length - 1) {
        // stsd: version/flags (4) and entry count (4), then the sample entries.
        const entry = mp4Boxes(bytes, box.body + 8, box.end).next().value;
        if (!entry) return null;
        // A visual sample entry has 78 bytes of fixed fields before its child boxes.
        for (const child of mp4Boxes(bytes, entry.body + 78, entry.end)) {
          if (/^(avcC|hvcC|av1C|vpcC)$/.test(child.type))
            return new Uint8Array([
              ...bytes.subarray(entry.start + 4, entry.start + 8),
              ...bytes.subarray(child.start, child.end),
            ]);
        }
        return null;
      }
      if (box.type === "trak" && !isVideoTrak(bytes, box.body, box.end)) continue;
      const found = find(box.body, box.end, depth + 1);
      if (found) return found;
    }
    return null;
  };
  return find(0, bytes.length, 0);
}

function isVideoTrak(bytes: Uint8Array, from: number, to: number): boolean {
  for (const mdia of mp4Boxes(bytes, from, to)) {
    if (mdia.type !== "mdia") continue;
    for (const hdlr of mp4Boxes(bytes, mdia.body, mdia.end)) {
      if (hdlr.type === "hdlr" && hdlr.body + 12 <= hdlr.end)
        return String.fromCharCode(...bytes.subarray(hdlr.body + 8, hdlr.body + 12)) === "vide";
    }
  }
  return false;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Whether the clips can be joined by stream copy. */
export function copyCompatible(clips: readonly Uint8Array[], probes: readonly Probe[]): boolean {
  const shape = (p: Probe) => {
    const v = p.streams.filter((s) => s.type === "video" && !s.attachedPicture);
    const a = p.streams.filter((s) => s.type === "audio");
    if (v.length !== 1 || a.length > 1) return null;
    return JSON.stringify([
      v[0]!.codec,
      v[0]!.width,
      v[0]!.height,
      v[0]!.fps,
      v[0]!.rotation ?? 0,
      a[0]?.codec,
      a[0]?.sampleRate,
      a[0]?.channels,
    ]);
  };
  const first = shape(probes[0]!);
  if (first === null || !probes.every((p) => shape(p) === first)) return false;
  if (!["h264", "hevc"].includes(probes[0]!.streams.find((s) => s.type === "video")!.codec)) return false;
  const descriptions = clips.map(videoDecoderConfig);
  return descriptions.every((d) => d !== null && sameBytes(d, descriptions[0]!));
}

function copyArgs(names: string[]): { args: string[]; list: Uint8Array } {
  const list = new TextEncoder().encode(`${names.map((n) => `file '${n}'`).join("\n")}\n`);
  // The engine opens the list with `-safe 1` and whitelists, after checking that it names only these clips.
  return {
    args: ["-f", "concat", "-i", "list.txt", "-map", "0:v", "-map", "0:a?", "-c", "copy", ...OUTPUT_ARGS, "merged.mp4"],
    list,
  };
}

function reencodeArgs(names: string[], probes: readonly Probe[]): string[] {
  const firstVideo = probes[0]!.streams.find((s) => s.type === "video" && !s.attachedPicture);
  if (!firstVideo?.width || !firstVideo.height) throw new Error("the first clip has no picture");
  // Even sizes: H.264 4:2:0 needs them.
  const W = Math.round(firstVideo.width / 2) * 2;
  const H = Math.round(firstVideo.height / 2) * 2;
  const fps = firstVideo.fps && firstVideo.fps <= 120 ? firstVideo.fps : 25;
  const withAudio = probes.some((p) => p.streams.some((s) => s.type === "audio"));
  const args: string[] = [];
  for (const n of names) args.push("-i", n);
  const filters: string[] = [];
  let joined = "";
  names.forEach((_, i) => {
    const p = probes[i]!;
    if (!p.streams.some((s) => s.type === "video" && !s.attachedPicture))
      throw new Error(`clip ${i + 1} has no picture`);
    filters.push(
      `[${i}:v:0]scale=${W}:${H}:force_original_aspect_ratio=decrease,pad=${W}:${H}:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=${fps},format=yuv420p[v${i}]`,
    );
    joined += `[v${i}]`;
    if (withAudio) {
      if (p.streams.some((s) => s.type === "audio"))
        filters.push(`[${i}:a:0]aresample=48000,aformat=sample_fmts=fltp:channel_layouts=stereo[a${i}]`);
      // Silence as long as the clip, so pictures and sound stay together after the join.
      else filters.push(`anullsrc=r=48000:cl=stereo,atrim=duration=${p.durationSeconds.toFixed(3)}[a${i}]`);
      joined += `[a${i}]`;
    }
  });
  filters.push(`${joined}concat=n=${names.length}:v=1:a=${withAudio ? 1 : 0}${withAudio ? "[v][a]" : "[v]"}`);
  args.push("-filter_complex", filters.join(";"), "-map", "[v]");
  if (withAudio) args.push("-map", "[a]", "-c:a", "aac", "-b:a", "160k", "-ac", "2", "-ar", "48000");
  args.push(...h264Args({ preset: "veryfast", crf: 20 }), ...OUTPUT_ARGS, "merged.mp4");
  return args;
}

/** Joins 2+ MP4/MOV clips in order. Throws on anything the engine cannot read or write. */
export async function concatClips(
  engine: MediaEngine,
  clips: Uint8Array[],
  io: { signal?: AbortSignal; onProgress?(f: number): void; timeoutMs?: number } = {},
): Promise<MergeResult> {
  if (clips.length < 2) throw new Error("need at least 2 clips");
  const probes: Probe[] = [];
  for (const c of clips) probes.push(await engine.probe(c, "clip.mp4", { signal: io.signal }));
  const expected = probes.reduce((s, p) => s + p.durationSeconds, 0);
  const names = clips.map((_, i) => `clip${i + 1}.mp4`);
  const inputs = Object.fromEntries(names.map((n, i) => [n, clips[i]!]));
  const run = { ...io, outputs: ["merged.mp4"], durationSeconds: expected };

  if (copyCompatible(clips, probes)) {
    const { args, list } = copyArgs(names);
    const out = (await engine.run(args, { ...run, inputs: { ...inputs, "list.txt": list } }))["merged.mp4"]!;
    const probe = await engine.probe(out, "merged.mp4", { signal: io.signal });
    // A copy whose timestamps went astray is re-encoded rather than handed out.
    if (Math.abs(probe.durationSeconds - expected) <= 0.5)
      return { bytes: out, reencoded: false, durationSeconds: probe.durationSeconds };
  }
  const out = (await engine.run(reencodeArgs(names, probes), { ...run, inputs }))["merged.mp4"]!;
  const probe = await engine.probe(out, "merged.mp4", { signal: io.signal });
  return { bytes: out, reencoded: true, durationSeconds: probe.durationSeconds };
}
