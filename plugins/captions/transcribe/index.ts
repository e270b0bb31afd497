// The `speech.transcribe` capability: a chain of providers tried in order, each of which may decline.
//
//   spoken        our own synthesis record (exact, free)                      spoken.ts
//   timed-text    an embedded mov_text / WebVTT track of the source           timed-text.ts
//   (voice-activity step: silence answers an empty transcript, provider "vad")   vad.ts
//   pocketsphinx  offline recognition + forced alignment                       pocketsphinx.ts
//   openai        an OpenAI-compatible upstream, when configured               openai.ts
//
// The order is CAPTIONS_TRANSCRIBE_ORDER (config.ts, which says why the default is what it is). The
// voice-activity step runs once, just before the first provider that listens to the audio, wherever the
// order puts it: our record and an embedded track need no audio and are believed as they are.
//
// Which providers can answer is stated once at boot (a line of the kernel's log, bootLine below), and an
// upload is refused before its charge when no provider that listens to audio is available (uploads/operations.ts,
// uploadRecognizers): an uploaded file carries no record of ours, so without pocketsphinx or the upstream its
// speech could only end in `Caption rendering failed` after a charge and a refund.
//
// A provider answering null declines (not installed, not configured, nothing to go on) and the next is
// tried; one that throws is logged and the next is tried too (a failing upstream falls back to the offline
// recognizer when the operator put it after); the caller's abort ends the chain at once. When no provider
// answers, the chain throws with every provider's reason (the caption job fails and is refunded).
import type {
  CapabilityHost,
  Logger,
  MediaEngine,
  OutboundGuard,
  SpeechTranscriber,
  TranscribeRequest,
  Transcript,
  TranscriptionProvider,
} from "mediagate/plugin";
import { type CaptionsConfig, captionsConfig, PROVIDER_NAMES, type ProviderName } from "../config.ts";
import { createOpenAiProvider, openAiSettings } from "./openai.ts";
import { createPocketsphinxProvider, locatePocketsphinx } from "./pocketsphinx.ts";
import { spokenProvider } from "./spoken.ts";
import { timedTextProvider } from "./timed-text.ts";
import { detectSpeech, type SpeechDetection } from "./vad.ts";

export { extractSpeechInputs, type SpeechInputs } from "./extract.ts";
export { detectSpeech, type SpeechDetection, type SpeechSegment } from "./vad.ts";

/** Providers that read only the request's record or track: the voice-activity step does not stand before them. */
const NEEDS_NO_AUDIO: ReadonlySet<string> = new Set(["spoken", "timed-text"]);

export interface TranscriberDeps {
  /** The media engine (a getter is called on first use: the kernel makes the engine lazily). */
  engine: MediaEngine | (() => MediaEngine);
  /** The kernel's outbound guard capability, for the upstream adapter. */
  outbound: OutboundGuard | (() => OutboundGuard);
  config: TranscribeSettings;
  log?: Pick<Logger, "warn"> & Partial<Pick<Logger, "info">>;
  /**
   * Providers by name instead of the built ones (tests, the benchmark); a name of the order missing here is
   * built as usual.
   */
  providers?: Partial<Record<ProviderName, TranscriptionProvider>>;
  /** The voice-activity step (tests); default detectSpeech. */
  detect?: (engine: MediaEngine, wav: Uint8Array, signal: AbortSignal) => Promise<SpeechDetection>;
}

/** The settings the chain reads (config.ts); `pocketsphinxPath` unset is the binary on PATH. */
export type TranscribeSettings = Pick<
  CaptionsConfig,
  "transcribeUrl" | "transcribeKey" | "transcribeModel" | "transcribeOrder"
> & { pocketsphinxPath?: string | undefined };

/** The providers that listen to the audio: what an uploaded file needs (it has no record of ours). */
export const RECOGNIZERS: ReadonlySet<ProviderName> = new Set(["pocketsphinx", "openai"]);

export interface ProviderStatus {
  name: ProviderName;
  /** In CAPTIONS_TRANSCRIBE_ORDER and able to answer (installed, configured). */
  available: boolean;
  /** What was found, or what is missing, in a few words (never the key). */
  detail: string;
}

/** Each provider the chain knows, those of the order first in their order, and whether it can answer now. */
export function providerStatus(config: TranscribeSettings): ProviderStatus[] {
  const ordered = [...config.transcribeOrder, ...PROVIDER_NAMES.filter((n) => !config.transcribeOrder.includes(n))];
  // biome-ignore lint/suspicious/useIterableCallbackReturn: every case of the switch returns, and tsc checks the declared ProviderStatus
  return ordered.map((name): ProviderStatus => {
    if (!config.transcribeOrder.includes(name))
      return { name, available: false, detail: "left out of CAPTIONS_TRANSCRIBE_ORDER" };
    switch (name) {
      case "spoken":
        return { name, available: true, detail: "our own videos' spoken records" };
      case "timed-text":
        return { name, available: true, detail: "subtitle tracks embedded in the source" };
      case "pocketsphinx": {
        const found = locatePocketsphinx(config.pocketsphinxPath ? { binary: config.pocketsphinxPath } : {});
        return "missing" in found
          ? { name, available: false, detail: `not installed: ${found.missing}` }
          : { name, available: true, detail: found.recognizer };
      }
      case "openai": {
        if (!config.transcribeUrl)
          return { name, available: false, detail: "not configured: CAPTIONS_TRANSCRIBE_URL unset" };
        let origin = "";
        try {
          origin = new URL(config.transcribeUrl).origin;
        } catch {
          origin = "the configured URL";
        }
        return { name, available: true, detail: `${origin}, model ${config.transcribeModel}` };
      }
    }
  });
}

