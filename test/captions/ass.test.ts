// The ASS script (plugins/captions/ass.ts), parsed back: the header (PlayRes = frame, scaled borders, wrapping),
// every style field where it is drawn (font family and size, colours as &HAABBGGRR, outline widths, the shadow
// layer with its offsets, blur and strength, the four positions with position_y clamped to 5-95, case, the
// stroke of a font with `embolden`), one Dialogue per card and layer with centisecond times, and card text that
// cannot inject override tags, line breaks or fields.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  ASS_LAYERS,
  assColour,
  assTime,
  buildAss,
  escapeAssText,
  REFERENCE_SHORT_SIDE,
  SHADOW_OFFSET_1080,
  strengthAlpha,
} from "../../plugins/captions/render/ass.ts";
import { fontPixels, layoutFor, outlinePixels, strokePixels } from "../../plugins/captions/render/layout.ts";
import type { CaptionStyle, Card, FontEntry, Frame } from "../../plugins/captions/types.ts";
import { SPEC_DEFAULT_STYLE, SPEC_TIKTOK_STYLE } from "./helpers/spec-style.ts";

const t = suite("captions: ASS script");

const PORTRAIT: Frame = { width: 1080, height: 1920, fps: 30 };
const LANDSCAPE: Frame = { width: 1280, height: 720, fps: 25 };
const FONT: FontEntry = {
  key: "test",
  label: "Test",
  file: "Test-Regular.ttf",
  css_family: "Test Sans",
  embolden: 0,
  category: "clean",
  path: "/nowhere",
};
const STROKED: FontEntry = { ...FONT, key: "stroked", css_family: "Stroked Sans", embolden: 0.04 };
const BASE: CaptionStyle = { ...SPEC_DEFAULT_STYLE, font: "test" };
const CARDS: Card[] = [
  { start: 0.5, end: 1.234, text: "Hello there" },
  { start: 1.5, end: 3, text: "General Kenobi" },
];

interface Parsed {
  info: Record<string, string>;
  styles: Record<string, Record<string, string>>;
  events: Array<Record<string, string>>;
}

/** A small ASS reader: [Script Info] key: value lines, and the Format-described Style and Dialogue lines. */
function parse(script: string): Parsed {
  const out: Parsed = { info: {}, styles: {}, events: [] };
  let section = "";
  let format: string[] = [];
  for (const line of script.split("\n")) {
    if (/^\[.*\]$/.test(line)) {
      section = line;
      format = [];
      continue;
    }
    if (!line || line.startsWith(";")) continue;
    const i = line.indexOf(":");
    assert.ok(i > 0, `line without a key: ${JSON.stringify(line)}`);
    const key = line.slice(0, i);
    const value = line.slice(i + 1).trim();
    if (section === "[Script Info]") out.info[key] = value;
    else if (key === "Format") format = value.split(",").map((f) => f.trim());
    else {
      // The last field (Text) may hold commas; the others cannot.
      const parts = value.split(",");
      const fields = [...parts.slice(0, format.length - 1), parts.slice(format.length - 1).join(",")];
      const row = Object.fromEntries(format.map((f, k) => [f, fields[k]!]));
      if (key === "Style") out.styles[row.Name!] = row;
      else if (key === "Dialogue") out.events.push(row);
      else assert.unreachable(`unexpected line ${line}`);
    }
  }
  return out;
}

const ass = (style: Partial<CaptionStyle> = {}, opts: { frame?: Frame; font?: FontEntry; cards?: Card[] } = {}) =>
  parse(buildAss(opts.cards ?? CARDS, { ...BASE, ...style }, opts.font ?? FONT, opts.frame ?? PORTRAIT));

const layersOf = (p: Parsed) => [...new Set(p.events.map((e) => e.Style))];
const overrides = (e: Record<string, string>) => /^\{([^}]*)\}/.exec(e.Text!)?.[1] ?? "";
const tagValue = (e: Record<string, string>, tag: string) => {
  const m = new RegExp(`\\\\${tag}(-?[\\d.]+)`).exec(overrides(e));
  return m ? Number(m[1]) : undefined;
};

t("header: PlayRes is the frame, borders and shadows scale with it, smart wrapping", () => {
  for (const frame of [PORTRAIT, LANDSCAPE]) {
    const p = ass({}, { frame });
    assert.is(p.info.ScriptType, "v4.00+");
    assert.is(p.info.PlayResX, String(frame.width));
    assert.is(p.info.PlayResY, String(frame.height));
    assert.is(p.info.ScaledBorderAndShadow, "yes");
    assert.is(p.info.WrapStyle, "0");
  }
});

