// The sandbox image provider: a real PNG at the requested pixel size, the same bytes for the same request,
// visibly made from the prompt (colours and shapes seeded by it, and its words drawn on the picture), with
// provenance metadata (EXIF and XMP, as generative providers attach) that `strip_metadata` then removes.
// It submits and polls as a remote service would (lib/sandbox-upstream.ts): the image is painted once
// SANDBOX_LATENCY_MS has passed, and polls before that report progress by the time elapsed.
//
// References (issue 36 item 6): the first reference whose picture the request carries (an upload; the upstream
// contract reads it at submit, lib/sandbox-upstream.ts) is the picture's subject: its picture is composited,
// 3:4, below the middle (lib/sandbox-pictures.ts `cardBox(..., "subject")`), the prompt written above it, and
// the gradient and discs take its dominant colours. A reference by URL only seeds the picture (the sandbox
// fetches nothing), as does a picture it cannot decode.
//
// Markers (docs/architecture.md "Sandbox providers"): `[sandbox:fail]` fails the job; `[sandbox:unsafe]` is a
// content-safety block; `[sandbox:flaky]` fails the first route transiently, so a model with a second
// provider shows its fallback.
import { createHash } from "node:crypto";
import {
  cardBox,
  definePlugin,
  dominantColours,
  type GeneratedImage,
  hasMarker,
  type ImageGenerationRequest,
  type ImageProvider,
  type ImageProviders,
  type Rgb,
  type SandboxPicture,
  type SandboxRequestStore,
  sandboxConfig,
  sandboxPicture,
  sandboxUpstream,
  TransientProviderError,
  UnsafeContentError,
  withoutMarkers,
} from "mediagate/plugin";
import { GLYPH_HEIGHT, GLYPH_WIDTH, glyph } from "./font5x7.ts";
import { encodePng, exifChunk, xmpChunk } from "./png.ts";

const SOFTWARE = "mediagate sandbox image provider";

const xmlEscape = (s: string) => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

function provenanceXmp(req: ImageGenerationRequest): string {
  return `<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    xmp:CreatorTool="${SOFTWARE}"
    Iptc4xmpExt:DigitalSourceType="http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia">
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">${xmlEscape(req.prompt)}</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>`;
}

/** Deterministic bytes from a seed (SHA-256 in counter mode). */
function seededBytes(seed: string, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0, block = 0; i < n; block++) {
    const h = createHash("sha256").update(`${seed}:${block}`).digest();
    out.set(h.subarray(0, Math.min(32, n - i)), i);
    i += 32;
  }
  return out;
}

function wrap(text: string, perLine: number, maxLines: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (!word) continue;
    const next = line ? `${line} ${word}` : word;
    if (next.length <= perLine) line = next;
    else {
      if (line) lines.push(line);
      line = word.slice(0, perLine);
    }
    if (lines.length === maxLines) break;
  }
  if (line && lines.length < maxLines) lines.push(line);
  return lines;
}

/** A reference as the picture uses it: sized to its card, and its dominant colours. */
export interface PaintSubject {
  picture: SandboxPicture;
  colours: Rgb[];
}

/** The subject of a request: its first reference whose bytes came with it, decoded; null without one. */
export async function paintSubject(
  req: Pick<ImageGenerationRequest, "width" | "height" | "references">,
): Promise<PaintSubject | null> {
  const ref = req.references.find((r) => (r as { bytes?: unknown }).bytes instanceof Uint8Array) as
    | { bytes: Uint8Array }
    | undefined;
  if (!ref) return null;
  const box = cardBox(req.width, req.height, "subject");
  try {
    return {
      picture: await sandboxPicture(ref.bytes, box.width, box.height),
      colours: await dominantColours(ref.bytes, 3),
    };
  } catch {
    return null; // accepted by the plugin, undecodable here: the picture is seeded as without it
  }
}

const shade = (c: Rgb, f: number): Rgb => c.map((v) => Math.max(0, Math.min(255, Math.round(v * f)))) as Rgb;

