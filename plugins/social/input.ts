// Inputs of the social downloader. The POST body's `url` goes through the host rules (hosts.ts); the zod
// shape around it describes the fields for OpenAPI and GraphQL, and its first issue is the 400 text.
import { z } from "zod";
import { PAGE_BOUNDS, pageQuery, partnerJobIdField } from "mediagate/plugin";
import { checkSocialLink, MAX_URL_LENGTH, type SocialLink } from "./hosts.ts";

export const SocialDownloadInput = z
  .object({
    // Optional to zod so a missing url reaches checkSocialLink and gets its text.
    url: z.unknown().optional().meta({ type: "string", maxLength: MAX_URL_LENGTH, description: "a post link of Facebook, Instagram or TikTok, an ad library link, or a numeric ad id" }),
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["url"] })
  .transform((raw, ctx) => {
    const checked = checkSocialLink(raw.url);
    if (!checked.ok) {
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    }
    return { url: String(raw.url).trim(), link: checked.value as SocialLink, partnerJobId: raw.partner_job_id };
  });

export const ListInput = pageQuery(PAGE_BOUNDS.socialDownloads);

/** `?download=1` (also `true`): answer as an attachment. */
export const FileInput = z.object({
  download: z
    .unknown()
    .optional()
    .meta({ type: "string", enum: ["1"], description: "1: answer with Content-Disposition: attachment" })
    .transform((v) => v === "1" || v === "true"),
});