t("font and size: Fontname is the font's css_family, Fontsize is layout.ts fontPixels for each size", () => {
  const sizes = new Set<string>();
  for (const size of ["small", "medium", "large"] as const) {
    for (const frame of [PORTRAIT, LANDSCAPE]) {
      const p = ass({ size }, { frame });
      for (const s of Object.values(p.styles)) {
        assert.is(s.Fontname, "Test Sans");
        assert.is(Number(s.Fontsize), fontPixels(size, frame));
      }
      sizes.add(`${frame.width}:${p.styles[ASS_LAYERS.face]!.Fontsize}`);
    }
  }
  assert.is(sizes.size, 6, "three sizes on each frame");
  // A comma in a family name cannot shift the Style fields.
  const p = ass({}, { font: { ...FONT, css_family: "Evil, 1, &H00" } });
  assert.is(p.styles[ASS_LAYERS.face]!.Fontname, "Evil  1  &H00");
  assert.is(Number(p.styles[ASS_LAYERS.face]!.Fontsize), fontPixels("medium", PORTRAIT));
});

t(
  "colours: #RRGGBB becomes &HAABBGGRR; color fills every visible layer, outline_color borders the outline layer",
  () => {
    assert.is(assColour("#12AB34"), "&H0034AB12");
    assert.is(assColour("#ffffff", 255), "&HFFFFFFFF");
    assert.throws(() => assColour("red"));
    const p = ass({ color: "#12AB34", outline_color: "#C0FFEE" });
    assert.is(p.styles[ASS_LAYERS.face]!.PrimaryColour, "&H0034AB12");
    assert.is(p.styles[ASS_LAYERS.outline]!.PrimaryColour, "&H0034AB12");
    assert.is(p.styles[ASS_LAYERS.outline]!.OutlineColour, "&H00EEFFC0");
  },
);

t("outline: none draws no outline layer; thin < medium < thick, as layout.ts outlinePixels", () => {
  assert.equal(layersOf(ass({ outline: "none" })), [ASS_LAYERS.face]);
  assert.is(Number(ass({ outline: "none" }).styles[ASS_LAYERS.face]!.Outline), 0);
  let last = 0;
  for (const outline of ["thin", "medium", "thick"] as const) {
    const p = ass({ outline });
    assert.equal(layersOf(p), [ASS_LAYERS.outline, ASS_LAYERS.face]);
    const width = Number(p.styles[ASS_LAYERS.outline]!.Outline);
    assert.is(width, outlinePixels(outline, fontPixels("medium", PORTRAIT)));
    assert.ok(width > last, `${outline} is wider`);
    last = width;
    // The outline layer is drawn under the face.
    const layer = (name: string) => Number(p.events.find((e) => e.Style === name)!.Layer);
    assert.ok(layer(ASS_LAYERS.outline) < layer(ASS_LAYERS.face));
  }
});

