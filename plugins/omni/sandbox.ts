// The sandbox Omni provider (capability `omni.generate`): a real H.264/AAC MP4 of the requested size and length,
// rendered with the media engine (native ffmpeg or ffmpeg.wasm, the same arguments), deterministic from the
// request, with the provenance metadata generative providers attach (container tags, XMP, a C2PA-shaped box)
// for `strip_metadata` to remove. It submits and polls as a remote service would (lib/sandbox-upstream.ts):
// the clip is rendered once SANDBOX_LATENCY_MS has passed; polls before that report progress by the time
// elapsed (the first 15 % of the bar; the render fills the rest).
//
// What the picture is (25 fps; x264 `veryfast` at 1080p, `ultrafast` at 4k, where the pixel count is 4x):
// - `omni-1.1` with a first frame: the clip starts on exactly that picture, slowly pushing in; with a last
//   frame it cross-fades into it, which zooms out to be exactly the last picture;
// - otherwise the characters' images (else the reference images), up to three, each a slow push-in, cross-
//   fading one into the next; with none, a moving colour scene seeded by the prompt;
// - with characters and reference images both (a batch section's image, or `image_urls` beside
//   `character_ids`: issue 36 item 6), the reference images are the scene (the stills above) and the characters
//   stand in it: each one's picture, 3:4, side by side in the middle of the frame (lib/sandbox-pictures.ts
//   `cardRow`), sized once and overlaid on every frame;
// - a reference video (already cut to its window and normalized by the plugin) is composited picture-in-
//   picture in the lower right corner, a third of the frame wide, from the start for its own length.
// The sound: a quiet prompt-seeded chord, and over it the prompt's quoted lines spoken with each speaker's
// preset voice (sandbox-speech.ts); the words' times in the file come back as `spoken`.
//
// Markers (docs/architecture.md "Sandbox providers"), checked a quarter of the way through the latency: `[sandbox:unsafe]` is
// a prompt-fixable safety block (checked before `[sandbox:fail]`, a plain failure); a frame or image URL whose
// path contains `sandbox-fail` fails.
import { createHash } from "node:crypto";
import {
  AAC_STEREO_ARGS,
  type CardBox,
  cardRow,
  definePlugin,
  FASTSTART_ARGS,
  type GeneratedVideo,
  generatedClipTags,
  h264Args,
  hasMarker,
  type MediaEngine,
  type OmniGenerationRequest,
  type OmniProvider,
  type SandboxRequestStore,
  sandboxCardPng,
  sandboxConfig,
  sandboxUpstream,
  sniffImageType,
  UnsafeContentError,
  type VideoFrame,
  voiceOverBed,
  withSandboxProvenance,
} from "mediagate/plugin";
import { type ClipSpeech, clipSpeech, quotedLines, SPEECH_START } from "./sandbox-speech.ts";

const SOFTWARE = "mediagate sandbox omni provider";
const FPS = 25;
const MAX_STILLS = 3;
const IMAGE_EXT: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };
const BED_GAIN = 0.1;
const VOICE_GAIN = 1.25;

/** Numbers in [0, 1) seeded by the request: the same request renders the same clip. */
function seeded(seed: string): () => number {
  let counter = 0;
  return () => createHash("sha256").update(`${seed}:${counter++}`).digest().readUInt32BE(0) / 2 ** 32;
}

const extOf = (f: VideoFrame) => IMAGE_EXT[sniffImageType(f.bytes) ?? f.mimeType] ?? "png";

/** The stills the clip animates, in order, and whether the last one must end the clip exactly (a last frame). */
function stillsOf(req: OmniGenerationRequest): { stills: VideoFrame[]; endsOnLast: boolean } {
  if (req.firstFrame)
    return { stills: req.lastFrame ? [req.firstFrame, req.lastFrame] : [req.firstFrame], endsOnLast: !!req.lastFrame };
  const pictures =
    req.characters.length > 0 && req.referenceImages.length === 0
      ? req.characters.map((c) => c.image)
      : req.referenceImages;
  return { stills: pictures.slice(0, MAX_STILLS), endsOnLast: false };
}

/** A character standing in a scene of reference images: its picture sized to its box (PNG), and the box. */
export interface OmniCard {
  png: Uint8Array;
  box: CardBox;
}