/** The available providers that listen to audio, in the order tried: none means uploads cannot be captioned. */
export function uploadRecognizers(config: TranscribeSettings): ProviderName[] {
  return providerStatus(config)
    .filter((p) => p.available && RECOGNIZERS.has(p.name))
    .map((p) => p.name);
}

/** How an operator makes uploads work (docs/areas/captions.md says the same). */
export const ENABLE_RECOGNIZER =
  "install pocketsphinx (Debian/Ubuntu: apt-get install pocketsphinx pocketsphinx-en-us; or point CAPTIONS_POCKETSPHINX_PATH at pocketsphinx_continuous) or set CAPTIONS_TRANSCRIBE_URL (and CAPTIONS_TRANSCRIBE_KEY) to an OpenAI-compatible transcription API, then restart";

/** The boot line: every provider's state, and whether uploaded videos can be captioned. */
export function bootLine(statuses: readonly ProviderStatus[]): { level: "info" | "warn"; line: string } {
  const each = statuses.map((p) => `${p.name} ${p.available ? "available" : "unavailable"} (${p.detail})`).join("; ");
  const listening = statuses.filter((p) => p.available && RECOGNIZERS.has(p.name)).map((p) => p.name);
  if (listening.length > 0)
    return {
      level: "info",
      line: `captions: transcription providers: ${each}. Uploaded videos are transcribed by ${listening.join(", then ")}.`,
    };
  return {
    level: "warn",
    line: `captions: transcription providers: ${each}. No speech recognizer: POST /captions/upload and /captions/uploads/init answer 503 (videos made here are still captioned from their spoken records). To caption uploads, ${ENABLE_RECOGNIZER}.`,
  };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

function isHost(value: TranscriberDeps | CapabilityHost): value is CapabilityHost {
  return typeof (value as CapabilityHost).capability === "function" && "pluginConfig" in value;
}

/** The deps of the capability as the kernel provides it (definePlugin `provides`). */
export function transcriberDeps(host: CapabilityHost): TranscriberDeps {
  return {
    engine: () => host.capability("media"),
    outbound: () => host.capability("outbound"),
    config: captionsConfig.of(host),
    ...(host.log ? { log: host.log } : {}),
  };
}

export function createTranscriber(input: TranscriberDeps | CapabilityHost): SpeechTranscriber {
  const deps = isHost(input) ? transcriberDeps(input) : input;
  if (isHost(input) && input.log) {
    // Built once per process at boot (the kernel makes every capability then): the operator's one line.
    const { level, line } = bootLine(providerStatus(deps.config));
    input.log[level](line);
  }
  const engine = () => (typeof deps.engine === "function" ? deps.engine() : deps.engine);
  const log = deps.log;
  const detect = deps.detect ?? detectSpeech;
  const build = (name: ProviderName): TranscriptionProvider => {
    const given = deps.providers?.[name];
    if (given) return given;
    switch (name) {
      case "spoken":
        return spokenProvider;
      case "timed-text":
        return timedTextProvider;
      case "pocketsphinx":
        return createPocketsphinxProvider({
          ...(log ? { log } : {}),
          ...(deps.config.pocketsphinxPath ? { binary: deps.config.pocketsphinxPath } : {}),
        });
      case "openai":
        return createOpenAiProvider({ guard: deps.outbound, settings: openAiSettings(deps.config) });
    }
  };
  const providers = Object.freeze(deps.config.transcribeOrder.map(build));

  async function transcribe(request: TranscribeRequest): Promise<Transcript> {
    const language = request.language || "en";
    const reasons: string[] = [];
    let listened = false;
    for (const provider of providers) {
      request.signal.throwIfAborted();
      if (!listened && !NEEDS_NO_AUDIO.has(provider.name)) {
        listened = true;
        let heard: SpeechDetection | null = null;
        try {
          heard = await detect(engine(), request.audio, request.signal);
        } catch (err) {
          if (request.signal.aborted) throw err;
          // The recognizers read the audio themselves and say what is wrong with it.
          log?.warn(`speech.transcribe: the voice-activity step failed (${messageOf(err)}); the recognizers decide`);
        }
        if (heard && !heard.speech) return { language, words: [], provider: "vad" };
      }
      try {
        const answer = await provider.transcribe({ ...request, language });
        if (answer) return answer;
        reasons.push(`${provider.name}: declined`);
      } catch (err) {
        if (request.signal.aborted) throw err;
        reasons.push(`${provider.name}: ${messageOf(err)}`);
        log?.warn(`speech.transcribe: ${provider.name} failed (${messageOf(err)}); trying the next provider`);
      }
    }
    throw new Error(`no transcription provider answered (${reasons.join("; ") || "none configured"})`);
  }

  return { transcribe, providers };
}
