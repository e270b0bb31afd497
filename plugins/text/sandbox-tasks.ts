// The tasks the text sandbox knows, by `TextGenerationRequest.task`. Each is a pure function of the request:
// the same request, the same answer, so tests and demos can predict it. An area adds its task as one entry of
// SANDBOX_TASKS; an unknown task gets `digest`, an answer built from the input alone (valid JSON when JSON is
// asked).
import { AD_ANALYSIS_TASK, SANDBOX_MARKERS, type TextGenerationRequest } from "mediagate/plugin";
import { writeAdAnalysis } from "./ad-analysis.ts";

export interface SandboxAnswer {
  text: string;
  /** One short sentence saying what the task did (GeneratedText.notes). */
  notes: string;
}

export type SandboxTask = (req: TextGenerationRequest) => SandboxAnswer;

/**
 * Words a content filter would block, removed by the prompt repair: whole words, any case. A hyphenated or
 * possessive word goes whole when one of its parts is here ("blood-soaked", "gore's"): removing only the part
 * would leave "-soaked". Words merely containing one stay ("bloodhound", "gunnel", "skill").
 */
export const UNSAFE_WORDS: ReadonlySet<string> = new Set([
  "gore",
  "gory",
  "blood",
  "bloody",
  "decapitated",
  "decapitation",
  "dismembered",
  "mutilated",
  "nude",
  "naked",
  "explicit",
  "kill",
  "killing",
  "murder",
  "weapon",
  "gun",
  "guns",
]);

/** A word: letters and digits, joined by inner hyphens or apostrophes. */
const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;

/**
 * Runs of spaces and tabs become one space, a space left before punctuation goes ("in , says" -> "in, says"),
 * line breaks stay single line breaks, and the ends are trimmed.
 */
export function collapseWhiteSpace(text: string): string {
  return text
    .replace(/[^\S\n]+/g, " ")
    .replace(/ ?\n\s*/g, "\n")
    .replace(/ ([,.!?;:])/g, "$1")
    .trim();
}

/** Prompt repair: removes the unsafe marker and the unsafe words, keeps everything else (other markers too). */
export function repairPrompt(input: string): SandboxAnswer {
  const removed: string[] = [];
  const note = (what: string) => void (removed.includes(what) || removed.push(what));
  let text = input;
  if (text.includes(SANDBOX_MARKERS.unsafe)) {
    text = text.split(SANDBOX_MARKERS.unsafe).join(" ");
    note(SANDBOX_MARKERS.unsafe);
  }
  text = text.replace(WORD, (word) => {
    const lower = word.toLowerCase();
    if (!lower.split(/['’-]/).some((part) => UNSAFE_WORDS.has(part))) return word;
    note(lower);
    return " ";
  });
  return {
    text: collapseWhiteSpace(text),
    notes: removed.length ? `Removed: ${removed.join(", ")}.` : "Nothing needed changing.",
  };
}

/** The first sentence of `text` (all of it when it has no sentence end). */
function firstSentence(flat: string): string {
  return flat.split(/(?<=[.!?])\s/)[0] ?? "";
}

/**
 * Any task the sandbox does not know: a digest of the input, its first sentence and word count. JSON mode:
 * `{"task", "summary", "words"}`; otherwise one paragraph, "<first sentence> (<n> words)".
 */
export function digest(req: TextGenerationRequest): SandboxAnswer {
  const flat = collapseWhiteSpace(req.input.replace(/\s+/g, " "));
  const summary = firstSentence(flat);
  const words = flat.match(WORD)?.length ?? 0;
  const text = req.json
    ? JSON.stringify({ task: req.task, summary, words })
    : `${summary}${summary ? " " : ""}(${words} word${words === 1 ? "" : "s"})`;
  return { text, notes: "Sandbox digest of the input." };
}

export const SANDBOX_TASKS: Readonly<Record<string, SandboxTask>> = {
  // JSON mode (no caller asks it today) gets the same answer as an object, so a JSON caller is never handed prose.
  "prompt-repair": (req) => {
    const answer = repairPrompt(req.input);
    return req.json
      ? { text: JSON.stringify({ prompt: answer.text, notes: answer.notes }), notes: answer.notes }
      : answer;
  },
  // Ad analysis: the four texts from the measured facts (ad-analysis.ts); always JSON, the only form it asks.
  [AD_ANALYSIS_TASK]: (req) => ({
    text: JSON.stringify(writeAdAnalysis(req.input)),
    notes: "Written from the measured facts.",
  }),
};

/** The task answering `name`: its entry, else the digest. */
export function sandboxTask(name: string): SandboxTask {
  return Object.hasOwn(SANDBOX_TASKS, name) ? SANDBOX_TASKS[name]! : digest;
}
