// Pictures sent as base64 (Omni characters and references, Script Runner characters): one reading of the
// rules everywhere. A `data:image/...;base64,` prefix is tolerated, white space is not data; the size is judged
// on the decoded bytes before decoding (a 413 never decodes 28 MB of text), and the kind on the first bytes,
// never on a declared type: PNG, JPEG or WebP.
import { sniffImageType } from "./sniff.ts";

export const IMAGE_MIME = ["image/png", "image/jpeg", "image/webp"] as const;

const DATA_PREFIX = /^data:image\/[a-z0-9.+-]+;base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The base64 payload without its data: prefix. */
export const base64Payload = (text: string) => text.replace(DATA_PREFIX, "");

/** Bytes a base64 text decodes to, without decoding it. */
export const decodedSize = (base64: string) =>
  Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);

export type DecodedImage =
  | { ok: true; image: { bytes: Uint8Array; mimeType: (typeof IMAGE_MIME)[number] } }
  | { ok: false; reason: "too_large" | "invalid" };

/** Decodes a base64 picture: `too_large` above `maxBytes` (decoded), `invalid` when not base64 or not an image. */
export function decodeImageBase64(text: unknown, maxBytes: number): DecodedImage {
  if (typeof text !== "string") return { ok: false, reason: "invalid" };
  const payload = base64Payload(text);
  if (payload.length === 0 || payload.length % 4 === 1 || !BASE64.test(payload))
    return { ok: false, reason: "invalid" };
  if (decodedSize(payload) > maxBytes) return { ok: false, reason: "too_large" };
  const bytes = new Uint8Array(Buffer.from(payload, "base64"));
  const mimeType = sniffImageType(bytes, IMAGE_MIME);
  return mimeType ? { ok: true, image: { bytes, mimeType } } : { ok: false, reason: "invalid" };
}

/** The kind of fetched bytes (an image URL's body), or null when they are not a PNG, JPEG or WebP. */
export const imageKind = (bytes: Uint8Array) => sniffImageType(bytes, IMAGE_MIME);

export const IMAGE_EXT: Record<(typeof IMAGE_MIME)[number], string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
};
