// Metadata removal for images. JPEG, PNG and WebP (the formats the API accepts) are stripped losslessly by
// copying only the segments/chunks needed to show the picture, because re-encoding would cost quality on every
// pass; everything else, and any image whose EXIF orientation is not "upright", goes through vips (rotate
// upright, re-encode), because dropping EXIF there would silently turn the picture sideways.
//
// Dropped: EXIF, XMP, IPTC/Photoshop, C2PA/JUMBF (JPEG APP11, PNG caBX), comments, text chunks, timestamps,
// MPF/secondary images after the JPEG EOI, unknown ancillary chunks. Kept: the pixels, the ICC profile (unless
// keepIcc is false: without it, wide-gamut pictures shift colour), JFIF/Adobe markers, PNG colour and animation
// chunks, WebP animation and alpha.
import { MediaError } from "./errors.ts";
import { encodeImage, probeImage, withVips, type ImageFormat, type OutputImageFormat } from "./vips.ts";

export interface StripOptions {
  /** Keep the ICC colour profile (default true). */
  keepIcc?: boolean;
  /** Expected format; a mismatch is MediaError "unsupported" (e.g. a PNG sent as .jpg is still stripped if omitted). */
  format?: ImageFormat;
  /** Quality when the image has to be re-encoded (default 92). */
  quality?: number;
}

export interface StripResult {
  bytes: Uint8Array;
  format: ImageFormat;
  /** "lossless": segments copied, pixels untouched. "reencoded": decoded, rotated upright and encoded again. */
  method: "lossless" | "reencoded";
}

const latin1 = (b: Uint8Array, start: number, len: number) => String.fromCharCode(...b.subarray(start, start + len));

