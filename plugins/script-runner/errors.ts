// Every text the Script Runner answers with. The spec (part 3 "Errors") names the cases without their texts;
// the wording is ours, with the spec's own words where it has them ("too many scenes (max 20)").
import { LIMITS } from "./limits.ts";
import { MAX_SCENES } from "./parser.ts";

export const RUNNER_ERRORS = {
  promptRequired: "Please provide a script in the prompt",
  // The spec's category is "invalid prompt"; the figure is ours (limits.ts says why).
  promptTooLong: `Invalid prompt: the script is longer than ${LIMITS.promptChars} characters`,
  noScenes: "Invalid prompt: no scenes found. Start each scene with a line === SCENE: <name> ===",
  noDialogue: "Invalid prompt: no dialogues found. Add === DIALOGUE <n> === blocks for your scenes",
  badDialogue: (n: string) =>
    `Invalid prompt: === DIALOGUE ${n} === does not name one of the scenes (use its number, 1 for the first)`,
  tooManyScenes: `Too many scenes (max ${MAX_SCENES})`,
  noCharacter: "No character source: provide character_image_url, character_image_base64 or a === CHARACTER === block",
  invalidCharacterUrl: (reason: string) => `Invalid character_image_url: ${reason}`,
  characterBase64: "Unsupported character_image_base64: send a PNG, JPEG or WEBP image as base64",
  characterTooLarge: "character_image_base64 too large (max 20 MB)",
  nameType: "name must be a string",
  nameTooLong: `name must be at most ${LIMITS.nameChars} characters`,
  useAsReference: "use_as_character_reference must be true or false",
  invalidModel: "Invalid model",
  invalidImageModel: "Invalid image_model",
  insufficient: (n: number) => `Insufficient credits. Need ${n} credits.`,
  customNoRate: "This option is not available on your plan - contact us for a negotiated rate.",
  // Stored on a failed scene / run (sanitized).
  sceneFailed: "Scene generation failed. Its credits were refunded.",
  characterFailed: "The character could not be drawn from its description. Credits refunded.",
  runFailed: "Script Runner run failed. Credits refunded.",
} as const;

/** The parser's refusals (parser.ts), as the 400 texts. */
export const PARSE_ERRORS = {
  no_scenes: RUNNER_ERRORS.noScenes,
  no_dialogue: RUNNER_ERRORS.noDialogue,
  too_many_scenes: RUNNER_ERRORS.tooManyScenes,
} as const;
