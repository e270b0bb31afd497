// Every text the social downloader answers with. The quoted ones are the spec's (part 1, "Errors"), word for
// word: the host text too, although the spec notes it is given in the service's neutral wording (the three
// networks: Facebook, Instagram and TikTok, host lists in hosts.ts). The failure sentences are ours: the spec asks for "a plain sentence"
// (a post that needs a login, a link without a downloadable video) and never a provider's words.
import type { SocialFailureReason } from "mediagate/plugin";

export const SOCIAL_ERRORS = {
  // 400, before anything is stored.
  urlMissing: "Please provide a URL",
  unsupportedHost: "Only Facebook, Instagram and the service links are supported.",
  tooLong: "That link is too long.",
  notHttp: "Only http(s) links are supported.",
  // 429; the daily one carries `quota`.
  dailyLimit: "Daily limit reached: 200 downloads per 24 hours. Try again later.",
  inflight: "You already have 2 downloads running.",
  // 503, the operator's switch (see quota.ts).
  paused: "Downloads are paused right now. Please try again later.",
  // 404 (missing and not yours alike, invariant 4) and 410.
  notFound: "Download not found",
  fileNotFound: "File not found",
  expired: "This download has expired. Files are kept for 7 days.",
} as const;

/** Why a download failed, each as the plain sentence stored in the record's `error`. */
export const FAILURE_SENTENCES = {
  login_required: "This post needs a login to view, so it cannot be downloaded.",
  no_video: "This link has no downloadable video.",
  unavailable: "This post is private, was removed or is not available.",
  too_long: "This post is longer than 600 seconds, the most that can be downloaded.",
  too_large: "This post is larger than 200 MB, the most that can be downloaded.",
  failed: "This post could not be downloaded right now. Please try again later.",
} as const satisfies Record<SocialFailureReason, string>;

/** The reasons of the social.extract contract, each with its sentence above. */
export type FailureReason = SocialFailureReason;
