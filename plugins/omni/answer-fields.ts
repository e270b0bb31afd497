// Field groups several Omni answers share, spread into their zod shapes where the fields stand together in
// this order (a shape's field order sets the OpenAPI and GraphQL schemas).
import { z } from "zod";

/** `credits_used`, `credits_remaining`: what a charged request cost and what the account has left. */
export const charged = { credits_used: z.number().int(), credits_remaining: z.number().int() };

/** `aspect_ratio`, `resolution`: the picture a clip or a batch is made in. */
export const picture = { aspect_ratio: z.string(), resolution: z.string() };

/** `video_url`, `error`, `prompt_fixable`: how a clip ended (a link once complete, the failure's text else). */
export const clipOutcome = {
  video_url: z.string().nullable(),
  error: z.string().nullable(),
  prompt_fixable: z.boolean(),
};
