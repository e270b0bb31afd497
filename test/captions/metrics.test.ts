// Caption layout numbers and text widths with real font metrics: the font size per frame, the margins and the
// safe width; advance widths and kerning read from DejaVu Sans (Debian fonts-dejavu-core, which ffmpeg's libass
// pulls in through fontconfig); the outline and stroke on both ends; the parsed-font cache; and the width we
// compute against the ink libass really draws (native ffmpeg, `subtitles` filter) at the same ASS size.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  clampPositionY,
  fontPixels,
  layoutFor,
  outlinePixels,
  safeWidth,
  strokePixels,
} from "../../plugins/captions/render/layout.ts";
import { APPROX_ADVANCE_EM, fontMetrics, measureText, textMeasurer } from "../../plugins/captions/render/metrics.ts";
import { drawWithLibass } from "./helpers/libass-ink.ts";

const t = suite("captions: layout and font metrics");

const DEJAVU = "/usr/share/fonts/truetype/dejavu/";
const SANS = join(DEJAVU, "DejaVuSans.ttf");
const CONDENSED = join(DEJAVU, "DejaVuSansCondensed.ttf");
const PORTRAIT = { width: 1080, height: 1920, fps: 30 };
const LANDSCAPE = { width: 1920, height: 1080, fps: 30 };

t("font sizes follow the frame's shorter side, small < medium < large, with a floor", () => {
  assert.is(fontPixels("medium", PORTRAIT), 59); // 5.5 % of 1080
  assert.is(fontPixels("medium", LANDSCAPE), 59);
  assert.is(fontPixels("small", PORTRAIT), 49);
  assert.is(fontPixels("large", PORTRAIT), 76);
  assert.is(fontPixels("medium", { width: 720, height: 1280, fps: 30 }), 40);
  assert.is(fontPixels("small", { width: 64, height: 64, fps: 30 }), 10);
  assert.is(fontPixels("medium", { width: Number.NaN, height: -5, fps: 0 }), 10);
});

t("margins, safe width and the position_y band", () => {
  assert.equal(layoutFor(PORTRAIT), { marginX: 54, marginV: 384, safeWidth: 972, safeTop: 96, safeBottom: 1824 });
  assert.equal(layoutFor(LANDSCAPE), { marginX: 96, marginV: 86, safeWidth: 1728, safeTop: 54, safeBottom: 1026 });
  assert.is(safeWidth({ width: 0, height: 0, fps: 0 }), 0);
  assert.is(clampPositionY(0), 5);
  assert.is(clampPositionY(100), 95);
  assert.is(clampPositionY(42), 42);
  assert.is(clampPositionY(Number.NaN), 50);
  assert.is(outlinePixels("none", 59), 0);
  assert.ok(
    outlinePixels("thin", 59) < outlinePixels("medium", 59) && outlinePixels("medium", 59) < outlinePixels("thick", 59),
  );
  assert.is(strokePixels(0.05, 60), 3);
  assert.is(strokePixels(0, 60), 0);
});

t("advance widths and kerning of DejaVu Sans, at the size libass draws", () => {
  assert.ok(existsSync(SANS), `${SANS} is missing (Debian fonts-dejavu-core)`);
  const m = fontMetrics(SANS);
  assert.is(m.approximate, false);
  assert.is(m.unitsPerEm, 2048);
  assert.is(m.cellUnits, 1901 + 483); // usWinAscent + usWinDescent: what an ASS font size fills
  assert.is(m.advance("A"), 1401);
  assert.is(m.advance("V"), 1401);
  assert.is(m.advance("AV"), 1401 + 1401 - 131); // the latn GPOS pair kerning
  assert.is(m.advance("A V"), m.advance("A") + m.advance(" ") + m.advance("V"));
  assert.is(m.advance(""), 0);
  // At ASS size 100 one unit is 100 / 2384 px.
  assert.ok(Math.abs(measureText(SANS, "AV", { fontPx: 100, kerning: true }) - (2671 * 100) / 2384) < 1e-9);
  assert.ok(Math.abs(measureText(SANS, "AV", { fontPx: 100, kerning: false }) - (2802 * 100) / 2384) < 1e-9);
  // Not told how the file is drawn: the wider of the two, so the line fits either way.
  assert.is(measureText(SANS, "AV", { fontPx: 100 }), measureText(SANS, "AV", { fontPx: 100, kerning: false }));
  const t2 = measureText(SANS, "T.", { fontPx: 100, kerning: true });
  assert.ok(measureText(SANS, "T.", { fontPx: 100 }) >= t2);
  assert.is(fontMetrics(SANS), m, "parsed once per path");
});

