// The Script Runner's part of the `captionable.videos` collection (contracts/records.ts): captions for a run.
//
// What a partner holds (spec part 3, "Script Runner run"): the run's `job_id`; its scenes carry no id of their
// own, only a `video_url`. So POST /captions takes the run's job id, and the video it captions is the run's
// film: its complete scenes' clips in scene order, joined into one MP4 (a run of one scene is that clip as it
// is). Choices, written down here:
// - The run is complete for captions once it ended `complete` or `partial` (both success) with at least one
//   clip; a run still processing, or one that ended `error`, is found but not complete (the 409).
// - The join re-encodes once to the first clip's size and rate (clips of one run share them; a copy would
//   need each clip's decoder configuration to match), keeping sound only when every clip has it. It is kept
//   under the private prefix (never served) by the run's id, so a re-burn reads it instead of joining again;
//   a finished run's scenes never change.
// - Scene clips are made without sound (spec part 3: the video cost is "no sound"), so there is no spoken
//   record: the caption job transcribes what the file holds, which for silent clips is its `no_speech`.
import {
  AAC_STEREO_ARGS,
  captionableRecords,
  displaySize,
  FASTSTART_ARGS,
  firstAudio,
  firstVideo,
  h264Args,
  type MediaEngine,
  PRIVATE_KEY_PREFIX,
} from "mediagate/plugin";
import { FRAME } from "./limits.ts";
import { type RunnerModel, VIDEO_MODELS } from "./prices.ts";
import { completeClipKeys, runs } from "./records.ts";

const JOIN_TIMEOUT_MS = 600_000;

export const captionableRuns = captionableRecords("script-runner", runs, async (run, { blobs, db, host }) => {
  const ended = run.state === "complete" || run.state === "partial";
  const keys = ended ? await completeClipKeys(db, run.job_id) : [];
  const complete = keys.length > 0;
  return {
    job_id: run.job_id,
    kind: "script-runner",
    state: run.state,
    complete,
    duration: keys.length * (VIDEO_MODELS[run.model as RunnerModel]?.seconds ?? 0),
    width: complete ? FRAME.width : 0,
    height: complete ? FRAME.height : 0,
    read: async () => {
      if (!complete) return null;
      if (keys.length === 1) return (await blobs.get(keys[0]!)) ?? null;
      const joinedKey = `${PRIVATE_KEY_PREFIX}captionable/${run.job_id}.mp4`;
      const kept = await blobs.get(joinedKey);
      if (kept) return kept;
      const clips: Uint8Array[] = [];
      for (const key of keys) {
        const clip = await blobs.get(key);
        if (!clip) return null;
        clips.push(clip);
      }
      const joined = await joinClips(host.capability("media"), clips);
      await blobs.put(joinedKey, joined, { contentType: "video/mp4" });
      return joined;
    },
    spoken: null,
  };
});

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/** The clips end to end, re-encoded once to the first clip's size and frame rate. */
export async function joinClips(engine: MediaEngine, clips: readonly Uint8Array[]): Promise<Uint8Array> {
  const probes = [];
  for (const clip of clips) probes.push(await engine.probe(clip, "clip.mp4"));
  const size = displaySize(probes[0]!);
  if (!size) throw new Error("the first clip has no picture");
  const W = even(size.width);
  const H = even(size.height);
  const rate = firstVideo(probes[0]!)?.fps;
  const fps = rate && rate <= 120 ? rate : 25;
  const sound = probes.every((p) => firstAudio(p));
  const names = clips.map((_, i) => `clip${i}.mp4`);
  const pictures = names.map(
    (_, i) =>
      `[${i}:v:0]scale=${W}:${H}:force_original_aspect_ratio=decrease,pad=${W}:${H}:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=${fps},format=yuv420p[v${i}]`,
  );
  // With sound, each clip's picture and sound stand in pairs before the concat ([v0][a0][v1][a1]...).
  const sounds = names.map(
    (_, i) => `[${i}:a:0]aresample=48000,aformat=sample_fmts=fltp:channel_layouts=stereo[a${i}]`,
  );
  const graph = sound
    ? [
        ...pictures,
        ...sounds,
        `${names.map((_, i) => `[v${i}][a${i}]`).join("")}concat=n=${names.length}:v=1:a=1[v][a]`,
      ]
    : [...pictures, `${names.map((_, i) => `[v${i}]`).join("")}concat=n=${names.length}:v=1:a=0[v]`];
  const args = [
    ...names.flatMap((n) => ["-i", n]),
    "-filter_complex",
    graph.join(";"),
    "-map",
    "[v]",
    ...(sound ? ["-map", "[a]", ...AAC_STEREO_ARGS] : []),
    ...h264Args({ preset: "veryfast", crf: 20 }),
    "-map_metadata",
    "-1",
    ...FASTSTART_ARGS,
    "joined.mp4",
  ];
  const seconds = probes.reduce((s, p) => s + p.durationSeconds, 0);
  const out = await engine.run(args, {
    inputs: Object.fromEntries(names.map((n, i) => [n, clips[i]!])),
    outputs: ["joined.mp4"],
    durationSeconds: seconds,
    timeoutMs: JOIN_TIMEOUT_MS,
  });
  return out["joined.mp4"]!;
}
