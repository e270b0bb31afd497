// Inputs of ad analysis. `url` goes through the shared host rules (lib/social-links.ts) restricted to the hosts
// the spec names for POST /analyze; every refusal but a missing URL is the one "valid URL" 400.
import { defineInput, field, MAX_URL_LENGTH, pageQuery, parseSocialLink } from "mediagate/plugin";
import { ANALYSIS_ERRORS } from "./errors.ts";
import { LIST_BOUNDS } from "./limits.ts";

export const AnalyzeInput = defineInput({
  fields: {
    url: field.string({
      maxLength: MAX_URL_LENGTH,
      description:
        "an ad's link on Facebook (apex, www., m.), Instagram (apex, www.) or TikTok (apex, www., vm.), or a numeric ad id",
    }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["url"],
  check(raw, fail) {
    const checked = parseSocialLink(raw.url, "analyze");
    if (!checked.ok)
      return fail(checked.reason === "missing" ? ANALYSIS_ERRORS.urlMissing : ANALYSIS_ERRORS.invalidUrl);
    return { url: String(raw.url).trim(), link: checked.value, partnerJobId: raw.partner_job_id };
  },
});

export const ListInput = pageQuery(LIST_BOUNDS);
