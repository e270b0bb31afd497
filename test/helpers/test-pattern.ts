// The ffmpeg arguments of the test clips tests make for themselves: a testsrc2 pattern of a size, frame rate
// and length as H.264 (ultrafast, yuv420p), with a 440 Hz tone of the same length as AAC when asked. The
// output file name goes after them.

/** `size` is WIDTHxHEIGHT; `tone` adds the sound (the clip ends with the shorter stream). */
export function testPatternArgs(size: string, rate: number, seconds: number, tone = false): string[] {
  const sine = ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`];
  return [
    ...["-f", "lavfi", "-i", `testsrc2=size=${size}:rate=${rate}:duration=${seconds}`],
    ...(tone ? sine : []),
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"],
    ...(tone ? ["-c:a", "aac", "-shortest"] : []),
  ];
}
