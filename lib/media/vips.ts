// libvips through wasm-vips, the same on every machine (no native libvips is ever used), so image results do
// not depend on the engine. The module is big (~0.3 s and ~150 MB to load), so it is loaded once per process,
// on first use, and shared: it is a cache of compiled code, not state, so it does not belong to a kernel.
//
// Care points: every vips Image wraps a C++ object that must be delete()d (track() below); vips calls are
// synchronous on the calling thread (fine for the image sizes the spec allows, 20 MB); errors come back as
// arrays or WebAssembly.Exception objects, not Errors, so everything is wrapped into MediaError here.
import type VipsFactory from "wasm-vips";
import { LineTail } from "./common.ts";
import { MediaError } from "./errors.ts";

export type VipsModule = Awaited<ReturnType<typeof VipsFactory>>;
export type VipsImage = InstanceType<VipsModule["Image"]>;

export type ImageFormat = "jpeg" | "png" | "webp" | "gif" | "tiff" | "heif" | "avif" | "jxl" | "svg" | "other";
/** Formats vips can write here. */
export type OutputImageFormat = "jpeg" | "png" | "webp" | "gif" | "tiff" | "avif" | "heif";

let vipsPromise: Promise<VipsModule> | undefined;
const vipsLog = new LineTail(50);

/** Load (once) and return the shared libvips module. */
export function loadVips(): Promise<VipsModule> {
  vipsPromise ??= (async () => {
    const { default: Vips } = await import("wasm-vips");
    const vips = await Vips({
      // HEIF/AVIF only: JPEG XL and SVG (resvg) are not formats the API accepts, and each module costs startup.
      dynamicLibraries: ["vips-heif.wasm"],
      // libvips warnings ("VIPS-WARNING: ...") would otherwise go to the console; keep them for error details.
      print: (l: string) => vipsLog.push(l),
      printErr: (l: string) => vipsLog.push(l),
      // libvips' own GLib warnings bypass printErr (they are written from its threads); this switches them off
      // at vips_init. Load errors still reach us as exceptions.
      preRun: [(m: { ENV: Record<string, string> }) => void (m.ENV.VIPS_WARNING = "0")],
    } as any);
    // Loaders marked untrusted by libvips (fuzz-unsafe ones) are refused; inputs here come from partners.
    vips.blockUntrusted(true);
    // The operation cache keys on buffers we never reuse; it would only keep memory alive.
    vips.Cache.max(0);
    return vips;
  })().catch((e) => {
    vipsPromise = undefined;
    throw new MediaError("engine_unavailable", `wasm-vips failed to load: ${describe(e)}`, { cause: e });
  });
  return vipsPromise;
}