t(
  "shadow: a layer of its own under the text, transparent fill, depth by `shadow`, explicit offsets, blur, strength",
  () => {
    assert.not.ok(
      layersOf(ass({ shadow: "none", shadow_blur: 5, shadow_x: 3 })).includes(ASS_LAYERS.shadow),
      "none: no shadow layer, whatever the other fields",
    );
    const scale = Math.min(PORTRAIT.width, PORTRAIT.height) / REFERENCE_SHORT_SIDE;
    let last = 0;
    for (const shadow of ["thin", "medium", "thick"] as const) {
      const p = ass({ shadow });
      assert.equal(layersOf(p), [ASS_LAYERS.shadow, ASS_LAYERS.outline, ASS_LAYERS.face]);
      const s = p.styles[ASS_LAYERS.shadow]!;
      assert.is(s.PrimaryColour!.slice(0, 4), "&HFF", "fill transparent");
      assert.is(s.OutlineColour!.slice(0, 4), "&HFF", "border transparent");
      const depth = Number(s.Shadow);
      assert.is(depth, SHADOW_OFFSET_1080[shadow] * scale);
      assert.ok(depth > last);
      last = depth;
      // Null offsets: the default depth on both axes.
      const e = p.events.find((x) => x.Style === ASS_LAYERS.shadow)!;
      assert.is(tagValue(e, "xshad"), depth);
      assert.is(tagValue(e, "yshad"), depth);
      assert.is(tagValue(e, "blur"), undefined, "no blur by default");
      assert.is(Number(e.Layer), 0);
      // The other layers carry no shadow of their own.
      assert.is(Number(p.styles[ASS_LAYERS.outline]!.Shadow), 0);
      assert.is(Number(p.styles[ASS_LAYERS.face]!.Shadow), 0);
    }
    // shadow_x / shadow_y, negative ones too; one left null takes the default.
    const e = ass({ shadow: "thin", shadow_x: -6, shadow_y: null, shadow_blur: 7 }, { frame: LANDSCAPE }).events.find(
      (x) => x.Style === ASS_LAYERS.shadow,
    )!;
    const lscale = 720 / REFERENCE_SHORT_SIDE;
    assert.is(tagValue(e, "xshad"), Math.round(-6 * lscale * 10) / 10);
    assert.is(tagValue(e, "yshad"), Math.round(SHADOW_OFFSET_1080.thin * lscale * 10) / 10);
    assert.is(tagValue(e, "blur"), Math.round(7 * lscale * 10) / 10);
    // Strength: the shadow colour's alpha.
    for (const [strength, alpha] of [
      [100, "00"],
      [0, "FF"],
      [70, "4D"],
      [50, "80"],
    ] as const) {
      assert.is(strengthAlpha(strength), parseInt(alpha, 16));
      assert.is(
        ass({ shadow: "medium", shadow_strength: strength }).styles[ASS_LAYERS.shadow]!.BackColour,
        `&H${alpha}000000`,
      );
    }
  },
);

t("position: bottom, middle and top align the caption; custom places it at position_y clamped to 5-95", () => {
  for (const frame of [PORTRAIT, LANDSCAPE]) {
    const layout = layoutFor(frame);
    for (const [position, an] of [
      ["bottom", 2],
      ["middle", 5],
      ["top", 8],
    ] as const) {
      const p = ass({ position, position_y: 12 }, { frame });
      for (const s of Object.values(p.styles)) {
        assert.is(Number(s.Alignment), an);
        assert.is(Number(s.MarginV), layout.marginV);
        assert.is(Number(s.MarginL), layout.marginX);
        assert.is(Number(s.MarginR), layout.marginX);
      }
      for (const e of p.events) {
        assert.ok(overrides(e).startsWith(`\\an${an}`), overrides(e));
        assert.not.match(overrides(e), /\\pos/);
      }
    }
    for (const [y, drawn] of [
      [0, 5],
      [5, 5],
      [30, 30],
      [50, 50],
      [95, 95],
      [100, 95],
      [72.5, 72.5],
    ] as const) {
      const p = ass({ position: "custom", position_y: y }, { frame });
      for (const e of p.events) {
        const m = /\\an5\\pos\((\d+),(\d+)\)/.exec(overrides(e));
        assert.ok(m, overrides(e));
        assert.is(Number(m![1]), frame.width / 2);
        assert.is(Number(m![2]), Math.round((frame.height * drawn) / 100), `position_y ${y}`);
      }
    }
  }
});

t("case changes the drawn text only", () => {
  const text = (c: CaptionStyle["case"]) =>
    ass({ case: c, outline: "none" }).events.map((e) => e.Text!.replace(/^\{[^}]*\}/, ""));
  assert.equal(text("normal"), ["Hello there", "General Kenobi"]);
  assert.equal(text("upper"), ["HELLO THERE", "GENERAL KENOBI"]);
  assert.equal(text("lower"), ["hello there", "general kenobi"]);
});

t("embolden: a stroke in the text colour of embolden × font size, with the outline around it", () => {
  const fontPx = fontPixels("large", PORTRAIT);
  const stroke = strokePixels(STROKED.embolden, fontPx);
  assert.ok(stroke > 0);
  const p = ass({ size: "large", color: "#FF8800", outline: "thin" }, { font: STROKED });
  const face = p.styles[ASS_LAYERS.face]!;
  assert.is(Number(face.Outline), stroke);
  assert.is(face.OutlineColour, face.PrimaryColour);
  assert.is(face.OutlineColour, "&H000088FF");
  // The outline layer's border reaches past the stroke by the outline's width.
  assert.is(
    Number(p.styles[ASS_LAYERS.outline]!.Outline),
    Math.round((outlinePixels("thin", fontPx) + stroke) * 10) / 10,
  );
  // A font without embolden has no stroke.
  assert.is(Number(ass({ size: "large", outline: "thin" }).styles[ASS_LAYERS.face]!.Outline), 0);
  // Stroke and no outline: the face layer alone, still stroked.
  const bare = ass({ outline: "none" }, { font: STROKED });
  assert.equal(layersOf(bare), [ASS_LAYERS.face]);
  assert.ok(Number(bare.styles[ASS_LAYERS.face]!.Outline) > 0);
});

