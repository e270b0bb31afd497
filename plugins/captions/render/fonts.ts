// The caption fonts (spec part 2 "Caption style object": 62 fonts in six categories), one table that
// style-options lists, the style check accepts, the card layout measures with and the burn draws with.
//
// Source: the @expo-google-fonts/* npm packages (exact versions in package.json). Each ships Google Fonts'
// static TTF instances (libass reads TTF/OTF; @fontsource ships only WOFF/WOFF2, which ffmpeg.wasm's FreeType
// may not open), so `npm install` is the whole install on Node and Deno, with no apt step. Fonts are under
// the SIL Open Font License 1.1 or the Apache License 2.0 (column `licence`); the packages' code is MIT.
//
// One file per key, always a 400 Regular or a 700 Bold instance: in those two the family name (name ID 1)
// is the family itself ("Roboto"), whereas a Medium or Black instance carries "Roboto Black" in ID 1 and
// "Roboto" only in ID 16, which libass and CSS would each read differently. `css_family` is that ID 1 name,
// checked against the file by checkFonts() and the tests.
//
// `embolden` strokes the glyphs in the text colour (a fraction of the font size): the default grotesque gets
// it for the tiktok look ("a white grotesque face with a stroked face"), and a few hairline faces
// (handwriting, pixel, typewriter) get it so they stay readable over moving video. Every other face: 0.
import { readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
// @ts-expect-error: opentype.js ships no type declarations; the few members used are typed below.
import opentypeModule from "opentype.js";
import type { FONT_CATEGORIES, FontEntry } from "../types.ts";

type Category = (typeof FONT_CATEGORIES)[number];
export type FontLicence = "OFL-1.1" | "Apache-2.0";

/** Where a font of the table comes from: the npm package (its version is pinned in package.json) and the licence of the font. */
export interface FontSource {
  key: string;
  package: string;
  licence: FontLicence;
}

/** Which static instance of the family a font's file is: 400 Regular, or 700 Bold (labelled "<family> Bold"). */
const REGULAR = "400Regular";
const BOLD = "700Bold";
type Weight = typeof REGULAR | typeof BOLD;

/**
 * One font: its key (also the package name under @expo-google-fonts/), its family (`css_family`), the instance,
 * then `embolden` (0 unless given) and the licence (OFL-1.1 unless given). The label and the file inside the
 * package follow from the family and the instance (`700Bold/PlayfairDisplay_700Bold.ttf`, "Playfair Display Bold").
 */
type Line = readonly [key: string, family: string, weight: Weight, embolden?: number, licence?: FontLicence];

// Category by category, in the order style-options lists them.
const TABLE: Readonly<Record<Category, readonly Line[]>> = {
  clean: [
    ["inter", "Inter", REGULAR, 0.05],
    ["roboto", "Roboto", BOLD],
    ["open-sans", "Open Sans", BOLD],
    ["montserrat", "Montserrat", BOLD],
    ["poppins", "Poppins", BOLD],
    ["lato", "Lato", BOLD],
    ["figtree", "Figtree", BOLD],
    ["dm-sans", "DM Sans", BOLD],
    ["work-sans", "Work Sans", BOLD],
    ["space-grotesk", "Space Grotesk", BOLD],
    ["atkinson-hyperlegible", "Atkinson Hyperlegible", BOLD],
    ["ibm-plex-sans", "IBM Plex Sans", REGULAR],
  ],
  bold: [
    ["anton", "Anton", REGULAR],
    ["bebas-neue", "Bebas Neue", REGULAR],
    ["archivo-black", "Archivo Black", REGULAR],
    ["oswald", "Oswald", BOLD],
    ["league-spartan", "League Spartan", BOLD],
    ["russo-one", "Russo One", REGULAR],
    ["rubik-mono-one", "Rubik Mono One", REGULAR],
    ["league-gothic", "League Gothic", REGULAR],
    ["teko", "Teko", BOLD],
    ["unbounded", "Unbounded", BOLD],
  ],
  fun: [
    ["bangers", "Bangers", REGULAR],
    ["luckiest-guy", "Luckiest Guy", REGULAR, 0, "Apache-2.0"],
    ["chewy", "Chewy", REGULAR, 0, "Apache-2.0"],
    ["fredoka", "Fredoka", BOLD],
    ["bubblegum-sans", "Bubblegum Sans", REGULAR],
    ["baloo-2", "Baloo 2", BOLD],
    ["lilita-one", "Lilita One", REGULAR],
    ["comic-neue", "Comic Neue", BOLD],
    ["carter-one", "Carter One", REGULAR],
    ["creepster", "Creepster", REGULAR],
  ],
  serif: [
    ["playfair-display", "Playfair Display", BOLD],
    ["young-serif", "Young Serif", REGULAR],
    ["lora", "Lora", BOLD],
    ["libre-baskerville", "Libre Baskerville", BOLD],
    ["eb-garamond", "EB Garamond", BOLD],
    ["crimson-text", "Crimson Text", BOLD],
    ["pt-serif", "PT Serif", BOLD],
    ["dm-serif-display", "DM Serif Display", REGULAR],
    ["abril-fatface", "Abril Fatface", REGULAR],
    ["roboto-slab", "Roboto Slab", BOLD, 0, "Apache-2.0"],
  ],
  handwritten: [
    ["caveat", "Caveat", BOLD],
    ["pacifico", "Pacifico", REGULAR],
    ["dancing-script", "Dancing Script", BOLD],
    ["permanent-marker", "Permanent Marker", REGULAR, 0, "Apache-2.0"],
    ["shadows-into-light", "Shadows Into Light", REGULAR, 0.05],
    ["indie-flower", "Indie Flower", REGULAR, 0.04],
    ["kalam", "Kalam", BOLD],
    ["satisfy", "Satisfy", REGULAR, 0, "Apache-2.0"],
    ["amatic-sc", "Amatic SC", BOLD, 0.04],
    ["patrick-hand", "Patrick Hand", REGULAR],
  ],
  retro: [
    ["press-start-2p", "Press Start 2P", REGULAR],
    ["vt323", "VT323", REGULAR, 0.04],
    ["monoton", "Monoton", REGULAR],
    ["righteous", "Righteous", REGULAR],
    ["audiowide", "Audiowide", REGULAR],
    ["orbitron", "Orbitron", BOLD],
    ["bungee", "Bungee", REGULAR],
    ["lobster", "Lobster", REGULAR],
    ["special-elite", "Special Elite", REGULAR, 0.04, "Apache-2.0"],
    ["silkscreen", "Silkscreen", BOLD],
  ],
};

interface Row {
  key: string;
  label: string;
  /** The file inside the package, `<weight folder>/<file name>`. */
  inPackage: string;
  css_family: string;
  embolden: number;
  category: Category;
  licence: FontLicence;
}

const ROWS: readonly Row[] = Object.entries(TABLE).flatMap(([category, lines]) =>
  lines.map(
    ([key, family, weight, embolden = 0, licence = "OFL-1.1"]): Row => ({
      key,
      label: weight === BOLD ? `${family} Bold` : family,
      inPackage: `${weight}/${family.replaceAll(" ", "")}_${weight}.ttf`,
      css_family: family,
      embolden,
      category: category as Category,
      licence,
    }),
  ),
);

/** The default font: Inter, a clean neo-grotesque, stroked (embolden) for the tiktok preset's look. */
export const DEFAULT_FONT_KEY = "inter";

const requireHere = createRequire(import.meta.url);
// The repository's own node_modules, when the package cannot be resolved (the check then reports the file missing).
const FALLBACK_MODULES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "node_modules");

