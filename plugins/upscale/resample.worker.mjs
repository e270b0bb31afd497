// Worker thread that upscales one image with wasm-vips for resample.ts.
//
// Why a worker: vips calls are synchronous on the calling thread, and an 8K output takes seconds to resample
// and encode; on the main thread that would freeze the server (requests, queue heartbeats). Why plain JS:
// worker threads do not inherit tsx's loader, and Deno and Node both run .mjs as is.
//
// Protocol: in  {id, bytes: Uint8Array, factor: 1|2|4, sharpen: {sigma, m1, m2}}
//           out {id, ok: true, bytes, width, height} | {id, ok: false, message}
import { parentPort } from "node:worker_threads";

const { default: Vips } = await import("wasm-vips");
const vips = await Vips({
  // JPEG, PNG and WebP are built in; the optional HEIF/JXL/SVG modules would only cost startup.
  dynamicLibraries: [],
  print: () => {},
  printErr: () => {},
  preRun: [(m) => void (m.ENV.VIPS_WARNING = "0")],
});
// Inputs come from partners: loaders libvips marks as unsafe for untrusted data are refused.
vips.blockUntrusted(true);
// The operation cache keys on buffers we never reuse; it would only keep memory alive.
vips.Cache.max(0);

function describe(e) {
  if (Array.isArray(e)) return e.join(": ").trim();
  // A bare wasm exception carries no text; it is what a loader throws on a damaged file.
  if (typeof WebAssembly.Exception === "function" && e instanceof WebAssembly.Exception)
    return "libvips could not read or process the image";
  if (e instanceof Error) return e.message;
  return String(e);
}

function upscale(bytes, factor, sharpen) {
  const images = [];
  const track = (i) => {
    images.push(i);
    return i;
  };
  try {
    // Upright first: the output is measured and priced as displayed (EXIF orientation applied). A truncated
    // file fails here rather than coming out half grey: the job is refunded instead of delivering that.
    let img = track(track(vips.Image.newFromBuffer(bytes, "", { fail_on: "truncated" })).autorot());
    // PNG has no CMYK; print JPEGs are turned into screen colours.
    if (img.interpretation === "cmyk") img = track(img.colourspace("srgb"));
    if (factor > 1) {
      if (img.hasAlpha()) {
        // Premultiplied, or transparent pixels' colours would bleed into the edges of opaque ones.
        const format = img.format;
        img = track(track(track(img.premultiply()).resize(factor, { kernel: "lanczos3" })).unpremultiply());
        img = track(img.cast(format));
      } else {
        img = track(img.resize(factor, { kernel: "lanczos3" }));
      }
    }
    if (img.hasAlpha()) {
      // Sharpened where fully opaque only: at a soft edge the mask would mix in the colour of invisible pixels
      // (black after unpremultiplying) and tint what shows through.
      const colour = track(img.extractBand(0, { n: img.bands - 1 }));
      const alpha = track(img.extractBand(img.bands - 1));
      const opaque = track(alpha.moreEq([img.format === "ushort" ? 65535 : 255]));
      const sharp = track(track(colour.sharpen(sharpen)).cast(colour.format));
      img = track(track(opaque.ifthenelse(sharp, colour)).bandjoin([alpha]));
    } else {
      img = track(img.sharpen(sharpen));
    }
    // Only the ICC profile is kept (keep = icc): the output is a new image, not the source's carrier.
    const out = img.writeToBuffer(".png", { keep: 8 });
    return { bytes: out, width: img.width, height: img.height };
  } finally {
    for (const i of images) if (!i.isDeleted()) i.delete();
  }
}

parentPort.on("message", ({ id, bytes, factor, sharpen }) => {
  try {
    const out = upscale(bytes, factor, sharpen);
    parentPort.postMessage({ id, ok: true, ...out }, [out.bytes.buffer]);
  } catch (e) {
    parentPort.postMessage({ id, ok: false, message: describe(e) });
  }
});
parentPort.postMessage({ ready: true });
