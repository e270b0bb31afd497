// How a runner's catch around a generation provider ends, for every area that generates media (images, video,
// Omni): what the runtime must see as it is goes up unchanged (the job was cancelled or ran out of time,
// something was only briefly out of reach: retried with back-off, never refunded); a refusal of the content and
// any other failure end the job with the area's own texts. The provider's own words stay in our log: they may
// name the model, the account or the prompt, and the partner gets the area's sanitized sentence.
import { UnsafeContentError } from "../contracts/errors.ts";
import { isTransient } from "../lib/transient.ts";
import { JobFailure, type JobRunContext } from "./jobs.ts";

/** The partner's texts for a provider's failure: the content refused, or anything else. */
export interface ProviderFailureTexts {
  unsafe: string;
  failed: string;
}

/** Rethrows `err` or ends the job with the area's text; `logAs` opens the log line (`video <job id>: provider failed`). */
export function failFromProvider(
  ctx: Pick<JobRunContext, "signal" | "log">,
  err: unknown,
  texts: ProviderFailureTexts,
  logAs: string,
): never {
  if (ctx.signal.aborted || isTransient(err)) throw err;
  if (err instanceof UnsafeContentError) throw new JobFailure(texts.unsafe);
  ctx.log.warn(`${logAs}: ${err instanceof Error ? err.message : String(err)}`);
  throw new JobFailure(texts.failed);
}
