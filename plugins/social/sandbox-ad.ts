// The sandbox's posts are ads that speak (docs/architecture.md "Sandbox providers"; what ad analysis measures): a script of
// a few sentences seeded by the link (a hook, the product, what it does, a call to action), read by an eSpeak
// NG voice and recorded with the time of every word (lib/speech speakTimed), over a quiet tone, on a picture
// of hard cuts between solid-colour shots with the post's title on it. Everything in the file is something a
// measurement can find again: the words and when they are said, the number and places of the cuts, the
// shots' colours, the loudness.
import { createHash } from "node:crypto";
import {
  AAC_STEREO_ARGS,
  type EspeakVoice,
  FASTSTART_ARGS,
  findSystemFont,
  h264Args,
  type MediaEngine,
  type SpokenRecord,
  speakTimed,
  voiceOverBed,
} from "mediagate/plugin";

export const AD_VOICE: EspeakVoice = { voice: "en-us+f3", pitch: 55, speed: 180, gap: 0 };
/** When the voice starts, and the quiet it leaves at the end, in seconds. */
export const AD_SPEECH_START = 0.4;
const SPEECH_TAIL = 0.5;
const FPS = 25;
/** A shot is this long on average; an ad has 2 to 8 of them. */
const SHOT_SECONDS = 2.4;
const BED_GAIN = 0.12;
const VOICE_GAIN = 1.25;

/**
 * Shot colours: consecutive shots alternate between a light and a dark one, so every shot change moves the
 * picture's lightness a lot and is a cut any scene detector sees (blue after purple, say, would not be).
 */
export const AD_COLOURS: Readonly<Record<"light" | "dark", ReadonlyArray<{ hex: string; name: string }>>> = {
  light: [
    { hex: "f6f8fa", name: "white" },
    { hex: "f2cc60", name: "yellow" },
    { hex: "f0883e", name: "orange" },
  ],
  dark: [
    { hex: "161b22", name: "black" },
    { hex: "1f6feb", name: "blue" },
    { hex: "8250df", name: "purple" },
    { hex: "d1242f", name: "red" },
    { hex: "1a7f37", name: "green" },
  ],
};

interface Product {
  name: string;
  does: string;
  problem: string;
  feature: string;
}

const PRODUCTS: readonly Product[] = [
  {
    name: "Harbour mug",
    does: "keeps your coffee hot for twelve hours",
    problem: "cold coffee",
    feature: "The lid never leaks, even in a full bag.",
  },
  {
    name: "Summit backpack",
    does: "fits everything you need for a weekend away",
    problem: "messy bags",
    feature: "Every pocket opens with one hand.",
  },
  {
    name: "Glow desk lamp",
    does: "lights your whole desk without the glare",
    problem: "tired eyes",
    feature: "It dims on its own when the sun goes down.",
  },
  {
    name: "River bottle",
    does: "filters fresh water anywhere you go",
    problem: "buying plastic bottles",
    feature: "One filter lasts for three months.",
  },
  {
    name: "Studio headphones",
    does: "block out the noise of the city",
    problem: "noisy commutes",
    feature: "The battery lasts a full week.",
  },
  {
    name: "Garden kit",
    does: "grows fresh herbs on any window sill",
    problem: "bland dinners",
    feature: "Just add water once a week.",
  },
];

const HOOKS: ReadonlyArray<(p: Product) => string> = [
  (p) => `Tired of ${p.problem}?`,
  () => "Stop scrolling, you need to see this.",
  (p) => `Still putting up with ${p.problem}?`,
  () => "This changed my mornings.",
];

const CALLS: readonly string[] = [
  "Shop now at the link below.",
  "Tap the link to get yours today.",
  "Order now and save twenty percent.",
  "Visit our store and try it free for thirty days.",
];

const PROOF = [
  "Over ten thousand people already love it.",
  "It has five stars from our customers.",
  "Made to last, and built by a small team.",
];

/** Numbers seeded by `seed`: the same link makes the same ad. */
function seeded(seed: string) {
  let counter = 0;
  return (n: number) => createHash("sha256").update(`${seed}:ad:${counter++}`).digest().readUInt32BE(0) % n;
}

export interface AdPlan {
  /** The sentences that may be spoken, in the order they are said; dropped from the middle when the ad is short. */
  sentences: string[];
  /** The call to action (the last sentence), always kept when there is room for it. */
  call: string;
  shots: Array<{ hex: string; name: string; seconds: number }>;
  seconds: number;
}

/** What the ad of `seed` will say and show, `seconds` long (rounded to whole frames). */
export function adPlan(seed: string, seconds: number): AdPlan {
  const pick = seeded(seed);
  const product = PRODUCTS[pick(PRODUCTS.length)]!;
  const hook = HOOKS[pick(HOOKS.length)]!(product);
  const call = CALLS[pick(CALLS.length)]!;
  const proof = PROOF[pick(PROOF.length)]!;
  const sentences = [
    hook,
    `Meet the ${product.name}.`,
    `It ${product.does}.`,
    product.feature,
    proof,
    ...PROOF.filter((p) => p !== proof),
    call,
  ];
  const frames = Math.max(FPS, Math.round(seconds * FPS));
  const count = Math.max(2, Math.min(8, Math.round(frames / FPS / SHOT_SECONDS)));
  // Shot lengths vary by up to a quarter around the mean, in whole frames that add up to the ad's.
  const weights = Array.from({ length: count }, () => 0.75 + pick(50) / 100);
  const sum = weights.reduce((a, b) => a + b, 0);
  const lengths = weights.slice(0, -1).map((w) => Math.round((frames * w) / sum));
  lengths.push(frames - lengths.reduce((a, b) => a + b, 0));
  const lightFirst = pick(2) === 0;
  const shots = lengths.map((n, i) => {
    const set = AD_COLOURS[(i % 2 === 0) === lightFirst ? "light" : "dark"];
    return { ...set[pick(set.length)]!, seconds: n / FPS };
  });
  return { sentences, call, shots, seconds: frames / FPS };
}

