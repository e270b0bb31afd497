// POST /upscale-image and /upscale-video input: the rules that need no bytes, in one ordered pass before any
// charge; the zod shapes around them describe the fields for OpenAPI and GraphQL. What needs the source
// (sizes, format, dimensions, duration) is checked by the handlers, still before the charge.
//
// Choices where the spec is silent, written down here:
// - A field sent as null or "" counts as not sent (for "exactly one of" and for the default factor).
// - `upscale_factor` must be the JSON number 1, 2 or 4 ("2" as a string is refused).
// - `image_base64` may carry a `data:image/...;base64,` prefix and line breaks; both are dropped.
import { z } from "zod";
import { partnerJobIdField } from "mediagate/plugin";
import { UPSCALE_ERRORS as E } from "./errors.ts";
import { DEFAULT_FACTOR, FACTORS, type Factor } from "./prices.ts";

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URI = /^data:[\w.+-]+\/[\w.+-]+;base64,/;

export type ImageSource = { url: string } | { base64: string };

export interface UpscaleImageRequest {
  source: ImageSource;
  factor: Factor;
  partnerJobId: string | null;
}

export interface UpscaleVideoRequest {
  url: string;
  factor: Factor;
  partnerJobId: string | null;
}

type Check<T> = { ok: true; value: T } | { ok: false; message: string };
const fail = <T,>(message: string): Check<T> => ({ ok: false, message });
const present = (v: unknown) => v !== undefined && v !== null && v !== "";

function factorOf(raw: unknown): Check<Factor> {
  if (!present(raw)) return { ok: true, value: DEFAULT_FACTOR };
  return (FACTORS as readonly unknown[]).includes(raw) ? { ok: true, value: raw as Factor } : fail(E.factor);
}

/** Bytes a base64 text decodes to, without decoding it. */
export const decodedSize = (base64: string) => Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);

export function checkImageRequest(raw: Record<string, unknown>): Check<Omit<UpscaleImageRequest, "partnerJobId">> {
  const hasUrl = present(raw.image_url);
  if (hasUrl === present(raw.image_base64)) return fail(E.exactlyOneSource);
  const factor = factorOf(raw.upscale_factor);
  if (!factor.ok) return factor;
  if (hasUrl) {
    if (typeof raw.image_url !== "string") return fail(E.imageUrl);
    return { ok: true, value: { source: { url: raw.image_url.trim() }, factor: factor.value } };
  }
  if (typeof raw.image_base64 !== "string") return fail(E.imageBase64);
  const base64 = raw.image_base64.replace(DATA_URI, "").replace(/\s+/g, "");
  if (base64.length === 0 || base64.length % 4 === 1 || !BASE64.test(base64)) return fail(E.imageBase64);
  return { ok: true, value: { source: { base64 }, factor: factor.value } };
}

export function checkVideoRequest(raw: Record<string, unknown>): Check<Omit<UpscaleVideoRequest, "partnerJobId">> {
  if (!present(raw.video_url)) return fail(E.videoUrlRequired);
  if (typeof raw.video_url !== "string") return fail(E.videoUrl);
  const factor = factorOf(raw.upscale_factor);
  if (!factor.ok) return factor;
  return { ok: true, value: { url: raw.video_url.trim(), factor: factor.value } };
}

const described = <T extends Record<string, unknown>>(json: T) => z.unknown().optional().meta(json);
const factorField = described({ type: "integer", enum: [...FACTORS], default: DEFAULT_FACTOR, description: "1 (enhance at the same size), 2 or 4" });

function refined<R, T>(check: (raw: Record<string, unknown>) => Check<R>, build: (value: R, partnerJobId: string | null) => T) {
  return (raw: Record<string, unknown> & { partner_job_id: string | null }, ctx: z.RefinementCtx): T => {
    const checked = check(raw);
    if (!checked.ok) {
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    }
    return build(checked.value, raw.partner_job_id);
  };
}

export const UpscaleImageInput = z
  .object({
    // Optional to zod so that every rule reaches the checks above and gets the spec's text.
    image_url: described({ type: "string", format: "uri", description: "public HTTPS URL of a JPEG, PNG or WebP, max 10,000,000 bytes" }),
    image_base64: described({ type: "string", description: "base64 JPEG, PNG or WebP, decoded max 10,000,000 bytes" }),
    upscale_factor: factorField,
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .transform(refined(checkImageRequest, (v, partnerJobId): UpscaleImageRequest => ({ ...v, partnerJobId })));

export const UpscaleVideoInput = z
  .object({
    video_url: described({ type: "string", format: "uri", description: "public HTTPS URL of an MP4 or MOV, max 50,000,000 bytes and 120 seconds" }),
    upscale_factor: factorField,
    partner_job_id: partnerJobIdField().meta({ type: "string" }),
  })
  .meta({ required: ["video_url"] })
  .transform(refined(checkVideoRequest, (v, partnerJobId): UpscaleVideoRequest => ({ ...v, partnerJobId })));