function describe(e: unknown): string {
  if (Array.isArray(e)) return e.join(": ").trim();
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Run `fn` with a tracker; every image passed to `track` is deleted afterwards, and failures become MediaErrors. */
export async function withVips<T>(
  code: "invalid_input" | "failed",
  fn: (vips: VipsModule, track: <I extends VipsImage>(i: I) => I) => T,
): Promise<T> {
  const vips = await loadVips();
  const images: VipsImage[] = [];
  const track = <I extends VipsImage>(i: I): I => {
    images.push(i);
    return i;
  };
  try {
    return fn(vips, track);
  } catch (e) {
    if (e instanceof MediaError) throw e;
    throw new MediaError(code, `vips: ${describe(e)}`, { cause: e, log: vipsLog.lines.slice(-5) });
  } finally {
    for (const i of images) if (!i.isDeleted()) i.delete();
  }
}

const LOADERS: Array<[RegExp, ImageFormat]> = [
  [/^jpegload/, "jpeg"],
  [/^pngload/, "png"],
  [/^webpload/, "webp"],
  [/^gifload/, "gif"],
  [/^tiffload/, "tiff"],
  [/^heifload/, "heif"],
  [/^jxlload/, "jxl"],
  [/^svgload/, "svg"],
];

export interface ImageProbe {
  /** Width and height as displayed: EXIF orientation 5-8 swaps the stored dimensions. */
  width: number;
  height: number;
  format: ImageFormat;
  hasAlpha: boolean;
  /** EXIF orientation 1-8 (1 when absent). */
  orientation: number;
  /** Frames, for animated GIF/WebP (1 otherwise). */
  pages: number;
  hasIccProfile: boolean;
  hasExif: boolean;
  hasXmp: boolean;
  hasIptc: boolean;
}

function has(img: VipsImage, field: string): boolean {
  return img.getTypeof(field) !== 0;
}

function formatOf(img: VipsImage): ImageFormat {
  const loader = has(img, "vips-loader") ? img.getString("vips-loader") : "";
  const found = LOADERS.find(([re]) => re.test(loader))?.[1] ?? "other";
  if (found === "heif" && has(img, "heif-compression") && img.getString("heif-compression") === "av1") return "avif";
  return found;
}

function orientationOf(img: VipsImage): number {
  if (!has(img, "orientation")) return 1;
  const o = img.getInt("orientation");
  return o >= 1 && o <= 8 ? o : 1;
}

/** Read an image's header (no pixel decoding). Throws MediaError("invalid_input") for anything vips cannot read. */
export async function probeImage(bytes: Uint8Array): Promise<ImageProbe> {
  return withVips("invalid_input", (vips, track) => {
    const img = track(vips.Image.newFromBuffer(bytes));
    const orientation = orientationOf(img);
    const swap = orientation >= 5;
    return {
      width: swap ? img.height : img.width,
      height: swap ? img.width : img.height,
      format: formatOf(img),
      hasAlpha: img.hasAlpha(),
      orientation,
      pages: has(img, "n-pages") ? img.getInt("n-pages") : 1,
      hasIccProfile: has(img, "icc-profile-data"),
      hasExif: has(img, "exif-data"),
      hasXmp: has(img, "xmp-data"),
      hasIptc: has(img, "iptc-data"),
    };
  });
}

export interface EncodeOptions {
  /** Lossy quality 1-100 (JPEG, WebP, AVIF/HEIF). Default 90. */
  quality?: number;
  /** Keep the ICC profile (default true): dropping a non-sRGB profile shifts colours visibly. */
  keepIcc?: boolean;
}

const SUFFIX: Record<OutputImageFormat, string> = {
  jpeg: ".jpg",
  png: ".png",
  webp: ".webp",
  gif: ".gif",
  tiff: ".tif",
  avif: ".avif",
  heif: ".heic",
};

/** vips ForeignKeep flags: none = 0, icc = 8. Everything else (EXIF, XMP, IPTC, other) is dropped on save. */
const KEEP_NONE = 0;
const KEEP_ICC = 8;

export function encodeImage(img: VipsImage, format: OutputImageFormat, options: EncodeOptions = {}): Uint8Array {
  const keep = options.keepIcc === false ? KEEP_NONE : KEEP_ICC;
  const q = Math.min(100, Math.max(1, Math.round(options.quality ?? 90)));
  const opts: Record<string, unknown> = { keep };
  if (format === "jpeg" || format === "webp" || format === "avif" || format === "heif") opts.Q = q;
  if (format === "avif") opts.compression = "av1";
  if (format === "jpeg" && img.hasAlpha()) {
    const flat = img.flatten({ background: [255, 255, 255] });
    try {
      return flat.writeToBuffer(SUFFIX[format], opts);
    } finally {
      flat.delete();
    }
  }
  return img.writeToBuffer(SUFFIX[format], opts);
}

export interface ResizeOptions extends EncodeOptions {
  /** Target width; with `height` too, the image fits inside (or covers, with `fit: "cover"`). */
  width?: number;
  height?: number;
  /** "inside" (default) keeps the aspect ratio within the box; "cover" fills it and crops the centre; "fill" stretches. */
  fit?: "inside" | "cover" | "fill";
  /** Allow enlarging (default true: upscaling is a product). */
  enlarge?: boolean;
  /** Output format; defaults to the input's when vips can write it, else PNG (alpha) or JPEG. */
  format?: OutputImageFormat;
}

export interface ImageResult {
  bytes: Uint8Array;
  width: number;
  height: number;
  format: OutputImageFormat;
}

function defaultOutput(input: ImageFormat, alpha: boolean): OutputImageFormat {
  if (
    input === "jpeg" ||
    input === "png" ||
    input === "webp" ||
    input === "gif" ||
    input === "tiff" ||
    input === "avif" ||
    input === "heif"
  )
    return input;
  return alpha ? "png" : "jpeg";
}

/**
 * Resize (shrink-on-load where the format allows) and encode. EXIF orientation is applied, so the result is
 * upright with no orientation tag; metadata other than ICC is not copied.
 */
export async function resizeImage(bytes: Uint8Array, options: ResizeOptions): Promise<ImageResult> {
  const { width, height } = options;
  if (!width && !height) throw new MediaError("failed", "resizeImage needs width or height");
  for (const v of [width, height])
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 16384))
      throw new MediaError("failed", `bad target size ${v}`);
  return withVips("invalid_input", (vips, track) => {
    const head = track(vips.Image.newFromBuffer(bytes));
    const format = options.format ?? defaultOutput(formatOf(head), head.hasAlpha());
    const fit = options.fit ?? "inside";
    const size = options.enlarge === false ? "down" : "both";
    let img: VipsImage;
    if (fit === "fill" && width && height) {
      const upright = track(head.autorot());
      img = track(upright.resize(width / upright.width, { vscale: height / upright.height, kernel: "lanczos3" }));
    } else {
      img = track(
        vips.Image.thumbnailBuffer(bytes, width ?? 16384, {
          height: height ?? 16384,
          size,
          crop: fit === "cover" && width && height ? "centre" : "none",
        }),
      );
    }
    return { bytes: encodeImage(img, format, options), width: img.width, height: img.height, format };
  });
}

/** Re-encode to another format (orientation applied; only the ICC profile is kept). */
export async function convertImage(
  bytes: Uint8Array,
  format: OutputImageFormat,
  options: EncodeOptions = {},
): Promise<ImageResult> {
  return withVips("invalid_input", (vips, track) => {
    const img = track(track(vips.Image.newFromBuffer(bytes)).autorot());
    return { bytes: encodeImage(img, format, options), width: img.width, height: img.height, format };
  });
}
