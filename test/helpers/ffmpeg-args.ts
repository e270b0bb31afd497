// ffmpeg arguments the tests that make their own clips repeat: spread them into an argument list.

/** Video to H.264 (fast, yuv420p, what every player takes). */
export const H264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"];

/** Video to H.264 as H264 does, and sound to AAC. */
export const H264_AAC = [...H264, "-c:a", "aac"];

/** The first input's video, the second's sound and the third's subtitles, the subtitles as MP4 text. */
export const VIDEO_SOUND_SUBS = ["-map", "0:v", "-map", "1:a", "-map", "2:s", "-c:s", "mov_text"];
