// POST /remove-metadata input: exactly one source, checked before anything is read or counted. URLs are
// checked against the outbound rules in the handler (the guard's settings decide), base64 here.
//
// Choices where the spec is silent, written down here:
// - A field counts as sent when it is present and not null or "" (an empty field does not make two).
// - image_base64 may carry a `data:image/...;base64,` prefix, as browsers produce it; anything else must be
//   plain base64 (padding optional, no whitespace).
// - A URL longer than 200 characters is cut to 200 in the "Invalid ...: <url>" text; a value that is not a
//   string is named by its kind there ("Invalid image_url: an object").
import { defineInput, field, shown } from "mediagate/plugin";
import { METADATA_ERRORS } from "./errors.ts";

/** What to remove metadata from: exactly one source. */
export type RemovalSource =
  | { kind: "image"; url: string }
  | { kind: "image"; base64: string }
  | { kind: "video"; url: string };

const DATA_URL = /^data:image\/[a-z0-9.+-]+;base64,/i;

const present = (v: unknown) => v !== undefined && v !== null && v !== "";

export const RemoveMetadataInput = defineInput({
  fields: {
    image_url: field.string({
      description: "public HTTPS URL of a JPEG, PNG or WebP (max 20 MB); a service image URL is read from storage",
    }),
    image_base64: field.string({ description: "base64 JPEG, PNG or WebP (max 20 MB of image data)" }),
    video_url: field.string({
      description: "public HTTPS URL of an MP4 or MOV (max 100 MB); a service video URL is read from storage",
    }),
  },
  check(raw, fail): RemovalSource {
    const sent = (["image_url", "image_base64", "video_url"] as const).filter((f) => present(raw[f]));
    if (sent.length !== 1) return fail(METADATA_ERRORS.exactlyOne);
    const value = raw[sent[0]!];
    switch (sent[0]) {
      case "image_url":
        return typeof value === "string"
          ? { kind: "image", url: value.trim() }
          : fail(METADATA_ERRORS.invalidImageUrl(shown(value)));
      case "video_url":
        return typeof value === "string"
          ? { kind: "video", url: value.trim() }
          : fail(METADATA_ERRORS.invalidVideoUrl(shown(value)));
      default: {
        if (typeof value !== "string") return fail(METADATA_ERRORS.invalidImageBase64);
        const base64 = value.replace(DATA_URL, "");
        // The alphabet is checked by `locate` (source.ts), in slices of the event loop: one regular expression
        // over 28 MB of text held it 110-150 ms.
        if (base64.length === 0 || base64.length % 4 === 1) return fail(METADATA_ERRORS.invalidImageBase64);
        return { kind: "image", base64 };
      }
    }
  },
});
