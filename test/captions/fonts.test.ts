// The caption font table: 62 real TTF files in the six categories of the spec, every file present, parsed
// with opentype.js and carrying the family name the table says; keys unique; the default font; readFont;
// every package of the table pinned exactly in package.json, with its licence file saying the table's licence.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  checkFonts,
  DEFAULT_FONT_KEY,
  FONT_SOURCES,
  FONTS,
  familyNamesOf,
  fontByKey,
  readFont,
} from "../../plugins/captions/render/fonts.ts";
import { FONT_CATEGORIES } from "../../plugins/captions/types.ts";

const t = suite("captions: fonts");
const ROOT = join(import.meta.dirname ?? "test/captions", "..", "..");

t("62 fonts, unique keys, files and labels, all six categories", () => {
  assert.is(FONTS.length, 62);
  assert.is(new Set(FONTS.map((f) => f.key)).size, 62);
  assert.is(new Set(FONTS.map((f) => f.path)).size, 62);
  assert.is(new Set(FONTS.map((f) => f.label)).size, 62);
  for (const c of FONT_CATEGORIES) assert.ok(FONTS.filter((f) => f.category === c).length >= 8, `category ${c}`);
  assert.equal(new Set(FONTS.map((f) => f.category)), new Set(FONT_CATEGORIES));
  for (const f of FONTS) {
    assert.match(f.key, /^[a-z0-9-]+$/);
    assert.match(f.file, /^[A-Za-z0-9]+_(400Regular|700Bold)\.ttf$/);
    assert.ok(f.path.endsWith(`/${f.file}`), f.key);
    assert.ok(f.path.startsWith("/"), "absolute path");
    assert.ok(f.embolden >= 0 && f.embolden <= 0.08, `${f.key} embolden ${f.embolden}`);
    assert.ok(f.label.length > 0 && f.css_family.length > 0);
  }
  // Fonts are listed category by category, in the spec's order of categories.
  const order = FONTS.map((f) => FONT_CATEGORIES.indexOf(f.category));
  assert.equal(
    order,
    [...order].sort((a, b) => a - b),
  );
});

t("every file exists, parses, and its family name (ID 1, and ID 16 when present) is css_family", async () => {
  assert.equal(await checkFonts({ parse: true }), []);
  assert.equal(await checkFonts(), []);
});

t("each file is a real TrueType font, not WOFF", async () => {
  for (const f of FONTS) {
    const b = await readFont(f);
    const tag = String.fromCharCode(...b.subarray(0, 4));
    assert.ok(tag === "\0\x01\0\0" || tag === "OTTO" || tag === "true", `${f.key}: ${JSON.stringify(tag)}`);
    assert.ok(b.byteLength > 10_000, f.key);
  }
});

t("fontByKey, the default font (a stroked clean grotesque), readFont caching", async () => {
  const def = fontByKey(DEFAULT_FONT_KEY)!;
  assert.ok(def);
  assert.is(def.category, "clean");
  assert.is(def.css_family, "Inter");
  assert.ok(def.embolden > 0, "the tiktok look strokes the default face");
  assert.is(fontByKey("nope"), undefined);
  assert.is(fontByKey("Inter"), undefined, "keys are case-sensitive");
  assert.is(fontByKey("__proto__"), undefined);
  assert.is(fontByKey("toString"), undefined);
  assert.is(fontByKey(42 as unknown as string), undefined);
  const a = await readFont(def);
  assert.is(await readFont(def), a, "read once per process");
  assert.equal(familyNamesOf(a).family, "Inter");
  let threw = false;
  try {
    await readFont({ ...def, path: join(ROOT, "no-such-font.ttf") });
  } catch {
    threw = true;
  }
  assert.ok(threw, "a missing file rejects");
});

t("the table is frozen", () => {
  assert.ok(Object.isFrozen(FONTS));
  assert.ok(Object.isFrozen(FONTS[0]));
});

t("every package is pinned exactly in package.json and its licence file matches the table", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  assert.is(FONT_SOURCES.length, 62);
  for (const s of FONT_SOURCES) {
    const pinned = pkg.dependencies[s.package];
    assert.ok(pinned && /^\d+\.\d+\.\d+$/.test(pinned), `${s.package} pinned exactly: ${pinned}`);
    const f = fontByKey(s.key)!;
    // <package>/<weight>/<file>: the licence file is at the package's root.
    const licence = readFileSync(join(dirname(dirname(f.path)), "LICENSE_FONT"), "utf8");
    if (s.licence === "OFL-1.1") assert.match(licence, /SIL Open Font License, Version 1\.1/);
    else assert.match(licence, /Apache License/);
  }
});

t.run();
