// The mean colour of one decoded frame of a clip: the video and Omni tests check that a clip begins red and
// ends blue (the sandbox's first and last frames) by decoding it with ffmpeg, not by trusting the writer.
import type { MediaEngine } from "../../lib/media/index.ts";

/** Mean red and blue of one decoded frame at `at` seconds. */
export async function frameColour(engine: MediaEngine, bytes: Uint8Array, at: number) {
  const out = await engine.run(
    [
      "-ss",
      at.toFixed(3),
      "-i",
      "in.mp4",
      "-frames:v",
      "1",
      "-vf",
      "scale=8:8",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "f.rgb",
    ],
    { inputs: { "in.mp4": bytes }, outputs: ["f.rgb"] },
  );
  const px = out["f.rgb"]!;
  let r = 0;
  let b = 0;
  for (let i = 0; i < px.length; i += 3) (r += px[i]!), (b += px[i + 2]!);
  return { r: r / (px.length / 3), b: b / (px.length / 3) };
}
