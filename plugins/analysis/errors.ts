// Every text ad analysis answers with. The quoted ones are the spec's (part 1, "Errors"), word for word; the
// host refusal is ours (the spec asks for "a message asking for a valid URL of one of the three networks"),
// and so are the stage messages and the failure sentences (the spec shows no error response): plain
// sentences that never name a provider.
import type { SocialFailureReason } from "mediagate/plugin";

export const ANALYSIS_ERRORS = {
  // 400, also for a body that is not JSON at all (another Content-Type): the spec's own answer for this
  // endpoint, where other endpoints answer the kernel's 415 (the operation's `bodyNotJson`).
  bodyNotJson: "Request body must be JSON",
  urlMissing: "Please provide a URL",
  invalidUrl: "Please provide a valid Facebook, Instagram or TikTok ad URL, or a numeric ad ID.",
  // 402: this endpoint's bare text, without the amount.
  insufficientCredits: "Insufficient credits",
  // GET /status/<job_id>.
  invalidJobId: "Invalid job ID",
  jobNotFound: "Job not found",
} as const;

/** `message` of GET /status/<job_id> in each state the job passes through. */
export const STAGE_MESSAGES = {
  queued: "Waiting to start",
  downloading: "Downloading the ad",
  extracting_frames: "Extracting frames and measuring the picture and sound",
  transcribing: "Transcribing the speech",
  analyzing: "Writing the analysis",
  complete: "Analysis complete",
} as const;

/** Why an analysis failed (its `error`), by stage; credits are always refunded. */
export const ANALYSIS_FAILURES = {
  download: {
    login_required: "The ad could not be downloaded: the post needs a login to view.",
    no_video: "The ad could not be downloaded: the link has no video.",
    unavailable: "The ad could not be downloaded: the post is private, was removed or is not available.",
    too_long: "The ad is longer than 600 seconds, the most that can be analyzed.",
    too_large: "The ad is larger than 200 MB, the most that can be analyzed.",
    failed: "The ad could not be downloaded right now. Please try again later.",
  } satisfies Record<SocialFailureReason, string>,
  frames: "The ad's video could not be read.",
  transcribe: "The ad's speech could not be transcribed right now. Please try again later.",
  analyze: "The analysis could not be written right now. Please try again later.",
  failed: "The analysis failed. Please try again later.",
} as const;
