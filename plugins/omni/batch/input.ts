// The batch request (spec part 3, "Omni batch"): every rule of POST /omni/script-runner checked before the
// charge, the sections' reference images decoded where a 413 can be told apart from a 400.

import { ApiError, checkPicture, decodeImageBase64, partnerJobIdField, type VideoFrame } from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import {
  ASPECT_RATIOS,
  DEFAULT_SECTION_DURATION,
  DURATIONS,
  LIMITS,
  type OmniAspectRatio,
  type OmniDuration,
} from "../prices.ts";

export interface SectionInput {
  id: string | null;
  title: string | null;
  content: string;
  characterId: string | null;
  duration: OmniDuration;
  /** Base64 as sent (checked for size and kind in the handler, where a 413 can be told apart). */
  imageBase64: string | null;
}

const optionalString = (v: unknown) => v === undefined || v === null || typeof v === "string";

export const BatchInput = z
  .object({
    character_id: z.unknown().optional().meta({ type: "string" }),
    sections: z
      .unknown()
      .optional()
      .meta({
        type: "array",
        minItems: LIMITS.sectionsMin,
        maxItems: LIMITS.sectionsMax,
        items: {
          type: "object",
          required: ["content"],
          properties: {
            id: { type: "string" },
            title: { type: "string" },
            content: { type: "string", maxLength: LIMITS.sectionContentChars },
            character_id: { type: "string" },
            duration: { type: "integer", enum: [...DURATIONS], default: DEFAULT_SECTION_DURATION },
            image_base64: { type: "string" },
          },
        },
      }),
    aspect_ratio: z
      .unknown()
      .optional()
      .meta({ type: "string", enum: [...ASPECT_RATIOS], default: ASPECT_RATIOS[0] }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["character_id", "sections"] })
  .transform((raw, c) => {
    const fail = (message: string) => (c.addIssue({ code: "custom", message }), z.NEVER);
    if (typeof raw.character_id !== "string" || raw.character_id.trim() === "")
      return fail(OMNI_ERRORS.characterIdRequired);
    const list = raw.sections;
    if (!Array.isArray(list) || list.length < LIMITS.sectionsMin || list.length > LIMITS.sectionsMax)
      return fail(OMNI_ERRORS.sectionsRequired);
    const sections: SectionInput[] = [];
    for (const [i, s] of list.entries()) {
      if (s === null || typeof s !== "object" || Array.isArray(s)) return fail(OMNI_ERRORS.sectionContentRequired(i));
      const o = s as Record<string, unknown>;
      if (typeof o.content !== "string" || o.content.trim() === "") return fail(OMNI_ERRORS.sectionContentRequired(i));
      if (o.content.length > LIMITS.sectionContentChars) return fail(OMNI_ERRORS.sectionContentTooLong(i));
      for (const field of ["id", "title", "character_id", "image_base64"])
        if (!optionalString(o[field])) return fail(OMNI_ERRORS.sectionField(i, field));
      const duration = o.duration ?? DEFAULT_SECTION_DURATION;
      if (typeof duration !== "number" || !(DURATIONS as readonly number[]).includes(duration))
        return fail(OMNI_ERRORS.sectionDuration(i));
      sections.push({
        id: (o.id as string | undefined) ?? null,
        title: (o.title as string | undefined) ?? null,
        content: o.content,
        characterId: (o.character_id as string | undefined) || null,
        duration: duration as OmniDuration,
        imageBase64: (o.image_base64 as string | undefined) || null,
      });
    }
    const aspect = raw.aspect_ratio ?? ASPECT_RATIOS[0];
    if (typeof aspect !== "string" || !(ASPECT_RATIOS as readonly string[]).includes(aspect))
      return fail(OMNI_ERRORS.invalidAspectRatio);
    return {
      characterId: raw.character_id,
      sections,
      aspectRatio: aspect as OmniAspectRatio,
      partnerJobId: raw.partner_job_id,
    };
  });

/** Each section's reference image decoded: 413 over 20 MB each or 72 MB together, 400 when not an image. */
export function sectionImages(sections: readonly SectionInput[]): Array<VideoFrame | null> {
  let total = 0;
  return sections.map((s, i) => {
    if (!s.imageBase64) return null;
    const decoded = decodeImageBase64(s.imageBase64, LIMITS.imageMaxBytes);
    if (!decoded.ok)
      throw decoded.reason === "too_large"
        ? new ApiError(413, OMNI_ERRORS.sectionImageTooLarge(i))
        : new ApiError(400, OMNI_ERRORS.sectionImage(i));
    if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, OMNI_ERRORS.sectionImage(i)); // over the pixel budget (lib/media/budgets.ts)
    total += decoded.image.bytes.byteLength;
    if (total > LIMITS.imagesMaxTotalBytes) throw new ApiError(413, OMNI_ERRORS.sectionImagesTooLarge);
    return decoded.image;
  });
}
