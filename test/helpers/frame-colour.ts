// The mean colour of one decoded frame of a clip: the video and Omni tests check that a clip begins red and
// ends blue (the sandbox's first and last frames) by decoding it with ffmpeg, not by trusting the writer.
import type { MediaEngine } from "../../lib/media/index.ts";

/** The decoded frame at `at` seconds, passed through the filter `vf`, as raw RGB (3 bytes a pixel). */
export async function rgbFrame(engine: MediaEngine, bytes: Uint8Array, at: number, vf: string): Promise<Uint8Array> {
  const args = ["-ss", at.toFixed(3), "-i", "in.mp4", "-frames:v", "1", "-vf", vf];
  const out = await engine.run([...args, "-f", "rawvideo", "-pix_fmt", "rgb24", "f.rgb"], {
    inputs: { "in.mp4": bytes },
    outputs: ["f.rgb"],
  });
  return out["f.rgb"]!;
}

/** Mean red and blue of one decoded frame at `at` seconds. */
export async function frameColour(engine: MediaEngine, bytes: Uint8Array, at: number) {
  const px = await rgbFrame(engine, bytes, at, "scale=8:8");
  let r = 0;
  let b = 0;
  for (let i = 0; i < px.length; i += 3) (r += px[i]!), (b += px[i + 2]!);
  return { r: r / (px.length / 3), b: b / (px.length / 3) };
}
