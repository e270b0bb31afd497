// The sandbox video provider: a real H.264 MP4 of the requested size and length, rendered with the media engine
// (native ffmpeg or ffmpeg.wasm, the same arguments), deterministic from the request, with provenance metadata
// as generative providers attach (container tags, an XMP box and a C2PA-style manifest box) that
// `strip_metadata` then removes. It submits and polls as a remote service would (lib/sandbox-upstream.ts):
// the clip is rendered once SANDBOX_LATENCY_MS has passed; polls before that report progress by time.
//
// What the picture is:
// - with a start frame: the frame itself first, then a slow zoom whose speed comes from the prompt; with an
//   end frame too, a crossfade into the end frame, which zooms out to be exactly the last picture;
// - without frames: a moving test scene, its colours turning at a prompt-seeded speed and direction, with the
//   prompt's words scrolling over it (drawn from a text file, never from the filter graph).
// - with reference images (issue 36 item 6), the first one's picture is composited on every frame, 3:4: over a
//   start frame as a card in the lower left corner (the frame is the scene, the reference the character held
//   through it: Script Runner's character-locked mode, where scene-driven passes the start frame alone, so the
//   two first frames differ by exactly that card); without one as the subject, below the middle, over a moving
//   gradient in the references' dominant colours instead of the test scene (lib/sandbox-pictures.ts).
// Sound, when asked: a prompt-seeded three-note chord that swells, AAC 48 kHz stereo, and over it, clearly
// louder, a voice (eSpeak NG through lib/speech's speakTimed) saying the prompt's quoted dialogue ("..." or
// “...”), or else the prompt's first sentence, from SPEECH_START on, cut and sped up to fit the clip. The words'
// times in the file come back as GeneratedVideo.spoken, so captions on the clip need no recognition.
//
// Markers (docs/architecture.md "Sandbox providers"): `[sandbox:fail]` fails, `[sandbox:unsafe]` is a content-safety block,
// a frame URL whose path contains `sandbox-fail` fails.
import { createHash } from "node:crypto";
import {
  AAC_STEREO_ARGS,
  type CardBox,
  cardBox,
  definePlugin,
  dominantColours,
  type EspeakVoice,
  FASTSTART_ARGS,
  findSystemFont,
  type GeneratedVideo,
  generatedClipTags,
  h264Args,
  hasMarker,
  hexColour,
  type MediaEngine,
  pcm16Wav,
  type Rgb,
  type SandboxRequestStore,
  type SpokenRecord,
  sandboxCardPng,
  sandboxConfig,
  sandboxUpstream,
  sniffImageType,
  speakTimed,
  spokenWords,
  UnsafeContentError,
  type VideoFrame,
  type VideoGenerationRequest,
  type VideoProvider,
  type VideoProviders,
  voiceOverBed,
  wavSamples,
  withoutMarkers,
  withSandboxProvenance,
} from "mediagate/plugin";

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

// ---------------------------------------------------------------------------------------------------------
// What a clip with sound says.

/** The voice of the sandbox's clips. */
export const CLIP_VOICE: EspeakVoice = { voice: "en-us+m3", pitch: 45, speed: 165, gap: 0 };
/** When speech starts in the clip, and the quiet it leaves at the end, in seconds. */
export const SPEECH_START = 0.4;
const SPEECH_TAIL = 0.2;
/** How fast speech may get to fit (eSpeak words per minute), and how many words a second a slot starts with. */
const MAX_SPEED = 320;
const WORDS_PER_SECOND = 3;
/** Gains of the mix: the chord well under the voice, and headroom left (eSpeak peaks near 0.7 of full scale). */
const BED_GAIN = 0.1;
const VOICE_GAIN = 1.25;

/**
 * The line a clip says: the prompt's quoted dialogue (straight or curly quotes, all quotes in order), or else
 * its first sentence; markers removed, white space collapsed. Empty when the prompt has nothing to say.
 */
export function clipLine(prompt: string): string {
  const text = withoutMarkers(prompt).replace(/\s+/g, " ").trim();
  const quoted = [...text.matchAll(/"([^"]+)"|“([^“”]+)”/g)]
    .map((m) => (m[1] ?? m[2] ?? "").trim())
    .filter((q) => /[\p{L}\p{N}]/u.test(q));
  if (quoted.length > 0) return quoted.join(" ");
  return text.split(/(?<=[.!?])\s/)[0]!.trim();
}

