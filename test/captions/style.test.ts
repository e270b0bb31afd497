// The caption style: every field's allowed values and ranges, unknown fields, hostile values (NaN, strings for
// numbers, arrays, nested objects, huge numbers, prototype keys), the default style and the presets exactly as
// the spec gives them (and valid as they are), resolveStyle, and the GET /captions/style-options body exactly
// as the spec lists it.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { CAPTION_ERRORS } from "../../plugins/captions/errors.ts";
import { FONTS, fontByKey } from "../../plugins/captions/render/fonts.ts";
import { checkStyle, DEFAULT_STYLE, PRESETS, resolveStyle, STYLE_FIELDS } from "../../plugins/captions/style/input.ts";
import { styleOptionsBody } from "../../plugins/captions/style/operations.ts";
import type { CaptionStyle } from "../../plugins/captions/types.ts";
import { SPEC_DEFAULT_STYLE, SPEC_TIKTOK_STYLE } from "./helpers/spec-style.ts";

const t = suite("captions: style");

const ok = (raw: unknown): Partial<CaptionStyle> => {
  const r = checkStyle(raw);
  if (!r.ok) throw new Error(`expected ok for ${JSON.stringify(raw)}: ${r.message}`);
  return r.value;
};
const bad = (raw: unknown): string => {
  const r = checkStyle(raw);
  if (r.ok) throw new Error(`expected a 400 for ${String(JSON.stringify(raw))}`);
  return r.message;
};
const badField = (field: string, v: unknown) => {
  const msg = bad({ [field]: v });
  assert.ok(msg.startsWith(`Invalid style.${field}. Allowed: `), `${field}=${String(v)}: ${msg}`);
};

t("the empty style and the default style", () => {
  assert.equal(ok({}), {});
  assert.equal(DEFAULT_STYLE, SPEC_DEFAULT_STYLE);
  assert.equal(Object.keys(DEFAULT_STYLE), [...STYLE_FIELDS]);
  assert.equal(ok({ ...DEFAULT_STYLE }), SPEC_DEFAULT_STYLE);
  assert.equal(resolveStyle({}), SPEC_DEFAULT_STYLE);
  assert.ok(Object.isFrozen(DEFAULT_STYLE));
});

t("choice fields: every allowed value, and anything else", () => {
  const lists: Record<string, string[]> = {
    size: ["small", "medium", "large"],
    outline: ["none", "thin", "medium", "thick"],
    shadow: ["none", "thin", "medium", "thick"],
    position: ["bottom", "middle", "top", "custom"],
    chunking: ["words", "phrases", "line"],
    case: ["normal", "lower", "upper"],
  };
  for (const [field, values] of Object.entries(lists)) {
    for (const v of values) assert.equal(ok({ [field]: v }), { [field]: v });
    for (const v of [
      "",
      "LARGE",
      values[0]!.toUpperCase(),
      ` ${values[0]}`,
      "huge",
      null,
      1,
      true,
      [values[0]],
      { v: values[0] },
    ])
      badField(field, v);
    assert.is(bad({ [field]: "nope" }), CAPTION_ERRORS.styleInvalid(field, values.join(", ")));
  }
});

t("font: every key of the table, nothing else", () => {
  for (const f of FONTS) assert.equal(ok({ font: f.key }), { font: f.key });
  for (const v of [
    "",
    "Inter",
    "INTER",
    "inter ",
    "Inter_400Regular.ttf",
    "__proto__",
    "constructor",
    "toString",
    null,
    0,
    ["inter"],
    { key: "inter" },
  ])
    badField("font", v);
  assert.match(bad({ font: "comic-sans" }), /GET \/captions\/style-options/);
});

t("colours: #RRGGBB in either case, upper-cased; anything else is a 400", () => {
  assert.equal(ok({ color: "#ff00aa", outline_color: "#AbCdEf" }), { color: "#FF00AA", outline_color: "#ABCDEF" });
  assert.equal(ok({ color: "#000000" }), { color: "#000000" });
  for (const v of [
    "#FFF",
    "FFFFFF",
    "#FFFFFFF",
    "#FFFFF",
    "#GGGGGG",
    "#FFFFFF00",
    " #FFFFFF",
    "#FFFFFF\n",
    "red",
    "rgb(0,0,0)",
    "",
    null,
    0xffffff,
    ["#FFFFFF"],
    { hex: "#FFFFFF" },
  ]) {
    badField("color", v);
    badField("outline_color", v);
  }
  assert.is(bad({ color: "#FFF" }), CAPTION_ERRORS.styleInvalid("color", "a hex colour #RRGGBB"));
});

