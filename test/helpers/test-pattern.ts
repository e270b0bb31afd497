// The ffmpeg arguments of the test clips tests make for themselves: a lavfi video source as H.264 (ultrafast,
// yuv420p); the testsrc2 pattern of a size, frame rate and length, with a 440 Hz tone of the same length as AAC
// when asked. The output file name goes after them.

const H264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"];

/** A lavfi video source (e.g. `color=c=0x00ff00:size=320x240:rate=25:duration=3`) as H.264. */
export const lavfiClipArgs = (source: string): string[] => ["-f", "lavfi", "-i", source, ...H264];

/** `size` is WIDTHxHEIGHT; `tone` adds the sound (the clip ends with the shorter stream). */
export function testPatternArgs(size: string, rate: number, seconds: number, tone = false): string[] {
  const pattern = `testsrc2=size=${size}:rate=${rate}:duration=${seconds}`;
  if (!tone) return lavfiClipArgs(pattern);
  const sine = ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`];
  return ["-f", "lavfi", "-i", pattern, ...sine, ...H264, "-c:a", "aac", "-shortest"];
}
