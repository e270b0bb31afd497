// POST /omni/voices' body (spec part 3, "Omni voice"): its rules and texts, checked before the sample is spoken.

import { partnerJobIdField } from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import { LIMITS } from "../prices.ts";
import { presetById, VOICE_PRESETS } from "./presets.ts";

const optionalText = (max: number, tooLong: string, type: string) =>
  z
    .unknown()
    .optional()
    .meta({ type: "string", maxLength: max })
    .transform((v, c) => {
      if (v === undefined || v === null) return "";
      if (typeof v !== "string") return (c.addIssue({ code: "custom", message: type }), z.NEVER);
      if (v.length > max) return (c.addIssue({ code: "custom", message: tooLong }), z.NEVER);
      return v;
    });

export const CreateVoiceInput = z
  .object({
    base_voice: z
      .unknown()
      .optional()
      .meta({ type: "string", enum: VOICE_PRESETS.map((p) => p.id) }),
    name: z.unknown().optional().meta({ type: "string", maxLength: LIMITS.nameChars }),
    description: optionalText(
      LIMITS.descriptionChars,
      OMNI_ERRORS.voiceDescriptionTooLong,
      OMNI_ERRORS.voiceDescriptionType,
    ),
    example_dialogue: optionalText(
      LIMITS.exampleDialogueChars,
      OMNI_ERRORS.exampleDialogueTooLong,
      OMNI_ERRORS.exampleDialogueType,
    ),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["base_voice", "name"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    const preset = typeof raw.base_voice === "string" ? presetById(raw.base_voice) : undefined;
    if (!preset) return fail(OMNI_ERRORS.unknownBaseVoice);
    const name = typeof raw.name === "string" ? raw.name.trim() : "";
    if (name === "") return fail(OMNI_ERRORS.voiceNameRequired);
    if (name.length > LIMITS.nameChars) return fail(OMNI_ERRORS.voiceNameTooLong);
    return {
      preset,
      name,
      description: raw.description,
      exampleDialogue: raw.example_dialogue,
      partnerJobId: raw.partner_job_id,
    };
  });
