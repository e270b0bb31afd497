// Which cleaner (jpeg.ts, png.ts, webp.ts) an image goes to, by its first bytes (never by the URL or a
// content type, which lie).
import type { Cleaned } from "./damage.ts";
import { cleanJpeg, isJpeg } from "./jpeg.ts";
import { cleanPng, isPng } from "./png.ts";
import { cleanWebp, isWebp } from "./webp.ts";

export interface ImageFormatInfo {
  format: "jpeg" | "png" | "webp";
  contentType: string;
  extension: string;
  /** The cleaned copy; walks the file in slices of the event loop (lib/formats `paced`). */
  clean(bytes: Uint8Array): Promise<Cleaned>;
}

const FORMATS: ReadonlyArray<ImageFormatInfo & { is(b: Uint8Array): boolean }> = [
  { format: "jpeg", contentType: "image/jpeg", extension: "jpg", is: isJpeg, clean: cleanJpeg },
  { format: "png", contentType: "image/png", extension: "png", is: isPng, clean: cleanPng },
  { format: "webp", contentType: "image/webp", extension: "webp", is: isWebp, clean: cleanWebp },
];

/** The format of `bytes`, or null when it is none of JPEG, PNG and WebP (the spec's 415). */
export function imageFormatOf(bytes: Uint8Array): ImageFormatInfo | null {
  return FORMATS.find((f) => f.is(bytes)) ?? null;
}
