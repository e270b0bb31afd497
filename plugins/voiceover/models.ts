// The voiceover tables: models (characters per credit and provider time-out), the voice catalog and the
// output formats (spec part 3, "Voiceover record" and "Voiceover"). What a text costs is in prices.ts.
import type { SpeechOutputFormat } from "mediagate/plugin";

export interface VoiceoverModel {
  label: string;
  /** Standard-basis characters per credit. */
  charsPerCredit: number;
  /** Upstream time-out (spec: 60 s on the turbo models, 90 s on the others). */
  timeoutMs: number;
}

export const MODELS = {
  tts_v4_turbo: { label: "TTS v4 Turbo", charsPerCredit: 80, timeoutMs: 60_000 },
  tts_v4: { label: "TTS v4", charsPerCredit: 40, timeoutMs: 90_000 },
  tts_turbo_v2_5: { label: "TTS Turbo v2.5", charsPerCredit: 80, timeoutMs: 60_000 },
  tts_v3: { label: "TTS v3", charsPerCredit: 50, timeoutMs: 90_000 },
} as const satisfies Record<string, VoiceoverModel>;

export type ModelId = keyof typeof MODELS;
export const MODEL_IDS = Object.keys(MODELS) as ModelId[];
export const DEFAULT_MODEL: ModelId = "tts_v4_turbo";
export const MAX_TEXT_LENGTH = 5000;

export interface Voice {
  voice_id: string;
  name: string;
  lang: string;
  gender: "female" | "male";
  description: string;
}

// Ids are opaque on purpose (spec: "opaque string"): partners must not derive meaning from them, and a real
// upstream's ids can be mapped behind them without a visible change.
export const VOICES: readonly Voice[] = [
  {
    voice_id: "vc_7Qm2aR9x",
    name: "Aria",
    lang: "en-US",
    gender: "female",
    description: "Warm, clear narrator for explainers and ads.",
  },
  {
    voice_id: "vc_K3p8LwZd",
    name: "Marcus",
    lang: "en-US",
    gender: "male",
    description: "Deep, calm voice for documentaries and trailers.",
  },
  {
    voice_id: "vc_f5Tn1Hqe",
    name: "Sophie",
    lang: "en-GB",
    gender: "female",
    description: "Bright British voice for tutorials.",
  },
  {
    voice_id: "vc_Y9c4VbJm",
    name: "Oliver",
    lang: "en-GB",
    gender: "male",
    description: "Measured British voice for audiobooks.",
  },
  {
    voice_id: "vc_r2Xh6GsP",
    name: "Kai",
    lang: "en-US",
    gender: "male",
    description: "Fast, energetic voice for social clips.",
  },
  { voice_id: "vc_N8d3QkTu", name: "Lucia", lang: "es-ES", gender: "female", description: "Friendly Spanish voice." },
  { voice_id: "vc_b6Wz2MfA", name: "Julien", lang: "fr-FR", gender: "male", description: "Relaxed French voice." },
  { voice_id: "vc_h4Js7EcY", name: "Hannah", lang: "de-DE", gender: "female", description: "Crisp German voice." },
];

export const voiceById = (id: string): Voice | undefined => VOICES.find((v) => v.voice_id === id);

// ---------------------------------------------------------------------------------------------------------
// Output formats. The spec names only the default (`mp3_44100_128`); the identifiers follow its pattern
// `<codec>_<sample rate>[_<kbps>]`, restricted to combinations every encoder we ship accepts.

/** The contract's parsed encoding (contracts/speech.ts): what the provider is asked to write. */
export type OutputFormat = SpeechOutputFormat;
export type Codec = OutputFormat["codec"];

const ALLOWED: Record<Codec, { rates: readonly number[]; kbps: readonly number[] | null }> = {
  mp3: { rates: [22050, 24000, 44100, 48000], kbps: [32, 48, 64, 96, 128, 160, 192] },
  pcm: { rates: [8000, 16000, 22050, 24000, 44100, 48000], kbps: null },
  ulaw: { rates: [8000], kbps: null },
  alaw: { rates: [8000], kbps: null },
  opus: { rates: [48000], kbps: [32, 64, 96, 128, 192] },
};

export const DEFAULT_OUTPUT_FORMAT = "mp3_44100_128";

// MPEG-2 layer III (sample rates below 32 kHz) stops at 160 kbit/s.
const combinable = (codec: Codec, rate: number, kbps: number | null) =>
  !(codec === "mp3" && rate < 32000 && (kbps ?? 0) > 160);

export const OUTPUT_FORMAT_IDS: readonly string[] = (Object.keys(ALLOWED) as Codec[]).flatMap((codec) =>
  ALLOWED[codec].rates.flatMap((rate) =>
    ALLOWED[codec].kbps
      ? ALLOWED[codec].kbps!.filter((k) => combinable(codec, rate, k)).map((k) => `${codec}_${rate}_${k}`)
      : [`${codec}_${rate}`],
  ),
);

const FORMAT = /^(mp3|pcm|ulaw|alaw|opus)_(\d{4,5})(?:_(\d{2,3}))?$/;

export function parseOutputFormat(id: string): OutputFormat | null {
  const m = FORMAT.exec(id);
  if (!m) return null;
  const codec = m[1] as Codec;
  const sampleRate = Number(m[2]);
  const kbps = m[3] === undefined ? null : Number(m[3]);
  const allowed = ALLOWED[codec];
  if (!allowed.rates.includes(sampleRate)) return null;
  if (allowed.kbps ? kbps === null || !allowed.kbps.includes(kbps) : kbps !== null) return null;
  if (!combinable(codec, sampleRate, kbps)) return null;
  const base = { id, codec, sampleRate, bitrateKbps: kbps };
  switch (codec) {
    case "mp3":
      return { ...base, probeCodec: "mp3", extension: "mp3", mimeType: "audio/mpeg" };
    case "opus":
      return { ...base, probeCodec: "opus", extension: "ogg", mimeType: "audio/ogg" };
    case "pcm":
      return { ...base, probeCodec: "pcm_s16le", extension: "wav", mimeType: "audio/wav" };
    case "ulaw":
      return { ...base, probeCodec: "pcm_mulaw", extension: "wav", mimeType: "audio/wav" };
    case "alaw":
      return { ...base, probeCodec: "pcm_alaw", extension: "wav", mimeType: "audio/wav" };
  }
}