/** The characters' cards when reference images make the scene (none otherwise, or for a picture libvips cannot read). */
export async function omniCards(req: OmniGenerationRequest): Promise<OmniCard[]> {
  if (req.firstFrame || req.characters.length === 0 || req.referenceImages.length === 0) return [];
  const people = req.characters.slice(0, MAX_STILLS);
  const boxes = cardRow(req.width, req.height, people.length);
  const cards: OmniCard[] = [];
  for (const [i, c] of people.entries()) {
    try {
      cards.push({ png: await sandboxCardPng(c.image.bytes, boxes[i]!.width, boxes[i]!.height), box: boxes[i]! });
    } catch {}
  }
  return cards;
}

/** The ffmpeg arguments and inputs of one clip. */
export function omniRender(
  req: OmniGenerationRequest,
  speech: ClipSpeech | null,
  cards: OmniCard[] = [],
): { args: string[]; inputs: Record<string, Uint8Array> } {
  const { width: W, height: H, seconds: T } = req;
  const rnd = seeded(`${req.seed ?? ""}|${req.model}|${req.prompt}|${W}x${H}|${T}`);
  const frames = Math.round(T * FPS);
  const inputs: Record<string, Uint8Array> = {};
  const args: string[] = [];
  const filters: string[] = [];
  let index = 0;

  const { stills, endsOnLast } = stillsOf(req);
  const cover = `scale=${W}:${H}:force_original_aspect_ratio=increase,crop=${W}:${H},setsar=1`;
  const centre = `x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)'`;
  const zoomStep = (0.0004 + rnd() * 0.0008).toFixed(5);
  if (stills.length > 0) {
    // n segments of L frames overlapping by F: n L - (n - 1) F = frames.
    const n = stills.length;
    const fade = n > 1 ? Math.max(2, Math.round(Math.min(FPS, frames / (2 * n)))) : 0;
    const length = Math.ceil((frames + (n - 1) * fade) / n);
    for (const [i, still] of stills.entries()) {
      const name = `still-${i + 1}.${extOf(still)}`;
      inputs[name] = still.bytes;
      // Read once, not looped: the picture is decoded and scaled to the frame once, and zoompan makes all of
      // the segment's frames from that one (d = length). `-loop 1` decoded and scaled the full picture for
      // every frame: a 16,000 px still took 3.3 GB and 100 s for a 4 s clip.
      args.push("-i", name);
      // The last frame of omni-1.1 zooms out to exactly itself; every other still starts exactly as given.
      const zoom = endsOnLast && i === n - 1 ? `1+${zoomStep}*(${length - 1}-on)` : `1+${zoomStep}*on`;
      filters.push(
        `[${index}:v]${cover},zoompan=z='${zoom}':${centre}:d=${length}:s=${W}x${H}:fps=${FPS},trim=end_frame=${length},setpts=PTS-STARTPTS,format=yuv420p[s${i}]`,
      );
      index++;
    }
    let last = "s0";
    for (let i = 1; i < n; i++) {
      const offset = (i * (length - fade)) / FPS;
      filters.push(
        `[${last}][s${i}]xfade=transition=fade:duration=${(fade / FPS).toFixed(3)}:offset=${offset.toFixed(3)}[x${i}]`,
      );
      last = `x${i}`;
    }
    filters.push(`[${last}]trim=end_frame=${frames},format=yuv420p[base]`);
  } else {
    const hue = Math.round(rnd() * 360);
    const turn = ((rnd() < 0.5 ? -1 : 1) * (20 + rnd() * 70)).toFixed(1);
    args.push("-f", "lavfi", "-i", `testsrc2=size=${W}x${H}:rate=${FPS}:duration=${T}`);
    filters.push(`[${index}:v]hue=h='${hue}+${turn}*t':s=${(0.6 + rnd() * 0.8).toFixed(2)},format=yuv420p[base]`);
    index++;
  }

  let video = "[base]";
  for (const [i, card] of cards.entries()) {
    // Read once; overlay repeats its one frame to the end.
    inputs[`card-${i + 1}.png`] = card.png;
    args.push("-i", `card-${i + 1}.png`);
    filters.push(`${video}[${index}:v]overlay=x=${card.box.x}:y=${card.box.y}:eval=init,format=yuv420p[c${i}]`);
    video = `[c${i}]`;
    index++;
  }
  if (req.referenceVideo) {
    inputs["reference.mp4"] = req.referenceVideo.bytes;
    args.push("-i", "reference.mp4");
    const pipWidth = Math.round(W / 3 / 2) * 2;
    const margin = Math.round(Math.min(W, H) / 30);
    filters.push(`[${index}:v]scale=${pipWidth}:-2,setsar=1,fps=${FPS},setpts=PTS-STARTPTS[pip]`);
    filters.push(`${video}[pip]overlay=x=W-w-${margin}:y=H-h-${margin}:eof_action=pass:shortest=0,format=yuv420p[v]`);
    video = "[v]";
    index++;
  }

  // A quiet chord as long as the clip, and the voice over it.
  const root = 110 * 2 ** (Math.floor(rnd() * 12) / 12);
  const [a, b, c] = [root, root * 2 ** ((rnd() < 0.5 ? 3 : 4) / 12), root * 2 ** (7 / 12)].map((f) => f.toFixed(2));
  args.push(
    "-f",
    "lavfi",
    "-i",
    `aevalsrc=(0.22*sin(2*PI*${a}*t)+0.16*sin(2*PI*${b}*t)+0.12*sin(2*PI*${c}*t))*(0.65+0.35*sin(2*PI*0.3*t)):s=48000:d=${T}`,
  );
  const bed = index++;
  let audio = `${bed}:a`;
  if (speech) {
    inputs["speech.wav"] = speech.wav;
    args.push("-i", "speech.wav");
    filters.push(
      ...voiceOverBed({
        bed,
        voice: index,
        bedGain: BED_GAIN,
        voiceGain: VOICE_GAIN,
        delayMs: Math.round(SPEECH_START * 1000),
        out: "mix",
      }),
    );
    audio = "[mix]";
    index++;
  }

  args.push("-filter_complex", filters.join(";"), "-map", video, "-map", audio);
  args.push(
    ...AAC_STEREO_ARGS,
    ...h264Args({ preset: W * H > 1920 * 1080 ? "ultrafast" : "veryfast", crf: 24, fps: FPS }),
    "-frames:v",
    String(frames),
    "-t",
    String(T),
  );
  args.push(...generatedClipTags(req.prompt, SOFTWARE), ...FASTSTART_ARGS, "out.mp4");
  return { args, inputs };
}

