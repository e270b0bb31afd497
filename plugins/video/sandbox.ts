// The sandbox video provider: a real H.264 MP4 of the requested size and length, rendered with the media engine
// (native ffmpeg or ffmpeg.wasm, the same arguments), deterministic from the request, with provenance metadata
// as generative providers attach (container tags, an XMP box and a C2PA-style manifest box) that
// `strip_metadata` then removes. It takes about SANDBOX_LATENCY_MS before rendering and reports progress.
//
// What the picture is:
// - with a start frame: the frame itself first, then a slow zoom whose speed comes from the prompt; with an
//   end frame too, a crossfade into the end frame, which zooms out to be exactly the last picture;
// - without frames: a moving test scene, its colours turning at a prompt-seeded speed and direction, with the
//   prompt's words scrolling over it (drawn from a text file, never from the filter graph).
// Sound, when asked: a prompt-seeded three-note chord that swells, AAC 48 kHz stereo.
//
// Markers (DESIGN "Sandbox providers"): `[sandbox:fail]` fails, `[sandbox:unsafe]` is a content-safety block,
// a frame URL whose path contains `sandbox-fail` fails.
import { createHash } from "node:crypto";
import { appendTopLevelBox, concatBytes, definePlugin, findSystemFont, type GeneratedVideo, hasMarker, isoBmffBox, type MediaEngine, MP4_UUIDS, sandboxConfig, sandboxSleep, sniffImageType, UnsafeContentError, type VideoFrame, type VideoGenerationRequest, type VideoProvider, type VideoProviders, withoutMarkers } from "mediagate/plugin";

const SOFTWARE = "mediagate sandbox video provider";
const FPS = 25;
const IMAGE_EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

/** Numbers in [0, 1) seeded by the request: the same request renders the same clip. */
function seeded(seed: string): () => number {
  let counter = 0;
  return () => createHash("sha256").update(`${seed}:${counter++}`).digest().readUInt32BE(0) / 2 ** 32;
}

function sniffExt(frame: VideoFrame): string {
  return IMAGE_EXT[sniffImageType(frame.bytes) ?? frame.mimeType] ?? "png";
}

const xmlEscape = (s: string) => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

function provenanceXmp(req: VideoGenerationRequest): Uint8Array {
  return new TextEncoder().encode(`<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/" xmp:CreatorTool="${SOFTWARE}"
    Iptc4xmpExt:DigitalSourceType="http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia">
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">${xmlEscape(req.prompt.slice(0, 1000))}</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>`);
}

/** A C2PA-shaped manifest box payload: purpose, offset, and a JUMBF superbox labelled "c2pa". */
function c2paPayload(req: VideoGenerationRequest): Uint8Array {
  const enc = new TextEncoder();
  const c2paType = Uint8Array.from([0x63, 0x32, 0x70, 0x61, 0x00, 0x11, 0x00, 0x10, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71]);
  const jumd = isoBmffBox("jumd", new Uint8Array([...c2paType, 0x03, ...enc.encode("c2pa"), 0]));
  const claim = isoBmffBox("json", enc.encode(JSON.stringify({ claim_generator: SOFTWARE, digital_source_type: "trainedAlgorithmicMedia", prompt_sha256: createHash("sha256").update(req.prompt).digest("hex") })));
  const jumb = isoBmffBox("jumb", concatBytes([jumd, claim]));
  // version/flags (4), purpose "manifest\0", offset to the manifest (8 bytes, 0 = none), then the JUMBF.
  return new Uint8Array([0, 0, 0, 0, ...enc.encode("manifest"), 0, 0, 0, 0, 0, 0, 0, 0, 0, ...jumb]);
}

