// Ad analysis (spec part 1, "Analysis record", "States and transitions: Ad analysis", "Endpoints: Ad analysis",
// the analysis rows of the error and rate-limit tables, the in-flight cap): a link to an ad becomes a breakdown
// in four texts (`summary`, `transcription`, `analysis`, `ugc_script`), every sentence grounded in what was
// measured on the downloaded media. The endpoints are operations.ts, the pipeline job.ts; the measurements measure.ts and facts.ts.
//
// Choices where the spec is silent, written down here:
// - The host refusal text: errors.ts `invalidUrl` (the spec asks for "a message asking for a valid URL of one
//   of the three networks"). A `url` that is not a string counts as no URL.
// - The hosts: the shared table (lib/social-links.ts), the rows marked `analyze`; an ad library link
//   (www.facebook.com/ads/library/?id=...) is on an allowed host; a bare numeric id becomes that link.
// - GET /status/<job_id>: an id that is not `svc-` + 8 hex is 400 `Invalid job ID`; a well-formed id that is
//   missing or another account's is 404 `Job not found`. While running: `job_id`, `status`, `message`; once
//   complete: `job_id`, `status`, `result`; on `error` (shape not shown by the spec): `job_id`, `status`,
//   `message` and `error`, both the failure's sentence.
// - GET /analyses: newest first; `result` is null until the analysis is complete; `credits_used` is the charge
//   (a failed analysis was refunded: the ledger shows the refund).
// - Downloading uses the social downloader's extractor directly: the account's download quota, its in-flight
//   cap of 2 and its pause switch are the downloader's, not analysis's.
import { definePlugin } from "mediagate/plugin";
import { analysisJob } from "./job.ts";
import { analysisMigrations } from "./migrations.ts";
import { analyze, list, status } from "./operations.ts";
import { COSTS } from "./prices.ts";

export default definePlugin({
  name: "analysis",
  requires: ["social.extract", "media", "speech.transcribe", "text.generate"],
  costs: COSTS,
  jobs: { analysis: analysisJob },
  operations: [analyze, status, list],
  migrations: analysisMigrations,
});