const failsByUrl = (f: VideoFrame | undefined) => !!f?.url && new URL(f.url).pathname.includes("sandbox-fail");

export function sandboxOmniProvider(options: {
  latencyMs: number;
  media: () => MediaEngine;
  store?: SandboxRequestStore;
}): OmniProvider {
  return sandboxUpstream<OmniGenerationRequest, GeneratedVideo>({
    name: "omni-sandbox",
    latencyMs: options.latencyMs,
    ...(options.store ? { store: options.store } : {}),
    // The wait is the first 15 % of the bar ("Generating"); speaking and rendering, the rest ("Rendering").
    waitShare: 0.15,
    check(req) {
      if (hasMarker(req.prompt, "unsafe"))
        throw new UnsafeContentError("sandbox: unsafe content requested by the prompt");
      if (hasMarker(req.prompt, "fail")) throw new Error("sandbox: failure requested by the prompt");
      if ([req.firstFrame, req.lastFrame, ...req.referenceImages].some(failsByUrl))
        throw new Error("sandbox: failure requested by an image URL");
    },
    async render(req, { signal, onProgress }) {
      // Spoken before rendering: the render mixes it in, and its times are the clip's.
      const speech = await clipSpeech(quotedLines(req.prompt, req.characters, req.voices), req.seconds, signal);
      const { args, inputs } = omniRender(req, speech, await omniCards(req));
      const out = await options.media().run(args, {
        inputs,
        outputs: ["out.mp4"],
        signal,
        durationSeconds: req.seconds,
        timeoutMs: 30 * 60_000,
        onProgress: (f) => void Promise.resolve(onProgress(f, "Rendering")).catch(() => {}),
      });
      return {
        bytes: withSandboxProvenance(out["out.mp4"]!, req.prompt, SOFTWARE),
        mimeType: "video/mp4",
        spoken: speech?.spoken ?? { language: "en", words: [] },
      };
    },
  });
}

/** Provides `omni.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "omni-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    // The engine is fetched on first render: capabilities are built at boot, ffmpeg.wasm is not.
    "omni.generate": (host) =>
      sandboxOmniProvider({
        latencyMs: sandboxConfig.of(host).latencyMs,
        media: () => host.capability("media"),
        store: host.blobs.scoped("omni-sandbox"),
      }),
  },
});
