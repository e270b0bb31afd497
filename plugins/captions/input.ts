// The bodies of POST /captions and POST /captions/<job_id>/edit (spec part 2). The uploads' own inputs are
// uploads/operations.ts.
import { defineInput, field, isJobId } from "mediagate/plugin";
import { CAPTION_ERRORS } from "./errors.ts";
import { LIMITS } from "./limits.ts";
import { checkStyle, resolveStyle } from "./style/input.ts";
import type { Card } from "./types.ts";

export const CaptionInput = defineInput({
  fields: {
    video_job_id: field.string({ description: "job_id of one of your completed videos" }),
    style: field.object({ description: "Any subset of the caption style object" }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["video_job_id"],
  check(raw, fail) {
    const id = raw.video_job_id;
    if (id === undefined || id === null || id === "") fail(CAPTION_ERRORS.videoJobIdRequired);
    if (!isJobId(id)) fail(CAPTION_ERRORS.videoJobIdInvalid);
    const style = checkStyle(raw.style ?? {});
    if (!style.ok) return fail(style.message);
    return { video_job_id: id as string, style: resolveStyle(style.value), partner_job_id: raw.partner_job_id };
  },
});

/**
 * The edit: the whole chunk list, every constraint before anything is queued. An empty text removes that
 * caption; at least one must remain.
 */
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export const EditInput = defineInput({
  fields: {
    chunks: field.array({
      description: "The whole caption list: start and end in seconds, text (empty removes the caption)",
      maxItems: LIMITS.editMaxChunks,
    }),
  },
  required: ["chunks"],
  check(raw, fail): Card[] {
    const chunks = raw.chunks;
    if (!Array.isArray(chunks)) fail(CAPTION_ERRORS.chunksRequired);
    const list = chunks as unknown[];
    if (list.length > LIMITS.editMaxChunks) fail(CAPTION_ERRORS.tooManyChunks);
    const kept: Card[] = [];
    for (const chunk of list) {
      if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) fail(CAPTION_ERRORS.chunkInvalid);
      const { start, end, text } = chunk as Record<string, unknown>;
      if (!isNumber(start) || !isNumber(end) || typeof text !== "string") fail(CAPTION_ERRORS.chunkInvalid);
      if (!(0 <= (start as number) && (start as number) < (end as number) && (end as number) <= LIMITS.editMaxSeconds))
        fail(CAPTION_ERRORS.chunkTiming);
      const trimmed = (text as string).trim();
      if ([...trimmed].length > LIMITS.editMaxText) fail(CAPTION_ERRORS.chunkTextTooLong);
      if (trimmed) kept.push({ start: start as number, end: end as number, text: trimmed });
    }
    if (kept.length === 0) fail(CAPTION_ERRORS.noCaptionLeft);
    return kept.sort((a, b) => a.start - b.start || a.end - b.end);
  },
});
