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
// A provider answering null declines (not installed, not configured, nothing to go on) and the next is
// tried; one that throws is logged and the next is tried too (a failing upstream falls back to the offline
// recognizer when the operator put it after); the caller's abort ends the chain at once. When no provider
// answers, the chain throws with every provider's reason (the caption job fails and is refunded).
import type { CapabilityHost, Logger, MediaEngine, OutboundGuard, SpeechTranscriber, TranscribeRequest, Transcript, TranscriptionProvider } from "mediagate/plugin";
import { captionsConfig, type CaptionsConfig, type ProviderName } from "../config.ts";
import { createOpenAiProvider, openAiSettings } from "./openai.ts";
import { createPocketsphinxProvider } from "./pocketsphinx.ts";
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
  config: Pick<CaptionsConfig, "transcribeUrl" | "transcribeKey" | "transcribeModel" | "transcribeOrder">;
  log?: Pick<Logger, "warn">;
  /**
   * Providers by name instead of the built ones (tests, the benchmark); a name of the order missing here is
   * built as usual.
   */
  providers?: Partial<Record<ProviderName, TranscriptionProvider>>;
  /** The voice-activity step (tests); default detectSpeech. */
  detect?: (engine: MediaEngine, wav: Uint8Array, signal: AbortSignal) => Promise<SpeechDetection>;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

function isHost(value: TranscriberDeps | CapabilityHost): value is CapabilityHost {
  return typeof (value as CapabilityHost).capability === "function" && "pluginConfig" in value;
}

/** The deps of the capability as the kernel provides it (definePlugin `provides`). */
export function transcriberDeps(host: CapabilityHost): TranscriberDeps {
  return { engine: () => host.capability("media"), outbound: () => host.capability("outbound"), config: captionsConfig.of(host) };
}

export function createTranscriber(input: TranscriberDeps | CapabilityHost): SpeechTranscriber {
  const deps = isHost(input) ? transcriberDeps(input) : input;
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
        return createPocketsphinxProvider(log ? { log } : {});
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
