// The `speech.synthesize` capability: what a speech provider adapter implements. The voiceover plugin calls
// it; its sandbox (plugins/voiceover/sandbox.ts) or a real upstream adapter provides it, so one replaces the other without
// touching the plugin.

/** An encoding the voiceover plugin offers (`<codec>_<sample rate>[_<kbps>]`), parsed. */
export interface SpeechOutputFormat {
  id: string;
  codec: "mp3" | "pcm" | "ulaw" | "alaw" | "opus";
  sampleRate: number;
  /** kbit/s for the lossy codecs; null for PCM and G.711 (their rate follows from the sample rate). */
  bitrateKbps: number | null;
  /** ffmpeg codec name a probe reports for the file. */
  probeCodec: string;
  extension: "mp3" | "wav" | "ogg";
  mimeType: string;
}

export interface SpeechRequest {
  text: string;
  voiceId: string;
  /** A model id of the voiceover plugin's table. */
  model: string;
  format: SpeechOutputFormat;
  /** Aborted on the model's time-out or when the caller goes away. */
  signal: AbortSignal;
}

export interface SpeechAudio {
  /** Encoded in `format`. */
  bytes: Uint8Array;
  durationSeconds: number;
  /** The words spoken and their times in this audio, when the provider recorded them (lib/speech speakTimed). */
  spoken?: SpokenRecord;
}

/**
 * The upstream answered with HTTP 400 or above (the spec's "generation failed" case). Anything else thrown
 * (network error, time-out) is the "service unavailable" case.
 */
export class SpeechHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface SpeechProvider {
  synthesize(request: SpeechRequest): Promise<SpeechAudio>;
}

export interface SpeechProviders {
  /** The provider serving a model, or undefined when none is configured (503 before any charge). */
  provider(model: string): SpeechProvider | undefined;
}

export class SpeechTimeoutError extends Error {}

/**
 * One provider call under the model's time-out. Settles when the time-out or `outer` fires even if the
 * provider ignores its signal, so a hung upstream cannot hold the request (and its in-flight slot) forever.
 */
export async function synthesizeWithin(
  provider: SpeechProvider,
  request: Omit<SpeechRequest, "signal">,
  timeoutMs: number,
  outer?: AbortSignal,
): Promise<SpeechAudio> {
  const controller = new AbortController();
  let onAbort: () => void = () => {};
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(controller.signal.reason);
    controller.signal.addEventListener("abort", onAbort, { once: true });
  });
  const timer = setTimeout(
    () => controller.abort(new SpeechTimeoutError(`no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const forward = () => controller.abort(outer!.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener("abort", forward, { once: true });
  try {
    return await Promise.race([provider.synthesize({ ...request, signal: controller.signal }), stopped]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", forward);
    controller.signal.removeEventListener("abort", onAbort);
    stopped.catch(() => {});
  }
}

declare module "./index.ts" {
  interface CapabilityMap {
    "speech.synthesize": SpeechProviders;
  }
}

// ---------------------------------------------------------------------------------------------------------
// `speech.transcribe`: audio in, timed words out. Captions and ad analysis call it; the captions plugin
// provides it as a chain of providers (plugins/captions/transcribe/), each of which may decline.

/** One spoken word and where it is in the audio, in seconds from the start of the file. */
export interface TimedWord {
  text: string;
  start: number;
  end: number;
  /** 0-1; 1 for words we know because we spoke them ourselves or a timed-text track says so. */
  confidence: number;
}

/**
 * What a sandbox that speaks recorded as it synthesized: the words it spoke and their times in the file it
 * made. It travels with the job that made the file (e.g. on a video job's output), so a caption job on that
 * file needs no recognition at all.
 */
export interface SpokenRecord {
  language: string;
  words: TimedWord[];
}

export interface TranscribeRequest {
  /** The speech to transcribe: 16-bit PCM mono WAV (16 kHz is what the recognizers want). */
  audio: Uint8Array;
  /** Language hint, e.g. "en" (default "en"). */
  language?: string;
  /** The record of our own synthesis, when the file is one we made (the first provider uses it as it is). */
  spoken?: SpokenRecord | null;
  /** An embedded timed-text track of the source file (mov_text or WebVTT), as WebVTT text. */
  timedText?: string | null;
  signal: AbortSignal;
  /** Fractions in [0, 1] as recognition goes. */
  onProgress?(fraction: number): void;
}

export interface Transcript {
  language: string;
  /** In time order; empty when the audio holds no usable speech (the caller's `no_speech`). */
  words: TimedWord[];
  /** Which provider answered (`spoken`, `timed-text`, `pocketsphinx`, `openai`, or `vad` for silence). */
  provider: string;
}

/** One link of the chain. `null` declines (not installed, not configured, nothing to go on); a throw fails. */
export interface TranscriptionProvider {
  readonly name: string;
  transcribe(request: TranscribeRequest): Promise<Transcript | null>;
}

export interface SpeechTranscriber {
  /** Tries the providers in order; silence (voice-activity step) answers an empty transcript. */
  transcribe(request: TranscribeRequest): Promise<Transcript>;
  /** The providers in the order they are tried (for tests and the benchmark). */
  readonly providers: readonly TranscriptionProvider[];
}

declare module "./index.ts" {
  interface CapabilityMap {
    "speech.transcribe": SpeechTranscriber;
  }
}
