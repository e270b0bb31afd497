// Image resampling on native libvips, through sharp, when sharp is installed (an optional dependency; its
// prebuilt libvips comes from the npm registry). The same steps as the wasm-vips worker (resample.worker.mjs):
// upright first, CMYK to sRGB, Lanczos-3 on premultiplied alpha, the enhance pass (an unsharp mask on
// lightness) on fully opaque pixels only, a PNG that keeps only the ICC profile. sharp runs on libuv's
// threads, so the event loop stays free without a worker of our own.
//
// An abort rejects at once; the native work already started finishes in the background (sharp cannot stop a
// pipeline) and its result is dropped.
import { availableParallelism } from "node:os";
import { MediaError } from "mediagate/plugin";
import type { Factor } from "./prices.ts";
import type { Resampled } from "./resample.ts";

type SharpModule = typeof import("sharp").default;
type Sharpen = { sigma: number; m1: number; m2: number };

let loading: Promise<SharpModule | null> | undefined;

/** sharp, or null when it is not installed (or its native part cannot load here). Looked for once. */
export function loadSharp(): Promise<SharpModule | null> {
  loading ??= import("sharp").then(
    (m) => {
      const sharp = m.default;
      // Its own cache keys on inputs we never reuse; it would only keep memory alive.
      sharp.cache(false);
      // sharp gives libvips one thread per operation on glibc (against allocator fragmentation); with every
      // core it resamples twice as fast here (4x to 8192x5460: 2.1 s against 4.1 s) for the same RSS over
      // eight runs in a row (142-143 MB). The media pool already bounds how many run at once.
      sharp.concurrency(availableParallelism());
      return sharp;
    },
    () => null,
  );
  return loading;
}

async function resample(sharp: SharpModule, bytes: Uint8Array, factor: Factor, sharpen: Sharpen): Promise<Resampled> {
  // Partner input: a truncated file fails rather than coming out half grey; no pixel limit beyond the 8K rule
  // the plugin checked before the charge.
  const open = () => sharp(bytes, { failOn: "truncated", limitInputPixels: false, animated: false });
  const meta = await open().metadata();
  // Displayed size: orientations 5-8 swap the axes.
  const swap = (meta.orientation ?? 1) >= 5;
  const width = (swap ? meta.height! : meta.width!) * factor;
  const height = (swap ? meta.width! : meta.height!) * factor;
  // sRGB out (sharp turns CMYK into it by itself); only the source's ICC profile is kept, not a CMYK one.
  const upright = () => {
    const img = open().autoOrient();
    const sized = factor > 1 ? img.resize({ width, height, kernel: "lanczos3", fit: "fill" }) : img; // sharp premultiplies alpha itself
    return meta.space === "cmyk" ? sized : sized.keepIccProfile();
  };
  const png = async (img: import("sharp").Sharp): Promise<Resampled> => {
    const out = await img.png().toBuffer({ resolveWithObject: true });
    return {
      bytes: new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength),
      width: out.info.width,
      height: out.info.height,
    };
  };
  if (!meta.hasAlpha) return png(upright().sharpen(sharpen));
  // With alpha: sharpened where fully opaque only (at a soft edge the mask would mix in the colour of invisible
  // pixels and tint what shows through), as the wasm path does: the sharpened colour, with "fully opaque" as
  // its alpha, laid over the resampled image.
  const rgba = await upright().ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width: w, height: h } = rgba.info;
  const raw = (channels: 1 | 3 | 4) => ({ raw: { width: w, height: h, channels } });
  // The unpremultiplied colour, as vips sharpens it (after the resize an invisible pixel is black). Taken out
  // in a pipeline of its own: in one with the sharpen, sharp would sharpen the premultiplied colour before
  // dropping the alpha, and the darker soft edge would fringe the opaque pixels next to it.
  const colour = await sharp(rgba.data, raw(4)).removeAlpha().raw().toBuffer();
  const sharpened = await sharp(colour, raw(3)).sharpen(sharpen).raw().toBuffer();
  const opaque = await sharp(rgba.data, raw(4)).extractChannel(3).threshold(255, { grayscale: true }).raw().toBuffer();
  const overlay = await sharp(sharpened, raw(3)).joinChannel(opaque, raw(1)).png({ compressionLevel: 0 }).toBuffer();
  return png(upright().composite([{ input: overlay, blend: "over" }]));
}

/** Upscales with sharp; MediaError "invalid_input" when libvips cannot read the image, "aborted" on abort. */
export function upscaleNative(
  sharp: SharpModule,
  bytes: Uint8Array,
  factor: Factor,
  sharpen: Sharpen,
  signal?: AbortSignal,
): Promise<Resampled> {
  if (signal?.aborted) return Promise.reject(new MediaError("aborted", "aborted by caller"));
  return new Promise<Resampled>((resolve, reject) => {
    const onAbort = () => reject(new MediaError("aborted", "aborted by caller"));
    signal?.addEventListener("abort", onAbort, { once: true });
    resample(sharp, bytes, factor, sharpen).then(
      (out) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(out);
      },
      (err: unknown) => {
        signal?.removeEventListener("abort", onAbort);
        reject(new MediaError("invalid_input", `vips: ${err instanceof Error ? err.message : String(err)}`));
      },
    );
  });
}
