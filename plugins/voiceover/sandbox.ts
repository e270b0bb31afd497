// The sandbox speech provider: real speech from eSpeak NG (compiled to WebAssembly, run in a worker by
// lib/speech/espeak.ts), each catalog voice a distinct eSpeak voice, variant, pitch and speed so voices sound
// different, encoded to the requested output format with the media engine. The same request gives the same bytes.
// It speaks connected sentences (speak), not speakTimed's measured words: those pause after every word and
// even out the voices' pace, so no SpeechAudio.spoken here.
// It takes about SANDBOX_LATENCY_MS on top of the synthesis itself.
//
// Markers (docs/architecture.md "Sandbox providers"): `[sandbox:fail]` answers like an upstream HTTP 500; `[sandbox:unsafe]`
// like an upstream content refusal (HTTP 400). Both end as the spec's "generation failed" 502, refunded.
// Markers are not spoken.
import {
  type CapabilityHost,
  definePlugin,
  type EspeakVoice,
  type MediaEngine,
  NO_METADATA_ARGS,
  type SpeechAudio,
  SpeechHttpError,
  type SpeechProvider,
  type SpeechProviders,
  type SpeechRequest,
  sandboxConfig,
  speak,
} from "mediagate/plugin";
import type { OutputFormat } from "./models.ts";

/** Catalog voice -> eSpeak settings. Languages follow the catalog's `lang`; pitch and speed keep same-language voices apart. */
export const SANDBOX_VOICES: Readonly<Record<string, EspeakVoice>> = {
  vc_7Qm2aR9x: { voice: "en-us+f3", pitch: 62, speed: 165, gap: 0 }, // Aria
  vc_K3p8LwZd: { voice: "en-us+m3", pitch: 28, speed: 150, gap: 1 }, // Marcus
  vc_f5Tn1Hqe: { voice: "en-gb+f4", pitch: 70, speed: 172, gap: 0 }, // Sophie
  vc_Y9c4VbJm: { voice: "en-gb-x-rp+m1", pitch: 42, speed: 158, gap: 1 }, // Oliver
  vc_r2Xh6GsP: { voice: "en-us+m7", pitch: 55, speed: 200, gap: 0 }, // Kai
  vc_N8d3QkTu: { voice: "es+f2", pitch: 60, speed: 170, gap: 0 }, // Lucia
  vc_b6Wz2MfA: { voice: "fr-fr+m2", pitch: 38, speed: 160, gap: 0 }, // Julien
  vc_h4Js7EcY: { voice: "de+f5", pitch: 56, speed: 162, gap: 0 }, // Hannah
};

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

/** ffmpeg arguments turning `speech.wav` into the requested format; output file name included. */
export function encodeArgs(format: OutputFormat): { args: string[]; output: string } {
  const output = `voice.${format.extension}`;
  const codec: Record<OutputFormat["codec"], string[]> = {
    mp3: ["-c:a", "libmp3lame", "-b:a", `${format.bitrateKbps}k`],
    // Constant bitrate so the file's rate is the requested one, as it is for MP3.
    opus: ["-c:a", "libopus", "-b:a", `${format.bitrateKbps}k`, "-vbr", "off"],
    pcm: ["-c:a", "pcm_s16le"],
    ulaw: ["-c:a", "pcm_mulaw"],
    alaw: ["-c:a", "pcm_alaw"],
  };
  // bitexact and no metadata: the same request gives the same bytes, and no tool names ride along.
  return {
    args: [
      "-i",
      "speech.wav",
      ...NO_METADATA_ARGS,
      "-flags:a",
      "+bitexact",
      "-ac",
      "1",
      "-ar",
      String(format.sampleRate),
      ...codec[format.codec],
      output,
    ],
    output,
  };
}

export function sandboxSpeechProvider(options: { latencyMs: number; media: () => MediaEngine }): SpeechProviders {
  const provider: SpeechProvider = {
    async synthesize(req: SpeechRequest): Promise<SpeechAudio> {
      await sleep(options.latencyMs, req.signal);
      if (req.text.includes("[sandbox:fail]")) throw new SpeechHttpError(500, "sandbox: failure requested by the text");
      if (req.text.includes("[sandbox:unsafe]"))
        throw new SpeechHttpError(400, "sandbox: unsafe content requested by the text");
      const voice = SANDBOX_VOICES[req.voiceId];
      if (!voice) throw new SpeechHttpError(400, `sandbox: unknown voice ${req.voiceId}`);
      const spoken = req.text.replace(/\[sandbox:[a-z]+\]/g, " ").trim() || req.text;
      const wav = await speak(spoken, voice, req.signal);
      const { args, output } = encodeArgs(req.format);
      const out = await options.media().run(args, {
        inputs: { "speech.wav": wav.bytes },
        outputs: [output],
        signal: req.signal,
        durationSeconds: wav.durationSeconds,
      });
      return { bytes: out[output]!, durationSeconds: Math.round(wav.durationSeconds * 100) / 100 };
    },
  };
  return { provider: () => provider };
}

/** Provides `speech.synthesize` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "voiceover-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    "speech.synthesize": (host: CapabilityHost) =>
      sandboxSpeechProvider({ latencyMs: sandboxConfig.of(host).latencyMs, media: () => host.capability("media") }),
  },
});
