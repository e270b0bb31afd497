// POST /remove-metadata input: exactly one source, checked before anything is read or counted. URLs are
// checked against the outbound rules in the handler (the guard's settings decide), base64 here.
//
// Choices where the spec is silent, written down here:
// - A field counts as sent when it is present and not null or "" (an empty field does not make two).
// - image_base64 may carry a `data:image/...;base64,` prefix, as browsers produce it; anything else must be
//   plain base64 (padding optional, no whitespace).
// - A URL longer than 200 characters is cut to 200 in the "Invalid ...: <url>" text.
import { z } from "zod";
import { METADATA_ERRORS as E } from "./errors.ts";

export type RemovalSource =
  | { kind: "image"; url: string }
  | { kind: "image"; base64: string }
  | { kind: "video"; url: string };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:image\/[a-z0-9.+-]+;base64,/i;

/** Bytes a base64 text decodes to, without decoding it. */
export const decodedSize = (base64: string) => Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

export function checkRemovalRequest(raw: Record<string, unknown>): { ok: true; value: RemovalSource } | { ok: false; message: string } {
  const sent = (["image_url", "image_base64", "video_url"] as const).filter((f) => present(raw[f]));
  if (sent.length !== 1) return { ok: false, message: E.exactlyOne };
  const value = raw[sent[0]!];
  switch (sent[0]) {
    case "image_url":
      return typeof value === "string" ? { ok: true, value: { kind: "image", url: value.trim() } } : { ok: false, message: E.invalidImageUrl(String(value).slice(0, 200)) };
    case "video_url":
      return typeof value === "string" ? { ok: true, value: { kind: "video", url: value.trim() } } : { ok: false, message: E.invalidVideoUrl(String(value).slice(0, 200)) };
    default: {
      if (typeof value !== "string") return { ok: false, message: E.invalidImageBase64 };
      const base64 = value.replace(DATA_URL, "");
      if (base64.length === 0 || base64.length % 4 === 1 || !BASE64.test(base64)) return { ok: false, message: E.invalidImageBase64 };
      return { ok: true, value: { kind: "image", base64 } };
    }
  }
}

const described = <T extends Record<string, unknown>>(json: T) => z.unknown().optional().meta(json);

export const RemoveMetadataInput = z
  .object({
    image_url: described({ type: "string", description: "public HTTPS URL of a JPEG, PNG or WebP (max 20 MB); a service image URL is read from storage" }),
    image_base64: described({ type: "string", description: "base64 JPEG, PNG or WebP (max 20 MB of image data)" }),
    video_url: described({ type: "string", description: "public HTTPS URL of an MP4 or MOV (max 100 MB); a service video URL is read from storage" }),
  })
  .transform((raw, ctx) => {
    const checked = checkRemovalRequest(raw as Record<string, unknown>);
    if (!checked.ok) {
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    }
    return checked.value;
  });
