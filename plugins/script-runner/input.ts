// The input of POST /script-runner and GET /script-runner. Each field is checked in the order the spec's errors
// name them; the script itself is parsed by the handler (parser.ts), after the model checks.

import { limitParam, offsetParam, PAGE_BOUNDS, partnerJobIdField } from "mediagate/plugin";
import { z } from "zod";
import { RUNNER_ERRORS } from "./errors.ts";
import { DEFAULT_NAME, LIMITS } from "./limits.ts";
import { DEFAULT_IMAGE_MODEL, DEFAULT_MODEL, IMAGE_MODEL_IDS, MODEL_IDS } from "./prices.ts";

export const RunInput = z
  .object({
    character_image_url: z
      .unknown()
      .optional()
      .meta({ type: "string", description: "public http(s) image URL; wins over the other sources" }),
    character_image_base64: z
      .unknown()
      .optional()
      .meta({ type: "string", description: "PNG/JPEG/WEBP as base64, a data: prefix is stripped, about 20 MB" }),
    prompt: z.unknown().optional().meta({
      type: "string",
      description: "the script: === SCENE: <name> ===, === DIALOGUE <n> ===, optionally === CHARACTER ===",
      maxLength: LIMITS.promptChars,
    }),
    name: z.unknown().optional().meta({ type: "string", maxLength: LIMITS.nameChars, default: DEFAULT_NAME }),
    use_as_character_reference: z.unknown().optional().meta({ type: "boolean", default: true }),
    model: z.unknown().optional().meta({ type: "string", enum: MODEL_IDS, default: DEFAULT_MODEL }),
    image_model: z.unknown().optional().meta({ type: "string", enum: IMAGE_MODEL_IDS, default: DEFAULT_IMAGE_MODEL }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["prompt"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(RUNNER_ERRORS.promptRequired);
    if (raw.prompt.length > LIMITS.promptChars) return fail(RUNNER_ERRORS.promptTooLong);
    const name = raw.name ?? DEFAULT_NAME;
    if (typeof name !== "string") return fail(RUNNER_ERRORS.nameType);
    if (name.length > LIMITS.nameChars) return fail(RUNNER_ERRORS.nameTooLong);
    const locked = raw.use_as_character_reference ?? true;
    if (typeof locked !== "boolean") return fail(RUNNER_ERRORS.useAsReference);
    const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
    return {
      prompt: raw.prompt,
      name: name.trim() || DEFAULT_NAME,
      locked,
      model: raw.model ?? DEFAULT_MODEL,
      imageModel: raw.image_model ?? DEFAULT_IMAGE_MODEL,
      imageUrl: text(raw.character_image_url),
      imageBase64: text(raw.character_image_base64),
      partnerJobId: raw.partner_job_id,
    };
  });

export const ListInput = z.object({ limit: limitParam(PAGE_BOUNDS.scriptRunner), offset: offsetParam });