t("shadow_blur and shadow_strength: whole numbers in range", () => {
  for (const v of [0, 1, 4, 19, 20]) assert.equal(ok({ shadow_blur: v }), { shadow_blur: v });
  for (const v of [0, 1, 50, 70, 100]) assert.equal(ok({ shadow_strength: v }), { shadow_strength: v });
  for (const v of [
    -1,
    21,
    0.5,
    4.2,
    1e9,
    -1e9,
    Number.MAX_VALUE,
    NaN,
    Infinity,
    -Infinity,
    "4",
    null,
    true,
    [4],
    { v: 4 },
  ])
    badField("shadow_blur", v);
  for (const v of [-1, 101, 70.5, 1e300, NaN, Infinity, "70", null, false, [70], {}]) badField("shadow_strength", v);
  assert.equal(ok({ shadow_blur: -0 }), { shadow_blur: 0 });
  assert.ok(Object.is(ok({ shadow_blur: -0 }).shadow_blur, 0), "-0 is stored as 0");
  assert.is(bad({ shadow_blur: 21 }), CAPTION_ERRORS.styleInvalid("shadow_blur", "a whole number from 0 to 20"));
});

t("shadow_x and shadow_y: whole and half numbers from -20 to 20, or null", () => {
  for (const f of ["shadow_x", "shadow_y"]) {
    for (const v of [-20, -19.5, -1, -0.5, 0, 0.5, 2, 2.5, 19.5, 20, null]) assert.equal(ok({ [f]: v }), { [f]: v });
    for (const v of [-20.5, 20.5, 21, -21, 2.25, 0.1, 1e-9, 1e6, NaN, Infinity, "2", "null", true, [2], { x: 2 }])
      badField(f, v);
    assert.is(bad({ [f]: 25 }), CAPTION_ERRORS.styleInvalid(f, "a whole or half number from -20 to 20, or null"));
  }
});

t("position_y: any number from 0 to 100 (the burn clamps to 5-95)", () => {
  for (const v of [0, 0.5, 5, 33.3, 50, 95, 99.99, 100]) assert.equal(ok({ position_y: v }), { position_y: v });
  for (const v of [-0.01, 100.01, 101, -5, 1e308, NaN, Infinity, "50", null, [50], { y: 50 }])
    badField("position_y", v);
});

t("unknown fields are a 400 naming the field, before any value is checked", () => {
  assert.is(bad({ colour: "#FFFFFF" }), CAPTION_ERRORS.styleUnknownField("colour"));
  assert.is(bad({ size: "huge", extra: 1 }), CAPTION_ERRORS.styleUnknownField("extra"));
  assert.is(bad({ preset: "tiktok" }), CAPTION_ERRORS.styleUnknownField("preset"));
  assert.is(bad({ Font: "inter" }), CAPTION_ERRORS.styleUnknownField("Font"));
  assert.is(bad({ "": 1 }), CAPTION_ERRORS.styleUnknownField(""));
  // A JSON body's "__proto__" and "constructor" are own keys: unknown, not a way into the prototype.
  assert.is(bad(JSON.parse('{"__proto__": {"size": "large"}}')), CAPTION_ERRORS.styleUnknownField("__proto__"));
  assert.is(bad(JSON.parse('{"constructor": {"prototype": {}}}')), CAPTION_ERRORS.styleUnknownField("constructor"));
  assert.is(({} as Record<string, unknown>).size, undefined);
  // A very long unknown key is cut in the message.
  const long = "k".repeat(10_000);
  assert.ok(bad({ [long]: 1 }).length < 200);
});

t("a style that is not a plain object is a 400", () => {
  for (const v of [
    null,
    undefined,
    "",
    "{}",
    '{"size":"large"}',
    0,
    1,
    true,
    [],
    [{ size: "large" }],
    new Date(0),
    new Map(),
    () => 1,
  ]) {
    assert.is(bad(v), CAPTION_ERRORS.styleNotObject, String(v));
  }
  // An object without a prototype is fine (some parsers make them).
  const bare = Object.create(null) as Record<string, unknown>;
  bare.size = "large";
  assert.equal(ok(bare), { size: "large" });
});

t(
  "the first bad field is reported (unknown fields first, then the spec's order); values come back in the spec's order",
  () => {
    assert.is(bad({ case: "title", size: "huge" }), CAPTION_ERRORS.styleInvalid("size", "small, medium, large"));
    assert.equal(Object.keys(ok({ case: "upper", font: "anton", shadow_y: 3, size: "large" })), [
      "font",
      "size",
      "shadow_y",
      "case",
    ]);
    // Only the fields given come back.
    assert.equal(ok({ shadow_x: null }), { shadow_x: null });
  },
);

t("presets: the spec's tiktok, the minimal look, both valid as they are", () => {
  assert.equal(
    PRESETS.map((p) => p.key),
    ["tiktok", "minimal"],
  );
  const tiktok = PRESETS[0]!;
  assert.is(tiktok.label, "TikTok");
  assert.equal(tiktok.style, SPEC_TIKTOK_STYLE);
  // "a white grotesque face with a stroked face"
  assert.ok(fontByKey(tiktok.style.font)!.embolden > 0);
  assert.is(fontByKey(tiktok.style.font)!.category, "clean");

  const minimal = PRESETS[1]!;
  assert.is(minimal.label, "Minimal");
  assert.is(minimal.style.case, "lower");
  assert.is(minimal.style.chunking, "line");
  assert.ok(["bold", "clean"].includes(fontByKey(minimal.style.font)!.category));
  assert.match(fontByKey(minimal.style.font)!.file, /_700Bold\.ttf$/, "a bold face");
  assert.is(minimal.style.outline, "none");
  assert.ok(minimal.style.shadow !== "none" && minimal.style.shadow_blur >= 6, "a soft halo: a blurred shadow");

  for (const p of PRESETS) {
    assert.equal(Object.keys(p.style), [...STYLE_FIELDS]);
    // A preset can be sent as it is, and comes back unchanged.
    assert.equal(ok({ ...p.style }), p.style);
    assert.equal(resolveStyle(ok(JSON.parse(JSON.stringify(p.style)))), p.style);
    assert.ok(Object.isFrozen(p.style));
  }
});

