// POST /upscale-image and /upscale-video input: the rules that need no bytes, in one ordered pass before any
// charge; the fields beside them describe the bodies for OpenAPI and GraphQL. What needs the source
// (sizes, format, dimensions, duration) is checked by the handlers, still before the charge.
//
// Choices where the spec is silent, written down here:
// - A field sent as null or "" counts as not sent (for "exactly one of" and for the default factor).
// - `upscale_factor` must be the JSON number 1, 2 or 4 ("2" as a string is refused).
// - `image_base64` may carry a `data:image/...;base64,` prefix and line breaks; both are dropped.
import { defineInput, type Fail, field } from "mediagate/plugin";
import { UPSCALE_ERRORS } from "./errors.ts";
import { DEFAULT_FACTOR, FACTORS, type Factor } from "./prices.ts";

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URI = /^data:[\w.+-]+\/[\w.+-]+;base64,/;

export type ImageSource = { url: string } | { base64: string };

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

function factorOf(raw: unknown, fail: Fail): Factor {
  if (!present(raw)) return DEFAULT_FACTOR;
  return (FACTORS as readonly unknown[]).includes(raw) ? (raw as Factor) : fail(UPSCALE_ERRORS.factor);
}

const factorField = field.integer({
  enum: [...FACTORS],
  default: DEFAULT_FACTOR,
  description: "1 (enhance at the same size), 2 or 4",
});

export const UpscaleImageInput = defineInput({
  fields: {
    image_url: field.string({
      format: "uri",
      description: "public HTTPS URL of a JPEG, PNG or WebP, max 10,000,000 bytes",
    }),
    image_base64: field.string({ description: "base64 JPEG, PNG or WebP, decoded max 10,000,000 bytes" }),
    upscale_factor: factorField,
    partner_job_id: field.partnerJobId(),
  },
  check(raw, fail) {
    const hasUrl = present(raw.image_url);
    if (hasUrl === present(raw.image_base64)) return fail(UPSCALE_ERRORS.exactlyOneSource);
    const factor = factorOf(raw.upscale_factor, fail);
    let source: ImageSource;
    if (hasUrl) {
      if (typeof raw.image_url !== "string") return fail(UPSCALE_ERRORS.imageUrl);
      source = { url: raw.image_url.trim() };
    } else {
      if (typeof raw.image_base64 !== "string") return fail(UPSCALE_ERRORS.imageBase64);
      const base64 = raw.image_base64.replace(DATA_URI, "").replace(/\s+/g, "");
      if (base64.length === 0 || base64.length % 4 === 1 || !BASE64.test(base64))
        return fail(UPSCALE_ERRORS.imageBase64);
      source = { base64 };
    }
    return { source, factor, partnerJobId: raw.partner_job_id };
  },
});

export const UpscaleVideoInput = defineInput({
  fields: {
    video_url: field.string({
      format: "uri",
      description: "public HTTPS URL of an MP4 or MOV, max 50,000,000 bytes and 120 seconds",
    }),
    upscale_factor: factorField,
    partner_job_id: field.partnerJobId(),
  },
  required: ["video_url"],
  check(raw, fail) {
    if (!present(raw.video_url)) return fail(UPSCALE_ERRORS.videoUrlRequired);
    if (typeof raw.video_url !== "string") return fail(UPSCALE_ERRORS.videoUrl);
    const factor = factorOf(raw.upscale_factor, fail);
    return { url: raw.video_url.trim(), factor, partnerJobId: raw.partner_job_id };
  },
});