t("a condensed face is narrower; missing glyphs count an em", () => {
  const wide = measureText(SANS, "caption line", { fontPx: 59 });
  const narrow = measureText(CONDENSED, "caption line", { fontPx: 59 });
  assert.ok(narrow < wide * 0.95, `${narrow} vs ${wide}`);
  const m = fontMetrics(SANS);
  assert.ok(m.advance("\u{1F600}") >= m.unitsPerEm); // an emoji DejaVu Sans lacks: drawn by a fallback
});

t("outline and stroke widen a line on both ends; spacing per character", () => {
  const bare = measureText(SANS, "Hello", { fontPx: 100 });
  assert.ok(Math.abs(measureText(SANS, "Hello", { fontPx: 100, outlinePx: 4 }) - (bare + 8)) < 1e-9);
  assert.ok(Math.abs(measureText(SANS, "Hello", { fontPx: 100, embolden: 0.05 }) - (bare + 10)) < 1e-9);
  assert.ok(Math.abs(measureText(SANS, "Hello", { fontPx: 100, embolden: 0.05, outlinePx: 4 }) - (bare + 18)) < 1e-9);
  assert.ok(Math.abs(measureText(SANS, "Hello", { fontPx: 100, spacingPx: 2 }) - (bare + 10)) < 1e-9);
  assert.ok(Math.abs(measureText(SANS, "Hello", { fontPx: 100, embolden: Number.NaN, outlinePx: -3 }) - bare) < 1e-9);
  assert.is(measureText(SANS, "", { fontPx: 100, outlinePx: 4 }), 0);
  const measure = textMeasurer(SANS, { fontPx: 100 });
  assert.is(measure("Hello"), bare);
  assert.is(measure("Hello"), bare);
});

t("a file that is not a font gives approximate widths, not a throw", () => {
  const dir = mkdtempSync(join(tmpdir(), "mg-metrics-"));
  try {
    const bad = join(dir, "broken.ttf");
    writeFileSync(bad, "not a font at all");
    for (const path of [bad, join(dir, "absent.ttf")]) {
      const m = fontMetrics(path);
      assert.is(m.approximate, true);
      assert.is(measureText(path, "abcd", { fontPx: 100 }), 4 * APPROX_ADVANCE_EM * 100);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Columns libass inks for `text` at ASS size `size` on a black 1000x200 frame (native ffmpeg, `filter`: ass or subtitles). */
function inkWidth(filter: "ass" | "subtitles", fontFile: string, family: string, size: number, text: string): number {
  const line = {
    filter,
    width: 1000,
    height: 200,
    wrapStyle: 2,
    fontFile,
    family,
    fontPx: size,
    marginX: 0,
    text,
  } as const;
  const px = drawWithLibass(line);
  let left = -1;
  let right = -1;
  for (let x = 0; x < 1000; x++) {
    for (let y = 0; y < 200; y++) {
      if (px[y * 1000 + x]! > 128) {
        if (left < 0) left = x;
        right = x;
        break;
      }
    }
  }
  return left < 0 ? 0 : right - left + 1;
}

t(
  "our width matches the ink libass draws at the same ASS size (side bearings apart), kerned as the filter draws",
  () => {
    if (
      spawnSync("ffmpeg", ["-hide_banner", "-filters"], { encoding: "utf8" }).stdout?.includes(" subtitles ") !== true
    ) {
      assert.unreachable("native ffmpeg with libass is needed (the captions burn uses it)");
    }
    for (const [file, family] of [
      [SANS, "DejaVu Sans"],
      [CONDENSED, "DejaVu Sans Condensed"],
    ] as const) {
      for (const text of ["HHHHHH", "AVATAR Wave", "caption line"]) {
        // `ass` honours the file's "Kerning: yes"; `subtitles` loses the header line and draws without kerning.
        for (const [filter, kerning] of [
          ["ass", true],
          ["subtitles", false],
        ] as const) {
          const ours = measureText(file, text, { fontPx: 100, kerning });
          const ink = inkWidth(filter, file, family, 100, text);
          // The ink starts after the first glyph's left bearing and stops before the last one's right bearing,
          // up to 10 % of the size each. Measured at the em size instead of the cell size, ours would be 16 %
          // wider; kerned against an unkerned drawing, "AVATAR Wave" would be 30 px narrower than the ink.
          assert.ok(
            ink > 0 && ink <= ours + 1 && ours - ink < 20,
            `${filter} ${family} "${text}": ours ${ours.toFixed(1)}, ink ${ink}`,
          );
        }
      }
    }
  },
);

t.run();
