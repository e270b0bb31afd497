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
export async function synthesizeWithin(provider: SpeechProvider, request: Omit<SpeechRequest, "signal">, timeoutMs: number, outer?: AbortSignal): Promise<SpeechAudio> {
  const controller = new AbortController();
  let onAbort: () => void = () => {};
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(controller.signal.reason);
    controller.signal.addEventListener("abort", onAbort, { once: true });
  });
  const timer = setTimeout(() => controller.abort(new SpeechTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
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
