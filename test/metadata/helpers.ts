// Shared by the metadata tests: the fixtures by kind, decoded pixels, byte search, a seeded random source.
import { readdirSync } from "node:fs";
import { loadVips } from "../../lib/media/index.ts";
import { FIXTURES, fixture } from "../media/util.ts";

export { ENGINE_MODES, EXIFTOOL, exifTags, fixture, leakedMetadata } from "../media/util.ts";

const byExt = (re: RegExp) =>
  readdirSync(FIXTURES)
    .filter((f) => re.test(f))
    .sort();
/** Every image and video fixture there is, so a new one is tested without touching the tests. */
export const IMAGE_FIXTURES = byExt(/\.(jpe?g|png|webp)$/i);
export const VIDEO_FIXTURES = byExt(/\.(mp4|mov)$/i);
export const loadFixture = fixture;

/** Decoded pixels (and the band count and size) as libvips sees them. */
export async function decodedPixels(
  bytes: Uint8Array,
): Promise<{ width: number; height: number; bands: number; pixels: Uint8Array }> {
  const vips = await loadVips();
  const img = vips.Image.newFromBuffer(bytes, "", { access: "sequential" } as any);
  try {
    return { width: img.width, height: img.height, bands: img.bands, pixels: new Uint8Array(img.writeToMemory()) };
  } finally {
    img.delete();
  }
}

export function contains(hay: Uint8Array, needle: string): boolean {
  return Buffer.from(hay.buffer, hay.byteOffset, hay.byteLength).includes(Buffer.from(needle, "latin1"));
}

/** mulberry32 (the fuzz generator's): a small seeded generator, so a failing fuzz case can be replayed. */
export { seededRandom as seeded } from "../security/fuzz-generator.ts";
