// What the image cleaners (jpeg.ts, png.ts, webp.ts) return, and what they throw when a file does not hold
// together: DamagedMediaError, the shared format readers' error (thrown by them and by the cleaners' own
// checks), which the endpoint maps to its 422. It is the only thing they throw, and the fuzz tests hold them to it.
export { DamagedMediaError, isDamagedMedia as isDamaged } from "mediagate/plugin";

/** Categories of metadata, as the clean-copy record's `removed` names them. */
export type Category = "c2pa" | "exif" | "xmp" | "iptc" | "other";

export const CATEGORY_ORDER: readonly Category[] = ["c2pa", "exif", "xmp", "iptc", "other"];

export interface Cleaned {
  bytes: Uint8Array;
  removed: Category[];
}

export const sortCategories = (found: Set<Category>): Category[] => CATEGORY_ORDER.filter((c) => found.has(c));