export interface ClipSpeech {
  /** 16-bit mono WAV, to be mixed in at SPEECH_START. */
  wav: Uint8Array;
  /** Word times in the clip (SPEECH_START included). */
  spoken: SpokenRecord;
}

const ms = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * Speech that fits between SPEECH_START and the clip's end less SPEECH_TAIL: the line cut to the words the slot
 * can hold, spoken faster (and with shorter pauses) while it runs over, the words that still do not fit dropped.
 * Null when there is nothing to say or no room to say it.
 */
export async function clipSpeech(prompt: string, seconds: number, signal?: AbortSignal): Promise<ClipSpeech | null> {
  const slot = seconds - SPEECH_START - SPEECH_TAIL;
  let words = spokenWords(clipLine(prompt)).slice(0, Math.max(1, Math.floor(slot * WORDS_PER_SECOND)));
  if (words.length === 0 || slot <= 0.2) return null;
  let voice = CLIP_VOICE;
  let pace = 1;
  let said = await speakTimed(words.join(" "), voice, { signal, language: "en" });
  for (let attempt = 0; attempt < 3 && said.wav.durationSeconds > slot; attempt++) {
    const over = said.wav.durationSeconds / slot;
    if (voice.speed >= MAX_SPEED) words = words.slice(0, Math.max(1, Math.floor(words.length / over)));
    voice = { ...voice, speed: Math.min(MAX_SPEED, Math.ceil(voice.speed * over * 1.05)) };
    pace = Math.max(0.3, pace / over);
    said = await speakTimed(words.join(" "), voice, { signal, language: "en", pace });
  }
  let { wav, spoken } = { wav: said.wav.bytes, spoken: said.spoken };
  if (said.wav.durationSeconds > slot) {
    // Still over: keep the words that end in the slot, and the audio up to the last of them.
    const kept = spoken.words.filter((w) => w.end <= slot);
    if (kept.length === 0) return null;
    const { samples, sampleRate } = wavSamples(wav);
    wav = pcm16Wav(
      samples.slice(0, Math.min(samples.length, Math.round((kept.at(-1)!.end + 0.05) * sampleRate))),
      sampleRate,
    );
    spoken = { ...spoken, words: kept };
  }
  return {
    wav,
    spoken: {
      language: spoken.language,
      words: spoken.words.map((w) => ({ ...w, start: ms(w.start + SPEECH_START), end: ms(w.end + SPEECH_START) })),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// The clip.

/** How a clip shows its reference images: the first one's card (a PNG of exactly `box`'s size) and their colours. */
export interface ReferenceLook {
  card: Uint8Array;
  box: CardBox;
  colours: Rgb[];
}

/**
 * The look of the request's reference images, decoded once before the render (null without any). The first
 * is the card; the colours (without a start frame) are the first two dominant ones of each of the first three,
 * first picture first.
 * A picture libvips cannot read is left out (the plugin accepted it; a sandbox does not fail a job for it).
 */
export async function referenceLook(
  req: Pick<VideoGenerationRequest, "width" | "height" | "startFrame" | "referenceImages">,
): Promise<ReferenceLook | null> {
  const pictures: VideoFrame[] = req.referenceImages.slice(0, 3);
  const box = cardBox(req.width, req.height, req.startFrame ? "corner" : "subject");
  const perPicture: Rgb[][] = [];
  let card: Uint8Array | null = null;
  for (const p of pictures) {
    try {
      // Over a start frame the scene has its colours already: only the card is needed.
      if (!req.startFrame) perPicture.push(await dominantColours(p.bytes, 2));
      card ??= await sandboxCardPng(p.bytes, box.width, box.height);
      if (req.startFrame) break;
    } catch {}
  }
  if (!card) return null;
  const colours: Rgb[] = [];
  for (let rank = 0; rank < 2; rank++) for (const c of perPicture) if (c[rank]) colours.push(c[rank]!);
  return { card, box, colours: colours.slice(0, 4) };
}

/** The ffmpeg arguments and inputs of one clip; `speech` (with sound only) is mixed over the chord. */
export function sandboxRender(
  req: VideoGenerationRequest,
  speech?: ClipSpeech | null,
  look?: ReferenceLook | null,
): { args: string[]; inputs: Record<string, Uint8Array> } {
  const { width: W, height: H, seconds: T } = req;
  const rnd = seeded(`${req.model}|${req.prompt}|${W}x${H}|${T}|${req.negativePrompt ?? ""}`);
  const frames = Math.round(T * FPS);
  const inputs: Record<string, Uint8Array> = {};
  const args: string[] = [];
  const filters: string[] = [];
  let video: string;

  const cover = `scale=${W}:${H}:force_original_aspect_ratio=increase,crop=${W}:${H},setsar=1`;
  // Frames are read once, not looped (`-loop 1` decoded and scaled the full picture for every frame): the
  // picture is scaled to the clip's size once and zoompan makes every frame from it (d = the frame count).
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
      args.push("-i", `start.${ext}`, "-i", `end.${endExt}`);
      filters.push(
        `[0:v]${cover},zoompan=z='1+${zoomStep}*on':${centre}:d=${part}:s=${W}x${H}:fps=${FPS},trim=end_frame=${part},setpts=PTS-STARTPTS,format=yuv420p[a]`,
      );
      // The end frame zooms out to exactly itself on the last frame.
      filters.push(
        `[1:v]${cover},zoompan=z='1+${zoomStep}*(${part - 1}-on)':${centre}:d=${part}:s=${W}x${H}:fps=${FPS},trim=end_frame=${part},setpts=PTS-STARTPTS,format=yuv420p[b]`,
      );
      filters.push(
        `[a][b]xfade=transition=fade:duration=${fade.toFixed(3)}:offset=${offset.toFixed(3)},format=yuv420p[v]`,
      );
    } else {
      args.push("-i", `start.${ext}`);
      filters.push(
        `[0:v]${cover},zoompan=z='1+${zoomStep}*on':${centre}:d=${frames}:s=${W}x${H}:fps=${FPS},trim=end_frame=${frames},format=yuv420p[v]`,
      );
    }
    video = "[v]";
  } else {
    const hue = Math.round(rnd() * 360);
    const turn = ((rnd() < 0.5 ? -1 : 1) * (20 + rnd() * 70)).toFixed(1); // degrees per second
    const saturation = (0.6 + rnd() * 0.8).toFixed(2);
    let chain: string;
    if (look && look.colours.length > 0) {
      // The references' palette, drifting: a gradient between their dominant colours (one a shade of the
      // other when a picture has one colour), its points seeded by the prompt.
      const c =
        look.colours.length > 1
          ? look.colours
          : [look.colours[0]!, look.colours[0]!.map((v) => Math.round(v * 0.7)) as Rgb];
      const stops = c.map((col, i) => `c${i}=${hexColour(col)}`).join(":");
      args.push(
        "-f",
        "lavfi",
        "-i",
        `gradients=size=${W}x${H}:rate=${FPS}:duration=${T}:${stops}:nb_colors=${c.length}:seed=${Math.floor(rnd() * 2 ** 31)}:speed=0.02`,
      );
      chain = `[0:v]format=yuv420p`;
    } else {
      args.push("-f", "lavfi", "-i", `testsrc2=size=${W}x${H}:rate=${FPS}:duration=${T}`);
      chain = `[0:v]hue=h='${hue}+${turn}*t':s=${saturation}`;
    }
    const font = findSystemFont();
    const text = withoutMarkers(req.prompt);
    if (font && text) {
      inputs["font.ttf"] = font;
      inputs["prompt.txt"] = new TextEncoder().encode(
        wrap(text, Math.max(10, Math.floor(W / (Math.max(12, Math.round(Math.min(W, H) / 16)) * 0.6)) - 2), 6),
      );
      const size = Math.max(12, Math.round(Math.min(W, H) / 16));
      const speed = Math.round((H / T) * (0.4 + rnd() * 0.4)); // pixels per second, upwards
      chain += `,drawtext=fontfile=font.ttf:textfile=prompt.txt:expansion=none:fontsize=${size}:fontcolor=white:box=1:boxcolor=black@0.5:boxborderw=${Math.round(size / 3)}:x=(w-text_w)/2:y=h-mod(t*${speed}\\,h+text_h)`;
    }
    filters.push(`${chain},format=yuv420p[v]`);
    video = "[v]";
  }

  let audioIndex = req.startFrame ? (req.endFrame ? 2 : 1) : 1;
  if (look) {
    // One composite a frame: the card is sized already, read once, and repeated by overlay after its one frame.
    inputs["card.png"] = look.card;
    args.push("-i", "card.png");
    filters.push(`${video}[${audioIndex}:v]overlay=x=${look.box.x}:y=${look.box.y}:eval=init,format=yuv420p[vc]`);
    video = "[vc]";
    audioIndex++;
  }
  if (req.sound) {
    const root = 110 * 2 ** (Math.floor(rnd() * 12) / 12);
    const [a, b, c] = [root, root * 2 ** ((rnd() < 0.5 ? 3 : 4) / 12), root * 2 ** (7 / 12)].map((f) => f.toFixed(2));
    const swell = (0.1 + rnd() * 0.4).toFixed(2);
    args.push(
      "-f",
      "lavfi",
      "-i",
      `aevalsrc=(0.22*sin(2*PI*${a}*t)+0.16*sin(2*PI*${b}*t)+0.12*sin(2*PI*${c}*t))*(0.65+0.35*sin(2*PI*${swell}*t)):s=48000:d=${T}`,
    );
  }
  let audio = `${audioIndex}:a`;
  if (req.sound && speech) {
    inputs["speech.wav"] = speech.wav;
    args.push("-i", "speech.wav");
    // The chord (as long as the clip) is the bed.
    filters.push(
      ...voiceOverBed({
        bed: audioIndex,
        voice: audioIndex + 1,
        bedGain: BED_GAIN,
        voiceGain: VOICE_GAIN,
        delayMs: Math.round(SPEECH_START * 1000),
        out: "mix",
      }),
    );
    audio = "[mix]";
  }
  args.push("-filter_complex", filters.join(";"), "-map", video);
  if (req.sound) args.push("-map", audio, ...AAC_STEREO_ARGS);
  args.push(...h264Args({ preset: "ultrafast", crf: 26, fps: FPS }), "-frames:v", String(frames), "-t", String(T));
  args.push(...generatedClipTags(req.prompt, SOFTWARE), ...FASTSTART_ARGS, "out.mp4");
  return { args, inputs };
}

function wrap(text: string, perLine: number, maxLines: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (!word) continue;
    const w = word.length > perLine ? `${word.slice(0, perLine - 1)}…` : word;
    if ((line ? line.length + 1 : 0) + w.length > perLine) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.slice(0, maxLines).join("\n");
}

export function sandboxVideoProvider(options: {
  latencyMs: number;
  media: () => MediaEngine;
  store?: SandboxRequestStore;
}): VideoProviders {
  const provider: VideoProvider = sandboxUpstream<VideoGenerationRequest, GeneratedVideo>({
    name: "video-sandbox",
    latencyMs: options.latencyMs,
    ...(options.store ? { store: options.store } : {}),
    // The wait is the first fifth of the bar; rendering, the rest.
    waitShare: 0.2,
    check(req) {
      if (hasMarker(req.prompt, "fail")) throw new Error("sandbox: failure requested by the prompt");
      if (hasMarker(req.prompt, "unsafe"))
        throw new UnsafeContentError("sandbox: unsafe content requested by the prompt");
      for (const f of [req.startFrame, req.endFrame]) {
        if (f?.url && new URL(f.url).pathname.includes("sandbox-fail"))
          throw new Error("sandbox: failure requested by the frame URL");
      }
    },
    async render(req, { signal, onProgress }) {
      // Spoken before rendering: the render mixes it in, and its times are the clip's.
      const speech = req.sound ? await clipSpeech(req.prompt, req.seconds, signal) : null;
      const { args, inputs } = sandboxRender(req, speech, await referenceLook(req));
      const out = await options.media().run(args, {
        inputs,
        outputs: ["out.mp4"],
        signal,
        durationSeconds: req.seconds,
        timeoutMs: 20 * 60_000,
        onProgress: (f) => void Promise.resolve(onProgress(f, "Rendering")).catch(() => {}),
      });
      const bytes = withSandboxProvenance(out["out.mp4"]!, req.prompt, SOFTWARE);
      // With sound, the record says what was spoken, nothing included; without, there is no audio to caption.
      return {
        bytes,
        mimeType: "video/mp4",
        spoken: req.sound ? (speech?.spoken ?? { language: "en", words: [] }) : null,
      };
    },
  });
  return { route: () => provider };
}

/** Provides `video.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "video-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    // The engine is fetched on first render: capabilities are built at boot, ffmpeg.wasm is not.
    "video.generate": (host) =>
      sandboxVideoProvider({
        latencyMs: sandboxConfig.of(host).latencyMs,
        media: () => host.capability("media"),
        store: host.blobs.scoped("video-sandbox"),
      }),
  },
});
