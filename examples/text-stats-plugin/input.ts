// The body and the success body of POST /text-stats. Zod 4 is a Standard Schema: the kernel validates with it
// (the first issue's message is the 400 text) and documents it in OpenAPI and GraphQL from the same value.

import { partnerJobIdField } from "mediagate/plugin";
import { z } from "zod";
import { MAX_CHARS, TEXT_STATS_ERRORS } from "./errors.ts";

export const TextStatsInput = z.object({
  text: z
    .string({ error: TEXT_STATS_ERRORS.text })
    .trim()
    .min(1, { error: TEXT_STATS_ERRORS.text })
    .max(MAX_CHARS, { error: TEXT_STATS_ERRORS.tooLong }),
  partner_job_id: partnerJobIdField(),
});

// Not checked at run time: it types the GraphQL result (an object type, so a client selects fields) and
// documents the response (without `request_id`, which the kernel adds).
export const TextStatsOutput = z.object({
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
  characters: z.number().int(),
  words: z.number().int(),
  sentences: z.number().int(),
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
});
