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

const SCENE = /^\s*===\s*scene\s*:\s*(.*?)\s*===\s*$/i;
const DIALOGUE = /^\s*===\s*dialogue(?:\s+(\S+))?\s*===\s*$/i;
const CHARACTER_BLOCK = /^\s*===\s*character\s*===\s*$/i;
const RESERVED = /^CHARACTER:(.*)$/i;

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
  const m = RESERVED.exec(lines[first]!.trimStart());
  if (!m) return { text: body.trim(), characters: [] };
  lines.splice(first, 1);
  return { text: lines.join("\n").trim(), characters: reservedNames(m[1]!) };
}

export function parseScript(prompt: string): ParseResult {
  type Block = { kind: "scene"; name: string; lines: string[] } | { kind: "dialogue"; n: string | undefined; lines: string[] } | { kind: "character"; lines: string[] };
  const blocks: Block[] = [];
  for (const line of prompt.replace(/\r\n?/g, "\n").split("\n")) {
    const scene = SCENE.exec(line);
    if (scene) {
      blocks.push({ kind: "scene", name: scene[1]!, lines: [] });
      continue;
    }
    const dialogue = DIALOGUE.exec(line);
    if (dialogue) {
      blocks.push({ kind: "dialogue", n: dialogue[1], lines: [] });
      continue;
    }
    if (CHARACTER_BLOCK.test(line)) {
      blocks.push({ kind: "character", lines: [] });
      continue;
    }
    blocks.at(-1)?.lines.push(line);
  }

  const sceneBlocks = blocks.filter((b) => b.kind === "scene");
  if (sceneBlocks.length === 0) return { ok: false, reason: "no_scenes" };
  if (sceneBlocks.length > MAX_SCENES) return { ok: false, reason: "too_many_scenes" };
  const dialogueBlocks = blocks.filter((b) => b.kind === "dialogue");
  if (dialogueBlocks.length === 0) return { ok: false, reason: "no_dialogue" };

  const dialogues: string[][] = sceneBlocks.map(() => []);
  for (const d of dialogueBlocks) {
    const n = d.n !== undefined && /^\d{1,3}$/.test(d.n) ? Number(d.n) : NaN;
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
