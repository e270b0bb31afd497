// The downloader's view of the shared host rules (lib/social-links.ts, one table for the downloader and ad
// analysis): every host of the table, each refusal worded with the downloader's 400 texts.
import { type LinkRefusal, type Platform, parseSocialLink, type SocialLink } from "mediagate/plugin";
import { SOCIAL_ERRORS } from "./errors.ts";

export { HOSTS, MAX_URL_LENGTH } from "mediagate/plugin";
export type { Platform };

const REFUSALS: Record<LinkRefusal, string> = {
  missing: SOCIAL_ERRORS.urlMissing,
  too_long: SOCIAL_ERRORS.tooLong,
  not_http: SOCIAL_ERRORS.notHttp,
  host: SOCIAL_ERRORS.unsupportedHost,
};

export type LinkCheck = { ok: true; value: SocialLink } | { ok: false; message: string };

/** Checks a submitted `url` against the host rules; the 400 text on refusal. */
export function checkSocialLink(raw: unknown): LinkCheck {
  const checked = parseSocialLink(raw, "all");
  return checked.ok ? checked : { ok: false, message: REFUSALS[checked.reason] };
}
