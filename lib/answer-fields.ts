// Zod field groups that many answers of the spec share, in the order the spec lists them. Spread one into an
// output shape where those fields stand together (`z.object({ ...jobIds, prompt: z.string(), ...charged })`):
// the field order of a shape sets the OpenAPI and GraphQL schemas, so a group is only spread where its fields
// stand in this order, and `npm run schema` must leave schema/ unchanged.
import { z } from "zod";

/** `job_id`, `partner_job_id`: the two ids every job answer opens with. */
export const jobIds = {
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
};

/** `credits_used`, `credits_remaining`: what a charged request cost and what the account has left. */
export const charged = {
  credits_used: z.number().int(),
  credits_remaining: z.number().int(),
};

/** `credits_used`, `credits_refunded`: what a job cost and how much of it came back. */
export const settled = {
  credits_used: z.number().int(),
  credits_refunded: z.number().int(),
};
