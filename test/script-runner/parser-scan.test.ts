// The parser's heading and reserved-line scan (plugins/script-runner/parser.ts) against the regular
// expressions it replaced (kept here only as the reference: they backtrack cubically on long lines, so they
// only ever see short ones). Lines are generated from the pieces the patterns care about (spaces of every
// kind `\s` knows, line separators, `=` runs, the keywords in mixed case and look-alikes, colons, numbers,
// names), both as random strings and as heading templates, from a fixed seed.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { headingOf, stripReservedLine } from "../../plugins/script-runner/parser.ts";

const OLD = {
  scene: /^\s*===\s*scene\s*:\s*(.*?)\s*===\s*$/i,
  dialogue: /^\s*===\s*dialogue(?:\s+(\S+))?\s*===\s*$/i,
  character: /^\s*===\s*character\s*===\s*$/i,
  reserved: /^CHARACTER:(.*)$/i,
};

function oldHeading(line: string) {
  const scene = OLD.scene.exec(line);
  if (scene) return { kind: "scene", name: scene[1] };
  const dialogue = OLD.dialogue.exec(line);
  if (dialogue) return { kind: "dialogue", n: dialogue[1] };
  if (OLD.character.test(line)) return { kind: "character" };
  return null;
}

function oldStrip(body: string) {
  const lines = body.split("\n");
  const first = lines.findIndex((l) => l.trim() !== "");
  if (first < 0) return { text: "", characters: [] as string[] };
  const m = OLD.reserved.exec(lines[first]!.trimStart());
  if (!m) return { text: body.trim(), characters: [] as string[] };
  lines.splice(first, 1);
  const seen = new Set<string>();
  const characters: string[] = [];
  for (const raw of m[1]!.split(",")) {
    const name = raw.trim();
    if (name === "" || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    characters.push(name);
  }
  return { text: lines.join("\n").trim(), characters };
}

// mulberry32: a small seeded generator, so a failure names a line that comes back on the next run.
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPACES = [
  " ",
  "  ",
  "\t",
  "\v",
  "\f",
  "\u00a0",
  "\u1680",
  "\u2003",
  "\u202f",
  "\u3000",
  "\ufeff",
  "\u2028",
  "\u2029",
  "",
];
const WORDS = [
  "scene",
  "SCENE",
  "Scene",
  "sCeNe",
  "scenes",
  "dialogue",
  "DIALOGUE",
  "Dialogue",
  "dialog",
  "character",
  "CHARACTER",
  "Character",
  "characters",
  "notes",
  "\u017fcene",
  "\u212a",
  "DİALOGUE",
];
const PIECES = [
  "===",
  "==",
  "=",
  "====",
  ":",
  " :",
  ": ",
  "1",
  "2",
  "20",
  "007",
  "1000",
  "x",
  "Dawn",
  "a b",
  "é",
  "😀",
  ",",
  "svc-0a1b2c3d",
  "\r",
  "\n",
  ...SPACES,
  ...WORDS,
];

const t = suite("script parser: the scan gives the old patterns' answers");

t("random lines of the patterns' pieces", () => {
  const r = rng(45);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  let headings = 0;
  for (let i = 0; i < 60_000; i++) {
    // Half of them framed like a heading, so the patterns' inner parts get exercised, not only their ends.
    const inner = Array.from({ length: Math.floor(r() * 8) }, () => pick(PIECES)).join("");
    const line = r() < 0.5 ? inner : `${pick(SPACES)}===${inner}===${pick(SPACES)}`;
    if (line.includes("\n") || line.includes("\r")) continue; // lines come split on them
    const want = oldHeading(line);
    if (want) headings++;
    assert.equal(headingOf(line), want, JSON.stringify(line));
  }
  console.log(`  ${headings} random headings`);
  assert.ok(headings > 50, `only ${headings} headings among the random lines`);
});

t("heading templates with every spacing", () => {
  const r = rng(2026);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const ws = () => (r() < 0.5 ? "" : Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(SPACES)).join(""));
  const bits = [
    "",
    "x",
    "Dawn at sea",
    "1",
    "12",
    "a b",
    "=",
    "==",
    "===",
    "1===",
    ":",
    "é😀",
    "\u2028",
    "x\u2028y",
    "ab\u00a0cd",
  ];
  const bit = () => (r() < 0.4 ? "" : pick(bits));
  const counts = { scene: 0, dialogue: 0, character: 0 };
  for (let i = 0; i < 40_000; i++) {
    const word = pick(WORDS);
    const colon = r() < 0.7 ? ":" : pick(["", "::", "="]);
    const line = `${ws()}${pick(["===", "==", "===="])}${ws()}${word}${ws()}${r() < 0.5 ? colon : ""}${ws()}${bit()}${ws()}${bit()}${ws()}${pick(["===", "==", "===="])}${ws()}`;
    const want = oldHeading(line);
    if (want) counts[want.kind as keyof typeof counts]++;
    assert.equal(headingOf(line), want, JSON.stringify(line));
  }
  console.log(`  templates: ${JSON.stringify(counts)}`);
  assert.ok(counts.scene > 100 && counts.dialogue > 100 && counts.character > 50, JSON.stringify(counts));
});

t("reserved first lines", () => {
  const r = rng(7);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const heads = [
    "CHARACTER:",
    "character:",
    "Character :",
    "CHARACTER",
    "characters:",
    "\u212aHARACTER:",
    "CHARACTER\u00a0:",
    " CHARACTER:",
    "\u3000character:",
    "xCHARACTER:",
  ];
  const lists = ["", "Mia", " Mia, tom , , MIA, svc-0a1b2c3d", "a\u2028b", "a\rb", ",,,", "\u00a0Ada\u00a0"];
  let reserved = 0;
  for (let i = 0; i < 10_000; i++) {
    const body = [pick(["", "\n", "  \n"]), pick(heads), pick(lists), "\n", pick(["Text", "", "CHARACTER: Tom"])].join(
      "",
    );
    const want = oldStrip(body);
    if (want.characters.length) reserved++;
    assert.equal(stripReservedLine(body), want, JSON.stringify(body));
  }
  assert.ok(reserved > 100, `only ${reserved} reserved lines`);
});

t("the attack line is no heading, at once", () => {
  // The old pattern needs seconds for this; the scan is linear.
  for (const n of [2_000, 5_000, 100_000]) assert.is(headingOf(`===scene:${" ".repeat(n)}x`), null);
  assert.equal(headingOf(`===scene:${" ".repeat(100_000)}x ===`), { kind: "scene", name: "x" });
});

t.run();
