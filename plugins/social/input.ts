// Inputs of the social downloader. The POST body's `url` goes through the host rules (hosts.ts), which word
// the 400; the fields beside the checks describe the inputs for OpenAPI and GraphQL.
import { defineInput, field, PAGE_BOUNDS, pageQuery } from "mediagate/plugin";
import { checkSocialLink, MAX_URL_LENGTH } from "./hosts.ts";

export const SocialDownloadInput = defineInput({
  fields: {
    url: field.string({
      maxLength: MAX_URL_LENGTH,
      description: "a post link of Facebook, Instagram or TikTok, an ad library link, or a numeric ad id",
    }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["url"],
  check(raw, fail) {
    const checked = checkSocialLink(raw.url);
    if (!checked.ok) return fail(checked.message);
    return { url: String(raw.url).trim(), link: checked.value, partnerJobId: raw.partner_job_id };
  },
});

export const ListInput = pageQuery(PAGE_BOUNDS.socialDownloads);

/** `?download=1` (also `true`): answer as an attachment. */
export const FileInput = defineInput({
  fields: { download: field.string({ enum: ["1"], description: "1: answer with Content-Disposition: attachment" }) },
  check: (raw) => ({ download: raw.download === "1" || raw.download === "true" }),
});