/** The ffmpeg arguments and inputs of one clip. */
export function sandboxRender(req: VideoGenerationRequest): { args: string[]; inputs: Record<string, Uint8Array> } {
  const { width: W, height: H, seconds: T } = req;
  const rnd = seeded(`${req.model}|${req.prompt}|${W}x${H}|${T}|${req.negativePrompt ?? ""}`);
  const frames = Math.round(T * FPS);
  const inputs: Record<string, Uint8Array> = {};
  const args: string[] = [];
  const filters: string[] = [];
  let video: string;

  const cover = `scale=${W}:${H}:force_original_aspect_ratio=increase,crop=${W}:${H},setsar=1`;
  // Zoom per output frame, from the prompt: 0.05 %..0.2 % a frame.
  const zoomStep = (0.0005 + rnd() * 0.0015).toFixed(5);
  const centre = `x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)'`;
  if (req.startFrame) {
    const ext = sniffExt(req.startFrame);
    inputs[`start.${ext}`] = req.startFrame.bytes;
    if (req.endFrame) {
      const endExt = sniffExt(req.endFrame);
      inputs[`end.${endExt}`] = req.endFrame.bytes;
      // Two streams of 0.8 T crossfaded over the middle 0.6 T: the result lasts exactly T.
      const part = Math.max(2, Math.round(frames * 0.8));
      const fade = (part / FPS) * 0.75;
      const offset = (frames - part) / FPS;
      args.push("-loop", "1", "-framerate", String(FPS), "-i", `start.${ext}`, "-loop", "1", "-framerate", String(FPS), "-i", `end.${endExt}`);
      filters.push(`[0:v]${cover},zoompan=z='1+${zoomStep}*on':${centre}:d=1:s=${W}x${H}:fps=${FPS},trim=end_frame=${part},setpts=PTS-STARTPTS,format=yuv420p[a]`);
      // The end frame zooms out to exactly itself on the last frame.
      filters.push(`[1:v]${cover},zoompan=z='1+${zoomStep}*(${part - 1}-on)':${centre}:d=1:s=${W}x${H}:fps=${FPS},trim=end_frame=${part},setpts=PTS-STARTPTS,format=yuv420p[b]`);
      filters.push(`[a][b]xfade=transition=fade:duration=${fade.toFixed(3)}:offset=${offset.toFixed(3)},format=yuv420p[v]`);
    } else {
      args.push("-loop", "1", "-framerate", String(FPS), "-i", `start.${ext}`);
      filters.push(`[0:v]${cover},zoompan=z='1+${zoomStep}*on':${centre}:d=1:s=${W}x${H}:fps=${FPS},trim=end_frame=${frames},format=yuv420p[v]`);
    }
    video = "[v]";
  } else {
    const hue = Math.round(rnd() * 360);
    const turn = ((rnd() < 0.5 ? -1 : 1) * (20 + rnd() * 70)).toFixed(1); // degrees per second
    args.push("-f", "lavfi", "-i", `testsrc2=size=${W}x${H}:rate=${FPS}:duration=${T}`);
    let chain = `[0:v]hue=h='${hue}+${turn}*t':s=${(0.6 + rnd() * 0.8).toFixed(2)}`;
    const font = findSystemFont();
    const text = withoutMarkers(req.prompt);
    if (font && text) {
      inputs["font.ttf"] = font;
      inputs["prompt.txt"] = new TextEncoder().encode(wrap(text, Math.max(10, Math.floor(W / (Math.max(12, Math.round(Math.min(W, H) / 16)) * 0.6)) - 2), 6));
      const size = Math.max(12, Math.round(Math.min(W, H) / 16));
      const speed = Math.round((H / T) * (0.4 + rnd() * 0.4)); // pixels per second, upwards
      chain += `,drawtext=fontfile=font.ttf:textfile=prompt.txt:expansion=none:fontsize=${size}:fontcolor=white:box=1:boxcolor=black@0.5:boxborderw=${Math.round(size / 3)}:x=(w-text_w)/2:y=h-mod(t*${speed}\\,h+text_h)`;
    }
    filters.push(`${chain},format=yuv420p[v]`);
    video = "[v]";
  }

  const audioIndex = req.startFrame ? (req.endFrame ? 2 : 1) : 1;
  if (req.sound) {
    const root = 110 * 2 ** (Math.floor(rnd() * 12) / 12);
    const [a, b, c] = [root, root * 2 ** ((rnd() < 0.5 ? 3 : 4) / 12), root * 2 ** (7 / 12)].map((f) => f.toFixed(2));
    const swell = (0.1 + rnd() * 0.4).toFixed(2);
    args.push("-f", "lavfi", "-i", `aevalsrc=(0.22*sin(2*PI*${a}*t)+0.16*sin(2*PI*${b}*t)+0.12*sin(2*PI*${c}*t))*(0.65+0.35*sin(2*PI*${swell}*t)):s=48000:d=${T}`);
  }
  args.push("-filter_complex", filters.join(";"), "-map", video);
  if (req.sound) args.push("-map", `${audioIndex}:a`, "-c:a", "aac", "-b:a", "128k", "-ac", "2", "-ar", "48000");
  args.push(
    "-c:v", "libx264", "-preset", "ultrafast", "-crf", "26", "-pix_fmt", "yuv420p", "-r", String(FPS),
    "-frames:v", String(frames), "-t", String(T),
    "-metadata", `title=${req.prompt.slice(0, 200)}`,
    "-metadata", `comment=Generated by ${SOFTWARE}`,
    "-metadata", "encoder=mediagate sandbox",
    "-movflags", "+faststart",
    "out.mp4",
  );
  return { args, inputs };
}