t("resolveStyle merges a checked partial onto the default", () => {
  assert.equal(resolveStyle({ size: "large", shadow_x: 3 }), { ...SPEC_DEFAULT_STYLE, size: "large", shadow_x: 3 });
  assert.equal(resolveStyle({ size: undefined }), SPEC_DEFAULT_STYLE);
  assert.equal(resolveStyle(ok({ color: "#abcdef", position: "custom", position_y: 12.5 })), {
    ...SPEC_DEFAULT_STYLE,
    color: "#ABCDEF",
    position: "custom",
    position_y: 12.5,
  });
  const r = resolveStyle({});
  r.size = "large";
  assert.is(DEFAULT_STYLE.size, "medium", "the result is a fresh object");
  assert.equal(Object.keys(resolveStyle({ case: "upper" })), [...STYLE_FIELDS]);
});

t("GET /captions/style-options body: exactly the spec's fields and values", () => {
  const body = styleOptionsBody(25);
  assert.equal(Object.keys(body), [
    "fonts",
    "presets",
    "chunking",
    "cases",
    "sizes",
    "outlines",
    "shadows",
    "positions",
    "position_y",
    "shadow_blur",
    "shadow_x",
    "shadow_y",
    "shadow_strength",
    "default",
    "credits",
    "upload",
    "retention",
  ]);
  const fonts = body.fonts as Array<Record<string, unknown>>;
  assert.is(fonts.length, 62);
  for (const [i, f] of fonts.entries()) {
    assert.equal(Object.keys(f), ["key", "label", "file", "css_family", "embolden", "category"]);
    const entry = FONTS[i]!;
    assert.equal(f, {
      key: entry.key,
      label: entry.label,
      file: entry.file,
      css_family: entry.css_family,
      embolden: entry.embolden,
      category: entry.category,
    });
    assert.is(typeof f.embolden, "number");
  }
  assert.not.ok(JSON.stringify(body).includes("node_modules"), "no path on disk");
  assert.equal(
    new Set(fonts.map((f) => f.category)),
    new Set(["clean", "bold", "fun", "serif", "handwritten", "retro"]),
  );
  assert.equal(
    body.presets,
    PRESETS.map((p) => ({ key: p.key, label: p.label, style: { ...p.style } })),
  );
  assert.equal(body.chunking, ["words", "phrases", "line"]);
  assert.equal(body.cases, ["normal", "lower", "upper"]);
  assert.equal(body.sizes, ["small", "medium", "large"]);
  assert.equal(body.outlines, ["none", "thin", "medium", "thick"]);
  assert.equal(body.shadows, ["none", "thin", "medium", "thick"]);
  assert.equal(body.positions, ["bottom", "middle", "top", "custom"]);
  assert.equal(body.position_y, { min: 5, max: 95, default: 50 });
  assert.equal(body.shadow_blur, { min: 0, max: 20, default: 0, step: 1 });
  assert.equal(body.shadow_x, { min: -20, max: 20, default: null, step: 1 });
  assert.equal(body.shadow_y, { min: -20, max: 20, default: null, step: 1 });
  assert.equal(body.shadow_strength, { min: 0, max: 100, default: 100, step: 1 });
  assert.equal(body.default, SPEC_DEFAULT_STYLE);
  assert.is(body.credits, 25);
  assert.is(styleOptionsBody(28).credits, 28);
  assert.equal(body.upload, {
    chunked: true,
    chunk_size: 8388608,
    max_bytes: 1000000000,
    max_seconds: 1800,
    single_shot_max_bytes: 95000000,
  });
  assert.equal(body.retention, { captioned_output_days: 14, uploaded_source_days: 2, guaranteed: false });
  // Every value listed is accepted by the check (one table), and the default font is in the list.
  assert.ok(fonts.some((f) => f.key === (body.default as CaptionStyle).font));
  for (const f of fonts) ok({ font: f.key });
  // A caller mutating the body cannot change the tables.
  (body.default as Record<string, unknown>).size = "large";
  (body.chunking as string[]).push("x");
  (body.presets as Array<{ style: Record<string, unknown> }>)[0]!.style.size = "small";
  assert.equal(styleOptionsBody(25).default, SPEC_DEFAULT_STYLE);
  assert.equal((styleOptionsBody(25).chunking as string[]).length, 3);
  assert.is(PRESETS[0]!.style.size, "medium");
});

t.run();
