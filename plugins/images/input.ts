// POST /generate-image input: every rule of the spec, checked in one pass before any charge. The rules
// depend on each other (the model decides the allowed ratios and qualities), so one ordered check decides
// the error text; the fields beside it describe the body for OpenAPI and GraphQL.
import { type CheckUrlResult, defineInput, field, type InferOutput, shown } from "mediagate/plugin";
import { IMAGE_ERRORS } from "./errors.ts";
import {
  BACKGROUNDS,
  type Background,
  DEFAULT_MODEL,
  MODEL_IDS,
  MODELS,
  type ModelId,
  type Quality,
} from "./models.ts";

export const MAX_REFERENCES = 5;
export const REF_MIME_TYPES = ["image/png", "image/jpeg", "image/webp"] as const;

export interface RefImage {
  base64: string;
  mime_type: (typeof REF_MIME_TYPES)[number];
}

/** The validated body, as the handler receives it. */
export type ImageRequest = InferOutput<typeof GenerateImageInput>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether `value` is a string of the list `allowed`. */
const oneOf = (value: unknown, allowed: readonly string[]): value is string =>
  typeof value === "string" && allowed.includes(value);

export const GenerateImageInput = defineInput({
  fields: {
    prompt: field.string({ description: "image description" }),
    model: field.string({ enum: MODEL_IDS, default: DEFAULT_MODEL }),
    aspect_ratio: field.string({ description: "per model; see the spec" }),
    quality: field.string({ enum: ["1K", "2K", "4K"] }),
    resolution: field.string({ enum: ["1K", "2K", "4K"], description: "alias of quality" }),
    background: field.string({ enum: BACKGROUNDS, default: "auto" }),
    quantity: field.integer({ minimum: 1, maximum: 4, default: 1 }),
    ref_images: field.array({
      maxItems: MAX_REFERENCES,
      items: {
        type: "object",
        properties: { base64: { type: "string" }, mime_type: { type: "string" } },
        required: ["base64", "mime_type"],
      },
    }),
    reference_image_urls: field.array({ maxItems: MAX_REFERENCES, items: { type: "string" } }),
    strip_metadata: field.boolean({ default: false }),
    partner_job_id: field.partnerJobId(),
  },
  required: ["prompt"],
  check(raw, fail) {
    if (typeof raw.prompt !== "string" || raw.prompt.trim() === "") return fail(IMAGE_ERRORS.promptMissing);

    const model = raw.model ?? DEFAULT_MODEL;
    if (!oneOf(model, MODEL_IDS)) return fail(IMAGE_ERRORS.invalidModel);
    const m = MODELS[model as ModelId];

    // `resolution` is the spec's alias of `quality`; `quality` wins when both are sent.
    const quality = raw.quality ?? raw.resolution ?? m.defaultQuality;
    if (!oneOf(quality, m.qualities)) return fail(IMAGE_ERRORS.invalidQuality(m.qualities));

    const ratio = raw.aspect_ratio ?? m.defaultAspectRatio;
    if (!oneOf(ratio, m.aspectRatios)) return fail(IMAGE_ERRORS.invalidAspectRatio(m.aspectRatios));
    if (quality !== "1K" && (m.oneKOnly as readonly string[]).includes(ratio))
      return fail(IMAGE_ERRORS.oneKOnly(ratio));
    if (((m.impossible as Partial<Record<string, readonly string[]>>)[quality] ?? []).includes(ratio))
      return fail(IMAGE_ERRORS.impossible(model, quality, ratio));

    // `auto` for models that ignore the field.
    let background: Background = "auto";
    if (m.background && raw.background !== undefined) {
      if (!oneOf(raw.background, BACKGROUNDS)) return fail(IMAGE_ERRORS.invalidBackground);
      background = raw.background as Background;
    }

    const quantity = raw.quantity ?? 1;
    if (typeof quantity !== "number" || !Number.isInteger(quantity) || quantity < 1 || quantity > 4)
      return fail(IMAGE_ERRORS.invalidQuantity);

    // Unlike the other fields, null is not "absent" here: the spec rejects any value but true or false.
    const strip = raw.strip_metadata === undefined ? false : raw.strip_metadata;
    if (typeof strip !== "boolean") return fail(IMAGE_ERRORS.stripMetadata);

    const refs = raw.ref_images ?? [];
    if (!Array.isArray(refs) || refs.length > MAX_REFERENCES) return fail(IMAGE_ERRORS.refImagesShape);
    for (const ref of refs) {
      if (!ref || typeof ref !== "object" || typeof ref.base64 !== "string" || typeof ref.mime_type !== "string")
        return fail(IMAGE_ERRORS.refImagesShape);
      if (!(REF_MIME_TYPES as readonly string[]).includes(ref.mime_type)) return fail(IMAGE_ERRORS.refImageMime);
      if (ref.base64.length === 0 || ref.base64.length % 4 === 1 || !BASE64.test(ref.base64))
        return fail(IMAGE_ERRORS.refImageBase64);
    }

    const urls = raw.reference_image_urls ?? [];
    if (!Array.isArray(urls) || urls.length > MAX_REFERENCES) return fail(IMAGE_ERRORS.refUrlsShape);
    // The outbound guard's rules (https, ASCII host, no userinfo, no private host unless the deployment allows
    // it) depend on its configuration, which a schema cannot see: the handler runs them (checkReferenceUrls).
    for (const url of urls) {
      if (typeof url !== "string") return fail(IMAGE_ERRORS.invalidRefUrl(shown(url)));
    }

    return {
      prompt: raw.prompt.trim(),
      model: model as ModelId,
      quality: quality as Quality,
      aspect_ratio: ratio,
      background,
      quantity,
      ref_images: refs as RefImage[],
      reference_image_urls: urls as string[],
      strip_metadata: strip,
      partner_job_id: raw.partner_job_id,
    };
  },
});

/**
 * `reference_image_urls` through the configured outbound guard's syntax rules (`check` is its checkUrl, so
 * ALLOW_PRIVATE_URLS applies), normalized; the first failure's text, or null. Run by the handler before any
 * charge, where the input check used to run them.
 */
export function checkReferenceUrls(urls: string[], check: (text: unknown) => CheckUrlResult): string | null {
  for (const [i, url] of urls.entries()) {
    const c = check(url);
    if (!c.ok) return IMAGE_ERRORS.invalidRefUrl(url.slice(0, 200));
    urls[i] = c.url.href;
  }
  return null;
}
