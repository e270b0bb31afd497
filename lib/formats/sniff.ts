// Which image a file is, by its first bytes: never by a name's extension or a server's content type.
import { isJpeg } from "./jpeg.ts";
import { isPng } from "./png.ts";
import { isWebp } from "./riff.ts";

const SIGNATURES = { "image/jpeg": isJpeg, "image/png": isPng, "image/webp": isWebp } as const;

export type ImageMimeType = keyof typeof SIGNATURES;

const ALL = Object.keys(SIGNATURES) as ImageMimeType[];

/** The media type the bytes' signature announces, among `accepted` (default: JPEG, PNG, WebP); null when none. */
export function sniffImageType<T extends ImageMimeType = ImageMimeType>(bytes: Uint8Array, accepted: readonly T[] = ALL as T[]): T | null {
  return accepted.find((type) => SIGNATURES[type](bytes)) ?? null;
}