/**
 * The speech of the ad: as many sentences as fit between AD_SPEECH_START and the end less a short tail, the
 * hook first and the call to action last, the middle ones dropped from the end. Null when not even the hook fits.
 */
async function adSpeech(plan: AdPlan, signal?: AbortSignal): Promise<{ wav: Uint8Array; spoken: SpokenRecord } | null> {
  const slot = plan.seconds - AD_SPEECH_START - SPEECH_TAIL;
  const middle = plan.sentences.slice(1, -1);
  const candidates: string[][] = [];
  for (let keep = middle.length; keep >= 0; keep--)
    candidates.push([plan.sentences[0]!, ...middle.slice(0, keep), plan.call]);
  candidates.push([plan.sentences[0]!]);
  for (const sentences of candidates) {
    // At least 0.33 s a word at this speed: skip what cannot fit before paying for its synthesis.
    if (sentences.join(" ").split(/\s+/).length * 0.33 > slot) continue;
    const said = await speakTimed(sentences.join(" "), AD_VOICE, { signal, language: "en" });
    if (said.wav.durationSeconds <= slot) {
      const words = said.spoken.words.map((w) => ({
        ...w,
        start: round3(w.start + AD_SPEECH_START),
        end: round3(w.end + AD_SPEECH_START),
      }));
      return { wav: said.wav.bytes, spoken: { language: said.spoken.language, words } };
    }
  }
  return null;
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

export interface SandboxAd {
  video: Uint8Array;
  /** What was said and when, in this file; null without sound. */
  spoken: SpokenRecord | null;
  plan: AdPlan;
}

/** Renders the ad of `seed`: H.264 (yuv420p) and, with `audio`, AAC 48 kHz stereo, the index in front. */
export async function makeSandboxAd(
  engine: MediaEngine,
  o: {
    seed: string;
    seconds: number;
    width: number;
    height: number;
    title: string;
    audio: boolean;
    signal?: AbortSignal;
  },
): Promise<SandboxAd> {
  const plan = adPlan(o.seed, o.seconds);
  const T = plan.seconds.toFixed(2);
  const args: string[] = [];
  const inputs: Record<string, Uint8Array> = {};
  for (const shot of plan.shots)
    args.push(
      "-f",
      "lavfi",
      "-i",
      `color=c=0x${shot.hex}:s=${o.width}x${o.height}:r=${FPS}:d=${shot.seconds.toFixed(2)}`,
    );
  const n = plan.shots.length;
  let picture = `${plan.shots.map((_, i) => `[${i}:v]`).join("")}concat=n=${n}:v=1:a=0`;
  const font = findSystemFont();
  if (font && o.title.trim()) {
    // Through a file, never the filter graph (no text can inject filter syntax); expansion=none keeps it literal.
    inputs["font.ttf"] = font;
    inputs["title.txt"] = new TextEncoder().encode(o.title.slice(0, 60));
    const size = Math.max(12, Math.round(Math.min(o.width, o.height) / 14));
    picture += `,drawtext=fontfile=font.ttf:textfile=title.txt:expansion=none:fontsize=${size}:fontcolor=white:box=1:boxcolor=black@0.55:boxborderw=${Math.round(size / 3)}:x=(w-text_w)/2:y=h*0.78`;
  }
  const filters = [`${picture},format=yuv420p[v]`];
  const speech = o.audio ? await adSpeech(plan, o.signal) : null;
  if (o.audio) {
    const tone = 180 + seeded(`${o.seed}:tone`)(200);
    args.push("-f", "lavfi", "-i", `sine=frequency=${tone}:sample_rate=48000:duration=${T}`);
    if (speech) {
      inputs["speech.wav"] = speech.wav;
      args.push("-i", "speech.wav");
      // The tone (as long as the ad) is the bed.
      filters.push(
        ...voiceOverBed({
          bed: n,
          voice: n + 1,
          bedGain: BED_GAIN,
          voiceGain: VOICE_GAIN,
          delayMs: Math.round(AD_SPEECH_START * 1000),
          out: "a",
        }),
      );
    } else {
      filters.push(`[${n}:a]volume=${BED_GAIN}[a]`);
    }
  }
  args.push("-filter_complex", filters.join(";"), "-map", "[v]");
  if (o.audio) args.push("-map", "[a]", ...AAC_STEREO_ARGS);
  args.push(
    ...h264Args({ preset: "ultrafast", crf: 28, fps: FPS }),
    "-t",
    T,
    ...FASTSTART_ARGS,
    "-fflags",
    "+bitexact",
    "-map_metadata",
    "-1",
    "ad.mp4",
  );
  const out = await engine.run(args, {
    inputs,
    outputs: ["ad.mp4"],
    durationSeconds: plan.seconds,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  return { video: out["ad.mp4"]!, spoken: o.audio ? (speech?.spoken ?? { language: "en", words: [] }) : null, plan };
}
