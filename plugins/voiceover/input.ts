// POST /generate-voiceover input: every rule of the spec, checked in one pass before any charge, in the
// order a partner fixes them (text, voice, model, format). The fields beside it describe the body for
// OpenAPI and GraphQL.
import { defineInput, field } from "mediagate/plugin";
import { VOICEOVER_ERRORS } from "./errors.ts";
import {
  DEFAULT_MODEL,
  DEFAULT_OUTPUT_FORMAT,
  MAX_TEXT_LENGTH,
  MODEL_IDS,
  type ModelId,
  OUTPUT_FORMAT_IDS,
  parseOutputFormat,
  voiceById,
} from "./models.ts";

export const MAX_SOURCE_LENGTH = 200;

export const GenerateVoiceoverInput = defineInput({
  fields: {
    text: field.string({ maxLength: MAX_TEXT_LENGTH, description: "text to speak" }),
    voice_id: field.string({ description: "a voice_id from GET /voiceover/voices" }),
    model_id: field.string({ enum: MODEL_IDS, default: DEFAULT_MODEL }),
    output_format: field.string({ enum: OUTPUT_FORMAT_IDS, default: DEFAULT_OUTPUT_FORMAT }),
    source: field.string({ maxLength: MAX_SOURCE_LENGTH, description: "free-text label returned by the list" }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["text", "voice_id"],
  check(raw, fail) {
    if (typeof raw.text !== "string" || raw.text.trim() === "") return fail(VOICEOVER_ERRORS.textMissing);
    // Surrounding whitespace is neither spoken nor billed.
    const text = raw.text.trim();
    const charCount = [...text].length;
    if (charCount > MAX_TEXT_LENGTH) return fail(VOICEOVER_ERRORS.textTooLong);

    const voice = typeof raw.voice_id === "string" ? voiceById(raw.voice_id) : undefined;
    if (!voice) return fail(VOICEOVER_ERRORS.invalidVoice);

    const model = raw.model_id ?? DEFAULT_MODEL;
    if (typeof model !== "string" || !(MODEL_IDS as string[]).includes(model))
      return fail(VOICEOVER_ERRORS.invalidModel);

    const formatId = raw.output_format ?? DEFAULT_OUTPUT_FORMAT;
    const format = typeof formatId === "string" ? parseOutputFormat(formatId) : null;
    if (!format) return fail(VOICEOVER_ERRORS.invalidOutputFormat);

    const source = raw.source ?? "";
    if (typeof source !== "string" || [...source].length > MAX_SOURCE_LENGTH)
      return fail(VOICEOVER_ERRORS.invalidSource);

    return {
      text,
      /** Unicode code points of `text`, what the price counts. */
      charCount,
      voice,
      model: model as ModelId,
      format,
      source,
      partner_job_id: raw.partner_job_id,
    };
  },
});
