// The Script Runner's script format (spec part 3, "Script Runner"): blocks headed `=== SCENE: <name> ===`,
// `=== DIALOGUE <n> ===` and optionally `=== CHARACTER ===`, each followed by its text up to the next heading.
//
// Choices where the spec does not show the rule, written down here:
// - `=== DIALOGUE <n> ===` belongs to scene n (1-based, in the order the scenes are written); several blocks
//   with the same n are joined in the order written, a blank line between them. n outside the scenes, or a
//   DIALOGUE without a number, makes the script invalid.
// - A scene's `setting` is its own block's text (after the reserved line, below), trimmed; its `dialogue` the
//   text of its DIALOGUE blocks, trimmed (empty when it has none). A script needs at least one scene and at
//   least one DIALOGUE block.
// - The reserved line: the first line of a scene's body that is not blank, when it reads `CHARACTER:` (any
//   case, no space before the colon) followed by names or `svc-<8hex>` ids, comma-separated: trimmed, empty
//   entries dropped, duplicates collapsed case-insensitively (the first spelling kept). It is metadata: stripped
//   from the setting, kept as `characters`. On any later line, or written `CHARACTER :`, it is scene text.
// - Headings are matched on whole lines, any case, spaces around the words allowed (`===  scene:  Dawn ===`);
//   text before the first heading is ignored. A second CHARACTER block is appended to the first.
// - A heading-like line that is none of the three (`=== NOTES ===`) is scene text of the block it is in.

export const MAX_SCENES = 20;

export interface ParsedScene {
  name: string;
  setting: string;
  dialogue: string;
  /** Names or ids of the reserved line (the run ignores them: it has one character source). */
  characters: string[];
}

export interface ParsedScript {
  scenes: ParsedScene[];
  /** The CHARACTER block's description, or null when there is none. */
  character: string | null;
}

export type ParseFailure = "no_scenes" | "no_dialogue" | "too_many_scenes" | "bad_dialogue";

export type ParseResult = { ok: true; script: ParsedScript } | { ok: false; reason: ParseFailure; detail?: string };

// Headings and the reserved line are read by scanning, not by regular expressions: the heading patterns
// (`^\s*===\s*scene\s*:\s*(.*?)\s*===\s*$`) backtracked cubically on a line of spaces, a 2,000-space line
// held the event loop 8.8 s (issue 45). The scan gives the same answers as those patterns did (test/script-
// runner/parser-scan.test.ts compares them): `\s` is what String.prototype.trim removes, words match in ASCII
// case only (the patterns had `i` without `u`), and a captured name or reserved list holds no line terminator.

/** One whitespace character, as `\s` has it (trim removes exactly those). */
const isSpace = (ch: string) => ch.trim() === "";
/** `.` of a pattern without the `s` flag: any character but a line terminator. */
const hasLineTerminator = (s: string) =>
  s.includes("\r") || s.includes("\n") || s.includes("\u2028") || s.includes("\u2029");

/** Whether `word` (lower-case ASCII) is at `at` in `s`, in any ASCII case. */
function wordAt(s: string, at: number, word: string): boolean {
  if (at + word.length > s.length) return false;
  for (let i = 0; i < word.length; i++) {
    let c = s.charCodeAt(at + i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== word.charCodeAt(i)) return false;
  }
  return true;
}

function skipSpaces(s: string, at: number): number {
  while (at < s.length && isSpace(s[at]!)) at++;
  return at;
}

/**
 * A heading line `=== <word><rest> ===`, spaces allowed anywhere around: the text between the word and the
 * closing `===` (untrimmed), or null when the line is not one of this word.
 */
function headingRest(line: string, word: string): string | null {
  const t = line.trim();
  if (!t.startsWith("===") || !t.endsWith("===")) return null;
  const at = skipSpaces(t, 3);
  if (!wordAt(t, at, word)) return null;
  const end = t.length - 3;
  const from = at + word.length;
  return from <= end ? t.slice(from, end) : null;
}

type Heading = { kind: "scene"; name: string } | { kind: "dialogue"; n: string | undefined } | { kind: "character" };

