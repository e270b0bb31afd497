// POST /generate-voiceover input: every rule of the spec, checked in one pass before any charge, in the
// order a partner fixes them (text, voice, model, format). The zod shape around it describes the fields
// for OpenAPI and GraphQL.
import { z } from "zod";
import { partnerJobIdField } from "mediagate/plugin";
import { VOICEOVER_ERRORS as E } from "./errors.ts";
import { DEFAULT_MODEL, DEFAULT_OUTPUT_FORMAT, MAX_TEXT_LENGTH, MODEL_IDS, OUTPUT_FORMAT_IDS, parseOutputFormat, voiceById, type ModelId, type OutputFormat, type Voice } from "./models.ts";

export const MAX_SOURCE_LENGTH = 200;

export interface VoiceoverRequest {
  text: string;
  /** Unicode code points of `text`, what the price counts. */
  charCount: number;
  voice: Voice;
  model: ModelId;
  format: OutputFormat;
  source: string;
}

type Check = { ok: true; value: VoiceoverRequest } | { ok: false; message: string };

export function checkVoiceoverRequest(raw: Record<string, unknown>): Check {
  const fail = (message: string): Check => ({ ok: false, message });
  if (typeof raw.text !== "string" || raw.text.trim() === "") return fail(E.textMissing);
  // Surrounding whitespace is neither spoken nor billed.
  const text = raw.text.trim();
  const charCount = [...text].length;
  if (charCount > MAX_TEXT_LENGTH) return fail(E.textTooLong);

  const voice = typeof raw.voice_id === "string" ? voiceById(raw.voice_id) : undefined;
  if (!voice) return fail(E.invalidVoice);

  const model = raw.model_id ?? DEFAULT_MODEL;
  if (typeof model !== "string" || !(MODEL_IDS as string[]).includes(model)) return fail(E.invalidModel);

  const formatId = raw.output_format ?? DEFAULT_OUTPUT_FORMAT;
  const format = typeof formatId === "string" ? parseOutputFormat(formatId) : null;
  if (!format) return fail(E.invalidOutputFormat);

  const source = raw.source ?? "";
  if (typeof source !== "string" || [...source].length > MAX_SOURCE_LENGTH) return fail(E.invalidSource);

  return { ok: true, value: { text, charCount, voice, model: model as ModelId, format, source } };
}

const described = <T extends Record<string, unknown>>(json: T) => z.unknown().optional().meta(json);

export const GenerateVoiceoverInput = z
  .object({
    // Optional to zod so a missing field reaches checkVoiceoverRequest and gets the spec's text; the
    // object's `required` below keeps them required in the documents.
    text: described({ type: "string", maxLength: MAX_TEXT_LENGTH, description: "text to speak" }),
    voice_id: described({ type: "string", description: "a voice_id from GET /voiceover/voices" }),
    model_id: described({ type: "string", enum: MODEL_IDS, default: DEFAULT_MODEL }),
    output_format: described({ type: "string", enum: OUTPUT_FORMAT_IDS, default: DEFAULT_OUTPUT_FORMAT }),
    source: described({ type: "string", maxLength: MAX_SOURCE_LENGTH, description: "free-text label returned by the list" }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["text", "voice_id"] })
  .transform((raw, ctx) => {
    const checked = checkVoiceoverRequest(raw as Record<string, unknown>);
    if (!checked.ok) {
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    }
    return { ...checked.value, partner_job_id: raw.partner_job_id };
  });