/** Paints the picture: a two-colour gradient, seeded discs, and the prompt's words; with a subject, its picture and colours. */
export function paint(
  req: Pick<ImageGenerationRequest, "prompt" | "model" | "width" | "height" | "background" | "index" | "references">,
  subject: PaintSubject | null = null,
): { pixels: Uint8Array; channels: 3 | 4 } {
  const { width, height } = req;
  const refs = req.references.map((r) => r.id);
  const seed = createHash("sha256")
    .update(JSON.stringify([req.model, req.prompt, width, height, req.background, req.index, refs]))
    .digest("hex");
  const r = seededBytes(seed, 64);
  const transparent = req.background === "transparent";
  const channels = transparent ? 4 : 3;
  const px = new Uint8Array(width * height * channels);
  const palette = subject?.colours.length ? subject.colours : null;
  const top = palette ? palette[0]! : [r[0]!, r[1]!, r[2]!];
  const bottom = palette ? (palette[1] ?? shade(palette[0]!, 0.7)) : [r[3]!, r[4]!, r[5]!];

  // Gradient, one row colour at a time.
  for (let y = 0; y < height; y++) {
    const t = y / Math.max(1, height - 1);
    const c = [0, 1, 2].map((i) => Math.round(top[i]! * (1 - t) + bottom[i]! * t));
    for (let x = 0, o = y * width * channels; x < width; x++, o += channels) {
      px[o] = c[0]!;
      px[o + 1] = c[1]!;
      px[o + 2] = c[2]!;
      // With a transparent background only the "subject" (the centre ellipse below) is opaque.
      if (transparent) px[o + 3] = 0;
    }
  }
  const fill = (
    x0: number,
    y0: number,
    w: number,
    h: number,
    rgb: readonly number[],
    mask?: (x: number, y: number) => boolean,
  ) => {
    const xs = Math.max(0, x0),
      ys = Math.max(0, y0),
      xe = Math.min(width, x0 + w),
      ye = Math.min(height, y0 + h);
    for (let y = ys; y < ye; y++) {
      for (let x = xs, o = (y * width + xs) * channels; x < xe; x++, o += channels) {
        if (mask && !mask(x, y)) continue;
        px[o] = rgb[0]!;
        px[o + 1] = rgb[1]!;
        px[o + 2] = rgb[2]!;
        if (transparent) px[o + 3] = 255;
      }
    }
  };
  // The subject: an ellipse in the middle, then discs seeded by the prompt; with a reference, no ellipse, the
  // discs in its colours (lighter or darker), and its picture over them.
  const cx = width / 2,
    cy = height / 2,
    rx = width * 0.42,
    ry = height * 0.42;
  if (!palette)
    fill(0, 0, width, height, [r[6]!, r[7]!, r[8]!], (x, y) => ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1);
  for (let i = 0; i < 6; i++) {
    const b = 9 + i * 8;
    const dx = cx + ((r[b]! - 128) / 128) * rx * 0.6,
      dy = cy + ((r[b + 1]! - 128) / 128) * ry * 0.6;
    const rad = (Math.min(width, height) * (0.04 + (r[b + 2]! / 255) * 0.12)) | 0;
    const colour = palette
      ? shade(palette[i % palette.length]!, 0.75 + (r[b + 3]! / 255) * 0.5)
      : [r[b + 3]!, r[b + 4]!, r[b + 5]!];
    fill(
      (dx - rad) | 0,
      (dy - rad) | 0,
      rad * 2,
      rad * 2,
      colour,
      (x, y) => (x - dx) ** 2 + (y - dy) ** 2 <= rad * rad,
    );
  }
  const card = subject ? cardBox(width, height, "subject") : null;
  if (subject && card) {
    const { picture } = subject;
    for (let y = 0; y < Math.min(picture.height, height - card.y); y++) {
      for (
        let x = 0, o = ((card.y + y) * width + card.x) * channels, i = y * picture.width * 3;
        x < Math.min(picture.width, width - card.x);
        x++, o += channels, i += 3
      ) {
        px[o] = picture.rgb[i]!;
        px[o + 1] = picture.rgb[i + 1]!;
        px[o + 2] = picture.rgb[i + 2]!;
        if (transparent) px[o + 3] = 255;
      }
    }
  }
  // The prompt, white on a dark band, inside the subject so it survives a transparent background.
  const scale = Math.max(1, Math.floor(width / 6 / 36));
  const cell = (GLYPH_WIDTH + 1) * scale;
  const perLine = Math.max(1, Math.floor((rx * 1.3) / cell));
  const lineHeight = (GLYPH_HEIGHT + 3) * scale;
  // Over a subject picture the words go above it, as many lines as fit there.
  const top0 = Math.round(height * 0.04);
  const lines = wrap(
    withoutMarkers(req.prompt) || req.prompt,
    perLine,
    card ? Math.max(0, Math.min(6, Math.floor((card.y - top0 - scale) / lineHeight))) : 6,
  );
  let y0 = card ? top0 : Math.round(cy - (lines.length * lineHeight) / 2);
  for (const line of lines) {
    const x0 = Math.round(cx - (line.length * cell) / 2);
    fill(x0 - scale, y0 - scale, line.length * cell + scale, lineHeight, [16, 16, 16]);
    for (let i = 0; i < line.length; i++) {
      const rows = glyph(line[i]!);
      for (let gy = 0; gy < GLYPH_HEIGHT; gy++) {
        for (let gx = 0; gx < GLYPH_WIDTH; gx++) {
          if (rows[gy]! & (0x10 >> gx))
            fill(x0 + i * cell + gx * scale, y0 + gy * scale, scale, scale, [255, 255, 255]);
        }
      }
    }
    y0 += lineHeight;
  }
  return { pixels: px, channels };
}

export function sandboxImageProvider(options: { latencyMs: number; store?: SandboxRequestStore }): ImageProviders {
  const provider = (route: string): ImageProvider =>
    sandboxUpstream<ImageGenerationRequest, GeneratedImage>({
      name: `images-sandbox-${route}`,
      latencyMs: options.latencyMs,
      ...(options.store ? { store: options.store } : {}),
      check(req) {
        if (hasMarker(req.prompt, "fail")) throw new Error("sandbox: failure requested by the prompt");
        if (hasMarker(req.prompt, "unsafe"))
          throw new UnsafeContentError("sandbox: unsafe content requested by the prompt");
        if (hasMarker(req.prompt, "flaky") && route === "primary")
          throw new TransientProviderError("sandbox: transient failure of the first route");
      },
      async render(req) {
        const { pixels, channels } = paint(req, await paintSubject(req));
        const metadata = [
          exifChunk([
            { tag: 0x010e, value: req.prompt }, // ImageDescription
            { tag: 0x0131, value: SOFTWARE }, // Software
            { tag: 0x013b, value: "mediagate" }, // Artist
          ]),
          xmpChunk(provenanceXmp(req)),
        ];
        return { bytes: encodePng(req.width, req.height, pixels, channels, metadata), mimeType: "image/png" };
      },
    });
  const routes = { primary: provider("primary"), secondary: provider("secondary") };
  return { route: (name) => routes[name as keyof typeof routes] };
}

/** Provides `image.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "images-sandbox",
  config: sandboxConfig,
  provides: {
    "image.generate": (host) =>
      sandboxImageProvider({ latencyMs: sandboxConfig.of(host).latencyMs, store: host.blobs.scoped("images-sandbox") }),
  },
});