function wrap(text: string, perLine: number, maxLines: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (!word) continue;
    const w = word.length > perLine ? word.slice(0, perLine - 1) + "…" : word;
    if ((line ? line.length + 1 : 0) + w.length > perLine) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.slice(0, maxLines).join("\n");
}

export function sandboxVideoProvider(options: { latencyMs: number; media: () => MediaEngine }): VideoProviders {
  const provider: VideoProvider = {
    async generate(req): Promise<GeneratedVideo> {
      const steps = 4;
      for (let i = 0; i < steps; i++) {
        await sandboxSleep(options.latencyMs / steps, req.signal);
        if (i === 0) {
          if (hasMarker(req.prompt, "fail")) throw new Error("sandbox: failure requested by the prompt");
          if (hasMarker(req.prompt, "unsafe")) throw new UnsafeContentError("sandbox: unsafe content requested by the prompt");
          for (const f of [req.startFrame, req.endFrame]) {
            if (f?.url && new URL(f.url).pathname.includes("sandbox-fail")) throw new Error("sandbox: failure requested by the frame URL");
          }
        }
        await req.onProgress(((i + 1) / steps) * 0.2, "Generating");
      }
      const { args, inputs } = sandboxRender(req);
      const out = await options.media().run(args, {
        inputs,
        outputs: ["out.mp4"],
        signal: req.signal,
        durationSeconds: req.seconds,
        timeoutMs: 20 * 60_000,
        onProgress: (f) => void Promise.resolve(req.onProgress(0.2 + f * 0.8, "Rendering")).catch(() => {}),
      });
      let bytes = out["out.mp4"]!;
      bytes = appendTopLevelBox(bytes, "uuid", provenanceXmp(req), MP4_UUIDS.xmp);
      bytes = appendTopLevelBox(bytes, "uuid", c2paPayload(req), MP4_UUIDS.c2pa);
      return { bytes, mimeType: "video/mp4" };
    },
  };
  return { forModel: () => provider };
}

/** Provides `video.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "video-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    // The engine is fetched on first render: capabilities are built at boot, ffmpeg.wasm is not.
    "video.generate": (host) => sandboxVideoProvider({ latencyMs: sandboxConfig.of(host).latencyMs, media: () => host.capability("media") }),
  },
});