function packageDir(pkg: string): string {
  try {
    return dirname(requireHere.resolve(`${pkg}/package.json`));
  } catch {
    return join(FALLBACK_MODULES, pkg);
  }
}

const packageOf = (key: string) => `@expo-google-fonts/${key}`;

/** Every caption font, in the order style-options lists them (category by category). `path` is never shown. */
export const FONTS: readonly FontEntry[] = Object.freeze(
  ROWS.map((r): FontEntry => {
    const file = r.inPackage.slice(r.inPackage.lastIndexOf("/") + 1);
    return Object.freeze({
      key: r.key,
      label: r.label,
      file,
      css_family: r.css_family,
      embolden: r.embolden,
      category: r.category,
      path: join(packageDir(packageOf(r.key)), r.inPackage),
    });
  }),
);

/** The package and licence of each font (docs/licences.md lists the font packages' licences). */
export const FONT_SOURCES: readonly FontSource[] = Object.freeze(
  ROWS.map((r) => Object.freeze({ key: r.key, package: packageOf(r.key), licence: r.licence })),
);

const byKey = new Map(FONTS.map((f) => [f.key, f]));

/** The font with this key, or undefined (keys are case-sensitive, as style-options lists them). */
export function fontByKey(key: string): FontEntry | undefined {
  return typeof key === "string" ? byKey.get(key) : undefined;
}

