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

const row = (
  key: string,
  label: string,
  inPackage: string,
  css_family: string,
  embolden: number,
  category: Category,
  licence: FontLicence,
): Row => ({
  key,
  label,
  inPackage,
  css_family,
  embolden,
  category,
  licence,
});

// The key is also the package name under @expo-google-fonts/.
const ROWS: readonly Row[] = [
  // clean
  row("inter", "Inter", "400Regular/Inter_400Regular.ttf", "Inter", 0.05, "clean", "OFL-1.1"),
  row("roboto", "Roboto Bold", "700Bold/Roboto_700Bold.ttf", "Roboto", 0, "clean", "OFL-1.1"),
  row("open-sans", "Open Sans Bold", "700Bold/OpenSans_700Bold.ttf", "Open Sans", 0, "clean", "OFL-1.1"),
  row("montserrat", "Montserrat Bold", "700Bold/Montserrat_700Bold.ttf", "Montserrat", 0, "clean", "OFL-1.1"),
  row("poppins", "Poppins Bold", "700Bold/Poppins_700Bold.ttf", "Poppins", 0, "clean", "OFL-1.1"),
  row("lato", "Lato Bold", "700Bold/Lato_700Bold.ttf", "Lato", 0, "clean", "OFL-1.1"),
  row("figtree", "Figtree Bold", "700Bold/Figtree_700Bold.ttf", "Figtree", 0, "clean", "OFL-1.1"),
  row("dm-sans", "DM Sans Bold", "700Bold/DMSans_700Bold.ttf", "DM Sans", 0, "clean", "OFL-1.1"),
  row("work-sans", "Work Sans Bold", "700Bold/WorkSans_700Bold.ttf", "Work Sans", 0, "clean", "OFL-1.1"),
  row(
    "space-grotesk",
    "Space Grotesk Bold",
    "700Bold/SpaceGrotesk_700Bold.ttf",
    "Space Grotesk",
    0,
    "clean",
    "OFL-1.1",
  ),
  row(
    "atkinson-hyperlegible",
    "Atkinson Hyperlegible Bold",
    "700Bold/AtkinsonHyperlegible_700Bold.ttf",
    "Atkinson Hyperlegible",
    0,
    "clean",
    "OFL-1.1",
  ),
  row(
    "ibm-plex-sans",
    "IBM Plex Sans",
    "400Regular/IBMPlexSans_400Regular.ttf",
    "IBM Plex Sans",
    0,
    "clean",
    "OFL-1.1",
  ),
  // bold
  row("anton", "Anton", "400Regular/Anton_400Regular.ttf", "Anton", 0, "bold", "OFL-1.1"),
  row("bebas-neue", "Bebas Neue", "400Regular/BebasNeue_400Regular.ttf", "Bebas Neue", 0, "bold", "OFL-1.1"),
  row(
    "archivo-black",
    "Archivo Black",
    "400Regular/ArchivoBlack_400Regular.ttf",
    "Archivo Black",
    0,
    "bold",
    "OFL-1.1",
  ),
  row("oswald", "Oswald Bold", "700Bold/Oswald_700Bold.ttf", "Oswald", 0, "bold", "OFL-1.1"),
  row(
    "league-spartan",
    "League Spartan Bold",
    "700Bold/LeagueSpartan_700Bold.ttf",
    "League Spartan",
    0,
    "bold",
    "OFL-1.1",
  ),
  row("russo-one", "Russo One", "400Regular/RussoOne_400Regular.ttf", "Russo One", 0, "bold", "OFL-1.1"),
  row(
    "rubik-mono-one",
    "Rubik Mono One",
    "400Regular/RubikMonoOne_400Regular.ttf",
    "Rubik Mono One",
    0,
    "bold",
    "OFL-1.1",
  ),
  row(
    "league-gothic",
    "League Gothic",
    "400Regular/LeagueGothic_400Regular.ttf",
    "League Gothic",
    0,
    "bold",
    "OFL-1.1",
  ),
  row("teko", "Teko Bold", "700Bold/Teko_700Bold.ttf", "Teko", 0, "bold", "OFL-1.1"),
  row("unbounded", "Unbounded Bold", "700Bold/Unbounded_700Bold.ttf", "Unbounded", 0, "bold", "OFL-1.1"),
  // fun
  row("bangers", "Bangers", "400Regular/Bangers_400Regular.ttf", "Bangers", 0, "fun", "OFL-1.1"),
  row("luckiest-guy", "Luckiest Guy", "400Regular/LuckiestGuy_400Regular.ttf", "Luckiest Guy", 0, "fun", "Apache-2.0"),
  row("chewy", "Chewy", "400Regular/Chewy_400Regular.ttf", "Chewy", 0, "fun", "Apache-2.0"),
  row("fredoka", "Fredoka Bold", "700Bold/Fredoka_700Bold.ttf", "Fredoka", 0, "fun", "OFL-1.1"),
  row(
    "bubblegum-sans",
    "Bubblegum Sans",
    "400Regular/BubblegumSans_400Regular.ttf",
    "Bubblegum Sans",
    0,
    "fun",
    "OFL-1.1",
  ),
  row("baloo-2", "Baloo 2 Bold", "700Bold/Baloo2_700Bold.ttf", "Baloo 2", 0, "fun", "OFL-1.1"),
  row("lilita-one", "Lilita One", "400Regular/LilitaOne_400Regular.ttf", "Lilita One", 0, "fun", "OFL-1.1"),
  row("comic-neue", "Comic Neue Bold", "700Bold/ComicNeue_700Bold.ttf", "Comic Neue", 0, "fun", "OFL-1.1"),
  row("carter-one", "Carter One", "400Regular/CarterOne_400Regular.ttf", "Carter One", 0, "fun", "OFL-1.1"),
  row("creepster", "Creepster", "400Regular/Creepster_400Regular.ttf", "Creepster", 0, "fun", "OFL-1.1"),
  // serif
  row(
    "playfair-display",
    "Playfair Display Bold",
    "700Bold/PlayfairDisplay_700Bold.ttf",
    "Playfair Display",
    0,
    "serif",
    "OFL-1.1",
  ),
  row("young-serif", "Young Serif", "400Regular/YoungSerif_400Regular.ttf", "Young Serif", 0, "serif", "OFL-1.1"),
  row("lora", "Lora Bold", "700Bold/Lora_700Bold.ttf", "Lora", 0, "serif", "OFL-1.1"),
  row(
    "libre-baskerville",
    "Libre Baskerville Bold",
    "700Bold/LibreBaskerville_700Bold.ttf",
    "Libre Baskerville",
    0,
    "serif",
    "OFL-1.1",
  ),
  row("eb-garamond", "EB Garamond Bold", "700Bold/EBGaramond_700Bold.ttf", "EB Garamond", 0, "serif", "OFL-1.1"),
  row("crimson-text", "Crimson Text Bold", "700Bold/CrimsonText_700Bold.ttf", "Crimson Text", 0, "serif", "OFL-1.1"),
  row("pt-serif", "PT Serif Bold", "700Bold/PTSerif_700Bold.ttf", "PT Serif", 0, "serif", "OFL-1.1"),
  row(
    "dm-serif-display",
    "DM Serif Display",
    "400Regular/DMSerifDisplay_400Regular.ttf",
    "DM Serif Display",
    0,
    "serif",
    "OFL-1.1",
  ),
  row(
    "abril-fatface",
    "Abril Fatface",
    "400Regular/AbrilFatface_400Regular.ttf",
    "Abril Fatface",
    0,
    "serif",
    "OFL-1.1",
  ),
  row("roboto-slab", "Roboto Slab Bold", "700Bold/RobotoSlab_700Bold.ttf", "Roboto Slab", 0, "serif", "Apache-2.0"),
  // handwritten
  row("caveat", "Caveat Bold", "700Bold/Caveat_700Bold.ttf", "Caveat", 0, "handwritten", "OFL-1.1"),
  row("pacifico", "Pacifico", "400Regular/Pacifico_400Regular.ttf", "Pacifico", 0, "handwritten", "OFL-1.1"),
  row(
    "dancing-script",
    "Dancing Script Bold",
    "700Bold/DancingScript_700Bold.ttf",
    "Dancing Script",
    0,
    "handwritten",
    "OFL-1.1",
  ),
  row(
    "permanent-marker",
    "Permanent Marker",
    "400Regular/PermanentMarker_400Regular.ttf",
    "Permanent Marker",
    0,
    "handwritten",
    "Apache-2.0",
  ),
  row(
    "shadows-into-light",
    "Shadows Into Light",
    "400Regular/ShadowsIntoLight_400Regular.ttf",
    "Shadows Into Light",
    0.05,
    "handwritten",
    "OFL-1.1",
  ),
  row(
    "indie-flower",
    "Indie Flower",
    "400Regular/IndieFlower_400Regular.ttf",
    "Indie Flower",
    0.04,
    "handwritten",
    "OFL-1.1",
  ),
  row("kalam", "Kalam Bold", "700Bold/Kalam_700Bold.ttf", "Kalam", 0, "handwritten", "OFL-1.1"),
  row("satisfy", "Satisfy", "400Regular/Satisfy_400Regular.ttf", "Satisfy", 0, "handwritten", "Apache-2.0"),
  row("amatic-sc", "Amatic SC Bold", "700Bold/AmaticSC_700Bold.ttf", "Amatic SC", 0.04, "handwritten", "OFL-1.1"),
  row(
    "patrick-hand",
    "Patrick Hand",
    "400Regular/PatrickHand_400Regular.ttf",
    "Patrick Hand",
    0,
    "handwritten",
    "OFL-1.1",
  ),
  // retro
  row(
    "press-start-2p",
    "Press Start 2P",
    "400Regular/PressStart2P_400Regular.ttf",
    "Press Start 2P",
    0,
    "retro",
    "OFL-1.1",
  ),
  row("vt323", "VT323", "400Regular/VT323_400Regular.ttf", "VT323", 0.04, "retro", "OFL-1.1"),
  row("monoton", "Monoton", "400Regular/Monoton_400Regular.ttf", "Monoton", 0, "retro", "OFL-1.1"),
  row("righteous", "Righteous", "400Regular/Righteous_400Regular.ttf", "Righteous", 0, "retro", "OFL-1.1"),
  row("audiowide", "Audiowide", "400Regular/Audiowide_400Regular.ttf", "Audiowide", 0, "retro", "OFL-1.1"),
  row("orbitron", "Orbitron Bold", "700Bold/Orbitron_700Bold.ttf", "Orbitron", 0, "retro", "OFL-1.1"),
  row("bungee", "Bungee", "400Regular/Bungee_400Regular.ttf", "Bungee", 0, "retro", "OFL-1.1"),
  row("lobster", "Lobster", "400Regular/Lobster_400Regular.ttf", "Lobster", 0, "retro", "OFL-1.1"),
  row(
    "special-elite",
    "Special Elite",
    "400Regular/SpecialElite_400Regular.ttf",
    "Special Elite",
    0.04,
    "retro",
    "Apache-2.0",
  ),
  row("silkscreen", "Silkscreen Bold", "700Bold/Silkscreen_700Bold.ttf", "Silkscreen", 0, "retro", "OFL-1.1"),
];

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
