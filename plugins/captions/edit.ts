// POST /captions/<job_id>/edit's body (spec part 2): the whole chunk list, every constraint before anything
// is queued. An empty text removes that caption; at least one must remain.
import { defineInput, field } from "mediagate/plugin";
import { CAPTION_ERRORS } from "./errors.ts";
import { LIMITS } from "./limits.ts";
import type { Card } from "./types.ts";

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export const EditInput = defineInput({
  fields: {
    chunks: field.array({ description: "The whole caption list: start and end in seconds, text (empty removes the caption)", maxItems: LIMITS.editMaxChunks }),
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
      if (!(0 <= (start as number) && (start as number) < (end as number) && (end as number) <= LIMITS.editMaxSeconds)) fail(CAPTION_ERRORS.chunkTiming);
      const trimmed = (text as string).trim();
      if ([...trimmed].length > LIMITS.editMaxText) fail(CAPTION_ERRORS.chunkTextTooLong);
      if (trimmed) kept.push({ start: start as number, end: end as number, text: trimmed });
    }
    if (kept.length === 0) fail(CAPTION_ERRORS.noCaptionLeft);
    return kept.sort((a, b) => a.start - b.start || a.end - b.end);
  },
});