// A font file is read once per process and kept: 62 files of 24-480 KB (about 9 MB all together), and a
// burn hands the bytes to the media engine (ffmpeg.wasm needs them in its file system).
const bytesCache = new Map<string, Promise<Uint8Array>>();

/** The bytes of the font's file. Rejects when the file is missing (a failed read is not cached). */
export function readFont(entry: FontEntry): Promise<Uint8Array> {
  let hit = bytesCache.get(entry.path);
  if (!hit) {
    hit = readFile(entry.path).then((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
    hit.catch(() => bytesCache.delete(entry.path));
    bytesCache.set(entry.path, hit);
  }
  return hit;
}

interface OtFont {
  names: {
    windows?: Record<string, { en?: string } | undefined>;
    macintosh?: Record<string, { en?: string } | undefined>;
  };
}
const opentype = opentypeModule as { parse(buffer: ArrayBuffer): OtFont };

/** The family name inside a font file: name ID 1 (Windows platform, else Macintosh), and ID 16 when the file has one. */
export function familyNamesOf(bytes: Uint8Array): { family: string | null; typographic: string | null } {
  const font = opentype.parse(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const pick = (id: string) => font.names.windows?.[id]?.en ?? font.names.macintosh?.[id]?.en ?? null;
  return { family: pick("fontFamily"), typographic: pick("preferredFamily") };
}

/**
 * What is wrong with the font table on this machine (empty when nothing): a file that does not exist, and
 * with `parse` a file that does not parse or whose family name is not the table's `css_family`. Without
 * `parse` it only stats the files (cheap enough for boot); the tests parse all 62.
 */
export async function checkFonts(opts: { parse?: boolean } = {}): Promise<string[]> {
  const problems: string[] = [];
  for (const f of FONTS) {
    try {
      const s = await stat(f.path);
      if (!s.isFile() || s.size === 0) throw new Error("empty");
    } catch {
      problems.push(`${f.key}: font file missing (${f.path}); run npm install`);
      continue;
    }
    if (!opts.parse) continue;
    try {
      const { family, typographic } = familyNamesOf(await readFont(f));
      if (family !== f.css_family)
        problems.push(
          `${f.key}: the file's family is ${JSON.stringify(family)}, the table says ${JSON.stringify(f.css_family)}`,
        );
      else if (typographic !== null && typographic !== family)
        problems.push(
          `${f.key}: typographic family ${JSON.stringify(typographic)} differs from ${JSON.stringify(family)}`,
        );
    } catch (err) {
      problems.push(`${f.key}: font file does not parse (${(err as Error).message})`);
    }
  }
  return problems;
}