/** What a line heads, or null for a line of text. */
export function headingOf(line: string): Heading | null {
  const scene = headingRest(line, "scene");
  if (scene !== null) {
    const colon = skipSpaces(scene, 0);
    if (scene[colon] !== ":") return null;
    const name = scene.slice(colon + 1).trim();
    return hasLineTerminator(name) ? null : { kind: "scene", name };
  }
  const dialogue = headingRest(line, "dialogue");
  if (dialogue !== null) {
    const n = dialogue.trim();
    if (n === "") return { kind: "dialogue", n: undefined };
    // The number is one word, apart from the keyword.
    if (!isSpace(dialogue[0]!) || [...n].some(isSpace)) return null;
    return { kind: "dialogue", n };
  }
  const character = headingRest(line, "character");
  if (character !== null && character.trim() === "") return { kind: "character" };
  return null;
}

/** The names of a reserved line (`CHARACTER:` in any case, no space before the colon), or null for other text. */
function reservedList(line: string): string | null {
  if (!wordAt(line, 0, "character") || line[9] !== ":") return null;
  const list = line.slice(10);
  return hasLineTerminator(list) ? null : list;
}

/** The reserved line's names: trimmed, empty dropped, duplicates (any case) collapsed. */
export function reservedNames(list: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of list.split(",")) {
    const name = raw.trim();
    if (name === "" || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    out.push(name);
  }
  return out;
}

/** A scene body without its reserved first line, and the names that line held. */
export function stripReservedLine(body: string): { text: string; characters: string[] } {
  const lines = body.split("\n");
  const first = lines.findIndex((l) => l.trim() !== "");
  if (first < 0) return { text: "", characters: [] };
  // Leading indentation is not part of the rule's form; a space before the colon is (it keeps the line).
  const list = reservedList(lines[first]!.trimStart());
  if (list === null) return { text: body.trim(), characters: [] };
  lines.splice(first, 1);
  return { text: lines.join("\n").trim(), characters: reservedNames(list) };
}

/** One to three ASCII digits. */
const isSceneNumber = (n: string) => n.length >= 1 && n.length <= 3 && [...n].every((c) => c >= "0" && c <= "9");

export function parseScript(prompt: string): ParseResult {
  type Block =
    | { kind: "scene"; name: string; lines: string[] }
    | { kind: "dialogue"; n: string | undefined; lines: string[] }
    | { kind: "character"; lines: string[] };
  const blocks: Block[] = [];
  for (const line of prompt.replaceAll("\r\n", "\n").replaceAll("\r", "\n").split("\n")) {
    const heading = headingOf(line);
    if (heading) blocks.push({ ...heading, lines: [] });
    else blocks.at(-1)?.lines.push(line);
  }

  const sceneBlocks = blocks.filter((b) => b.kind === "scene");
  if (sceneBlocks.length === 0) return { ok: false, reason: "no_scenes" };
  if (sceneBlocks.length > MAX_SCENES) return { ok: false, reason: "too_many_scenes" };
  const dialogueBlocks = blocks.filter((b) => b.kind === "dialogue");
  if (dialogueBlocks.length === 0) return { ok: false, reason: "no_dialogue" };

  const dialogues: string[][] = sceneBlocks.map(() => []);
  for (const d of dialogueBlocks) {
    const n = d.n !== undefined && isSceneNumber(d.n) ? Number(d.n) : NaN;
    if (!(n >= 1 && n <= sceneBlocks.length)) return { ok: false, reason: "bad_dialogue", detail: d.n ?? "" };
    const text = d.lines.join("\n").trim();
    if (text) dialogues[n - 1]!.push(text);
  }
  const characterText = blocks
    .filter((b) => b.kind === "character")
    .map((b) => b.lines.join("\n").trim())
    .filter((t) => t !== "")
    .join("\n\n");

  return {
    ok: true,
    script: {
      scenes: sceneBlocks.map((s, i) => {
        const { text, characters } = stripReservedLine(s.lines.join("\n"));
        return { name: s.name, setting: text, dialogue: dialogues[i]!.join("\n\n"), characters };
      }),
      character: characterText === "" ? null : characterText,
    },
  };
}
