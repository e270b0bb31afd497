// Shared by the media tests: fixture loading, the engines this machine can run, exiftool when present.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { detectNativeFfmpeg } from "../../lib/media/index.ts";

export const FIXTURES = join(import.meta.dirname, "../../../shared/fixtures/media");
export const fixture = (name: string) => new Uint8Array(readFileSync(join(FIXTURES, name)));

/** "wasm" always; "native" when ffmpeg and ffprobe are on PATH. */
export const ENGINE_MODES: Array<"native" | "wasm"> = detectNativeFfmpeg() ? ["native", "wasm"] : ["wasm"];

export const EXIFTOOL = ["/usr/bin/exiftool", "/usr/local/bin/exiftool"].find((p) => existsSync(p));

/** exiftool's tags (family-1 group:name) of a file. */
export function exifTags(bytes: Uint8Array, ext: string): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), "media-test-"));
  try {
    const file = join(dir, `f.${ext}`);
    writeFileSync(file, bytes);
    const out = execFileSync(EXIFTOOL!, ["-j", "-G1", "-a", "-u", file], { encoding: "utf8" });
    return (JSON.parse(out) as Array<Record<string, unknown>>)[0] ?? {};
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Groups that are metadata (not picture structure); every tag in them must be gone after stripping.
const METADATA_GROUP =
  /^(IFD\d|ExifIFD|GPS|InteropIFD|MakerNotes.*|XMP.*|IPTC|Photoshop|JUMBF|CBOR|JSON|C2PA.*|Keys|UserData|ItemList|MPF\d*)$/;
// In the PNG group exiftool mixes structure with text chunks; only these are structure.
const PNG_STRUCTURE =
  /^(ImageWidth|ImageHeight|BitDepth|ColorType|Compression|Filter|Interlace|Gamma|SRGBRendering|BackgroundColor|Palette|Transparency|WhitePoint.*|Red[XY]|Green[XY]|Blue[XY]|ProfileName|PixelsPerUnit[XY]|PixelUnits|SignificantBits)$/;

/** Tags that are metadata a strip should have removed. */
export function leakedMetadata(tags: Record<string, unknown>): string[] {
  return Object.keys(tags).filter((k) => {
    const [group, name] = k.split(":");
    if (!name) return false;
    if (METADATA_GROUP.test(group!)) return true;
    if (group === "PNG") return !PNG_STRUCTURE.test(name);
    return k === "File:ExifByteOrder" || k === "File:Comment";
  });
}