t("events: one Dialogue per card and layer, centisecond times, empty and backwards cards left out", () => {
  assert.is(assTime(0), "0:00:00.00");
  assert.is(assTime(1.234), "0:00:01.23");
  assert.is(assTime(1.235), "0:00:01.24");
  assert.is(assTime(61.5), "0:01:01.50");
  assert.is(assTime(3723.99), "1:02:03.99");
  assert.is(assTime(-1), "0:00:00.00");
  const cards: Card[] = [
    ...CARDS,
    { start: 4, end: 4, text: "zero" },
    { start: 5, end: 4, text: "backwards" },
    { start: 6, end: 7, text: "  \n " },
  ];
  const p = ass({ shadow: "thin" }, { cards });
  assert.is(p.events.length, 2 * 3);
  const first = p.events.filter((e) => e.Text!.endsWith("Hello there"));
  assert.equal(
    first.map((e) => [e.Layer, e.Start, e.End]),
    [
      ["0", "0:00:00.50", "0:00:01.23"],
      ["1", "0:00:00.50", "0:00:01.23"],
      ["2", "0:00:00.50", "0:00:01.23"],
    ],
  );
  for (const e of p.events) assert.ok(Object.values(p.styles).some((s) => s.Name === e.Style));
});

/** What libass would read as override blocks in a Dialogue text (an unescaped `{` up to the next `}`). */
function overrideBlocks(text: string): string[] {
  const blocks: string[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\" && (text[i + 1] === "{" || text[i + 1] === "}")) {
      i++;
      continue;
    }
    if (text[i] === "{") {
      const end = text.indexOf("}", i);
      blocks.push(text.slice(i, end < 0 ? undefined : end + 1));
      if (end < 0) break;
      i = end;
    }
  }
  return blocks;
}

t("hostile text: no override block, line break, field or Dialogue can be injected", () => {
  const hostile = [
    "{\\an8\\fs200\\c&H0000FF&}big",
    "a\\Nb\\nc\\hd",
    "line\nbreak\r\nDialogue: 0,0:00:00.00,9:00:00.00,Face,,0,0,0,,{\\fs300}owned",
    "}{\\alpha&HFF&}",
    "\\{\\}",
    "tab\tand\u0000null\u2028sep",
    "{\\p1}m 0 0 l 100 0 100 100",
  ];
  const p = ass({}, { cards: hostile.map((text, i) => ({ start: i, end: i + 0.9, text })) });
  assert.is(p.events.length, hostile.length * 2, "no extra Dialogue");
  for (const e of p.events) {
    const blocks = overrideBlocks(e.Text!);
    assert.is(blocks.length, 1, `only our own block: ${e.Text}`);
    assert.ok(e.Text!.startsWith(blocks[0]!));
    const body = e.Text!.slice(blocks[0]!.length);
    assert.not.match(body, /[\n\r\t\u0000\u2028]/);
    // Every backslash of the text is followed by the (invisible) word joiner or is the escape of a brace.
    assert.not.match(body, /\\(?![\u2060{}])/);
  }
  assert.is(escapeAssText("a\\Nb"), "a\\\u2060Nb");
  assert.is(escapeAssText("{x}"), "\\{x\\}");
  assert.is(escapeAssText("a\n\nb"), "a b");
});

t("the tiktok preset as the spec lists it", () => {
  const tiktok: CaptionStyle = { ...SPEC_TIKTOK_STYLE, font: BASE.font };
  const p = ass(tiktok, { font: STROKED });
  assert.equal(layersOf(p), [ASS_LAYERS.shadow, ASS_LAYERS.face]);
  const e = p.events.find((x) => x.Style === ASS_LAYERS.shadow)!;
  assert.is(tagValue(e, "xshad"), 2);
  assert.is(tagValue(e, "yshad"), 2.5);
  assert.is(tagValue(e, "blur"), 4);
  assert.is(p.styles[ASS_LAYERS.shadow]!.BackColour, "&H4D000000");
  assert.ok(Number(p.styles[ASS_LAYERS.face]!.Outline) > 0, "stroked face");
});

t.run();
