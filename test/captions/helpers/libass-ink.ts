// Draws one line of white text with libass (native ffmpeg, the filter the captions burn uses: ass or subtitles)
// on a black frame and returns the frame as gray pixels, one byte per pixel, row by row. The card and metrics
// tests measure the ink in it against their own arithmetic.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as assert from "uvu/assert";

export interface InkLine {
  filter: "ass" | "subtitles";
  width: number;
  height: number;
  /** The ASS WrapStyle: 0 wraps as the burn does, 2 never wraps. */
  wrapStyle: 0 | 2;
  fontFile: string;
  family: string;
  fontPx: number;
  marginX: number;
  text: string;
}

function assScript(l: InkLine): string {
  return [
    "[Script Info]",
    "ScriptType: v4.00+",
    `PlayResX: ${l.width}`,
    `PlayResY: ${l.height}`,
    "ScaledBorderAndShadow: yes",
    `WrapStyle: ${l.wrapStyle}`,
    "Kerning: yes",
    "",
    "[V4+ Styles]",
    "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding",
    `Style: Default,${l.family},${l.fontPx},&H00FFFFFF,&H00FFFFFF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,0,0,5,${l.marginX},${l.marginX},0,1`,
    "",
    "[Events]",
    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text",
    `Dialogue: 0,0:00:00.00,0:00:05.00,Default,,0,0,0,,${l.text}`,
    "",
  ].join("\n");
}

export function drawWithLibass(l: InkLine): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "mg-ink-"));
  try {
    const ass = join(dir, "t.ass");
    writeFileSync(ass, assScript(l));
    const raw = join(dir, "o.raw");
    const run = spawnSync(
      "ffmpeg",
      [
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        `color=black:s=${l.width}x${l.height}:d=1`,
        "-vf",
        `${l.filter}=${ass}:fontsdir=${dirname(l.fontFile)}`,
        "-frames:v",
        "1",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "gray",
        "-y",
        raw,
      ],
      { encoding: "utf8" },
    );
    assert.is(run.status, 0, run.stderr);
    return readFileSync(raw);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
