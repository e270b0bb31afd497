// POST /omni/characters' body (spec part 3, "Omni character"): its rules and texts, checked before anything
// is fetched or charged; the image's size, kind and pixel budget are the handler's (a 413 told apart).

import { partnerJobIdField } from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import { LIMITS } from "../prices.ts";

export const CreateCharacterInput = z
  .object({
    name: z.unknown().optional().meta({ type: "string", maxLength: LIMITS.nameChars }),
    description: z.unknown().optional().meta({ type: "string", maxLength: LIMITS.descriptionChars }),
    image_base64: z.unknown().optional().meta({
      type: "string",
      description: "PNG, JPEG or WebP as base64 (a data: prefix is tolerated), at most 20 MB",
    }),
    image_url: z.unknown().optional().meta({ type: "string", description: "public HTTPS reference image" }),
    voice_id: z.unknown().optional().meta({ type: "string" }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["name"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    const name = typeof raw.name === "string" ? raw.name.trim() : "";
    if (name === "") return fail(OMNI_ERRORS.characterNameRequired);
    if (name.length > LIMITS.nameChars) return fail(OMNI_ERRORS.characterNameTooLong);
    const description = raw.description ?? "";
    if (typeof description !== "string") return fail(OMNI_ERRORS.descriptionType);
    if (description.length > LIMITS.descriptionChars) return fail(OMNI_ERRORS.descriptionTooLong);
    const hasBase64 = raw.image_base64 !== undefined && raw.image_base64 !== null && raw.image_base64 !== "";
    const hasUrl = raw.image_url !== undefined && raw.image_url !== null && raw.image_url !== "";
    if (!hasBase64 && !hasUrl) return fail(OMNI_ERRORS.provideImage);
    if (hasBase64 && hasUrl) return fail(OMNI_ERRORS.bothImages);
    if (hasUrl && typeof raw.image_url !== "string") return fail(OMNI_ERRORS.invalidImageUrl("must be a string"));
    if (hasBase64 && typeof raw.image_base64 !== "string") return fail(OMNI_ERRORS.invalidImageBase64);
    const voiceId = raw.voice_id ?? null;
    if (voiceId !== null && typeof voiceId !== "string") return fail(OMNI_ERRORS.voicesNotFound);
    return {
      name,
      description,
      image: hasBase64
        ? ({ base64: raw.image_base64 as string } as const)
        : ({ url: raw.image_url as string } as const),
      voiceId: voiceId || null,
      partnerJobId: raw.partner_job_id,
    };
  });