class Bytes {
  private parts: Uint8Array[] = [];
  private size = 0;
  push(p: Uint8Array): void {
    this.parts.push(p);
    this.size += p.length;
  }
  concat(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

const bad = (what: string) => new MediaError("invalid_input", what);

/** Copy a JPEG keeping only what decoding and colour need. Throws MediaError on malformed structure. */
export function stripJpeg(b: Uint8Array, keepIcc = true): Uint8Array {
  if (b[0] !== 0xff || b[1] !== 0xd8) throw bad("not a JPEG");
  const out = new Bytes();
  out.push(b.subarray(0, 2));
  let i = 2;
  while (i < b.length) {
    if (b[i] !== 0xff) throw bad(`JPEG: expected marker at ${i}`);
    while (b[i] === 0xff) i++; // fill bytes
    const m = b[i++];
    if (m === undefined) throw bad("JPEG: truncated marker");
    if (m === 0xd9) {
      out.push(Uint8Array.of(0xff, 0xd9));
      return out.concat(); // anything after EOI (MPF images, trailers) is dropped
    }
    if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      out.push(Uint8Array.of(0xff, m));
      continue;
    }
    if (i + 2 > b.length) throw bad("JPEG: truncated segment");
    const len = (b[i]! << 8) | b[i + 1]!;
    if (len < 2 || i + len > b.length) throw bad("JPEG: bad segment length");
    const body = i + 2;
    const end = i + len;
    let keep = true;
    if (m >= 0xe0 && m <= 0xef) {
      const id = latin1(b, body, Math.min(14, len - 2));
      keep = (m === 0xe0 && id.startsWith("JFIF\0")) || (m === 0xe2 && keepIcc && id.startsWith("ICC_PROFILE\0")) || (m === 0xee && id.startsWith("Adobe"));
    } else if (m === 0xfe) {
      keep = false; // COM
    }
    if (keep) out.push(b.subarray(i - 2, end));
    i = end;
    if (m === 0xda) {
      // Entropy-coded data runs until a marker that is not a stuffed 0xFF00 or a restart marker.
      let j = i;
      while (j < b.length - 1) {
        if (b[j] === 0xff) {
          const n = b[j + 1]!;
          if (n !== 0x00 && !(n >= 0xd0 && n <= 0xd7) && n !== 0xff) break;
        }
        j++;
      }
      if (j >= b.length - 1) throw bad("JPEG: no EOI");
      out.push(b.subarray(i, j));
      i = j;
    }
  }
  throw bad("JPEG: no EOI");
}

const PNG_SIG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
// Ancillary chunks needed to show the picture right (colour, transparency, animation, density).
const PNG_KEEP = new Set(["tRNS", "gAMA", "cHRM", "sRGB", "sBIT", "bKGD", "hIST", "pHYs", "sPLT", "cICP", "mDCv", "cLLi", "acTL", "fcTL", "fdAT"]);

/** Copy a PNG without text, EXIF, time, C2PA and unknown ancillary chunks. */
export function stripPng(b: Uint8Array, keepIcc = true): Uint8Array {
  if (!PNG_SIG.every((v, k) => b[k] === v)) throw bad("not a PNG");
  const out = new Bytes();
  out.push(b.subarray(0, 8));
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 8;
  while (i + 12 <= b.length) {
    const len = view.getUint32(i);
    const type = latin1(b, i + 4, 4);
    const end = i + 12 + len;
    if (end > b.length) throw bad("PNG: truncated chunk");
    const critical = (b[i + 4]! & 0x20) === 0;
    if (critical || PNG_KEEP.has(type) || (type === "iCCP" && keepIcc)) out.push(b.subarray(i, end));
    i = end;
    if (type === "IEND") return out.concat();
  }
  throw bad("PNG: no IEND");
}

/** Copy a WebP without EXIF/XMP (and ICCP when asked), fixing the VP8X flags and the RIFF size. */
export function stripWebp(b: Uint8Array, keepIcc = true): Uint8Array {
  if (latin1(b, 0, 4) !== "RIFF" || latin1(b, 8, 4) !== "WEBP") throw bad("not a WebP");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const riffEnd = Math.min(b.length, 8 + view.getUint32(4, true));
  const chunks: Uint8Array[] = [];
  let vp8x: Uint8Array | undefined;
  let i = 12;
  while (i + 8 <= riffEnd) {
    const type = latin1(b, i, 4);
    const len = view.getUint32(i + 4, true);
    const end = i + 8 + len + (len & 1);
    if (i + 8 + len > riffEnd) throw bad("WebP: truncated chunk");
    const chunk = b.subarray(i, Math.min(end, riffEnd));
    if (type === "VP8X") {
      vp8x = new Uint8Array(chunk); // copied: its flags are edited below
      chunks.push(vp8x);
    } else if (["VP8 ", "VP8L", "ALPH", "ANIM", "ANMF"].includes(type) || (type === "ICCP" && keepIcc)) {
      chunks.push(chunk);
    }
    i = end;
  }
  if (vp8x) {
    // VP8X flags byte: ICC 0x20, alpha 0x10, EXIF 0x08, XMP 0x04, animation 0x02.
    vp8x[8] = vp8x[8]! & ~0x0c & (keepIcc ? 0xff : ~0x20);
  }
  const body = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(12 + body);
  out.set(b.subarray(0, 12));
  new DataView(out.buffer).setUint32(4, 4 + body, true);
  let o = 12;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

const LOSSLESS: Partial<Record<ImageFormat, (b: Uint8Array, keepIcc: boolean) => Uint8Array>> = { jpeg: stripJpeg, png: stripPng, webp: stripWebp };
const WRITABLE: OutputImageFormat[] = ["jpeg", "png", "webp", "gif", "tiff", "avif", "heif"];

/** Remove EXIF/XMP/IPTC/C2PA and other metadata from an image (see the header for exactly what is kept). */
export async function stripImageMetadata(bytes: Uint8Array, options: StripOptions = {}): Promise<StripResult> {
  const keepIcc = options.keepIcc ?? true;
  const info = await probeImage(bytes);
  if (options.format && options.format !== info.format) {
    throw new MediaError("unsupported", `expected ${options.format}, got ${info.format}`);
  }
  const lossless = LOSSLESS[info.format];
  if (lossless && info.orientation === 1) {
    try {
      const out = lossless(bytes, keepIcc);
      await probeImage(out); // the copy must still be a readable image
      return { bytes: out, format: info.format, method: "lossless" };
    } catch {
      // Structure vips tolerates but our copier does not: fall back to decoding and re-encoding.
    }
  }
  const target: OutputImageFormat = (WRITABLE as string[]).includes(info.format) ? (info.format as OutputImageFormat) : info.hasAlpha ? "png" : "jpeg";
  const out = await withVips("invalid_input", (vips, track) => {
    // Animated images keep all their frames (and are never rotated: orientation tags on animations are noise).
    const img = info.pages > 1 ? track(vips.Image.newFromBuffer(bytes, "n=-1")) : track(track(vips.Image.newFromBuffer(bytes)).autorot());
    return encodeImage(img, target, { keepIcc, quality: options.quality ?? 92 });
  });
  return { bytes: out, format: target, method: "reencoded" };
}
