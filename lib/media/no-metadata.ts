// The ffmpeg arguments that keep metadata out of a file made for a partner: global, per-stream and chapter
// metadata all go, and bitexact keeps the muxer's name and version out.
export const NO_METADATA_ARGS: readonly string[] = [
  "-map_metadata",
  "-1",
  "-map_metadata:s",
  "-1",
  "-map_chapters",
  "-1",
  "-fflags",
  "+bitexact",
];

// Each stream's encoder writes its name too unless told to be bitexact.
export const BITEXACT_STREAM_ARGS: readonly string[] = ["-flags:v", "+bitexact", "-flags:a", "+bitexact"];
