// What the transcription chain needs from a source video: its first audio stream as 16 kHz mono 16-bit WAV
// (what the recognizers and the voice-activity step read), and its first timed-text track (mov_text in an
// MP4, or WebVTT) as WebVTT text. One probe to learn which streams exist, then one ffmpeg run writing both
// outputs (the file is read once); if converting the track fails (an odd track, an engine without the
// WebVTT muxer) the run is repeated for the audio alone and the track is left out.
//
// The source is an EngineInput: bytes, or a streamed input (a chunked upload's parts, never joined in memory
// on the native engine), passed to the engine as it is. A file without an audio stream gives `wav: null`;
// the caller has no speech to hear then (but may still have a track or our own record).
import { type EngineInput, isStreamedInput, type MediaEngine, type Probe, parseFfmpegInfo } from "mediagate/plugin";
import { LIMITS } from "../limits.ts";
import { TIMED_TEXT } from "./timed-text.ts";

export const EXTRACT = {
  rate: 16_000,
  /** Codec names (as probes print them) of the tracks read as timed text. */
  textCodecs: ["mov_text", "webvtt"],
  /** Audio past this is not extracted: no caption source is longer (the upload check refuses longer ones). */
  maxSeconds: LIMITS.maxSeconds + 5,
  /** The run's deadline: a fixed allowance plus this much per second of source (ffmpeg.wasm decodes AAC at ~20x). */
  timeoutBaseMs: 120_000,
  timeoutPerSecondMs: 500,
} as const;

export interface SpeechInputs {
  /** 16 kHz mono s16 WAV of the first audio stream; null when the file has none. */
  wav: Uint8Array | null;
  /** WebVTT text of the first mov_text / WebVTT track; null when there is none (or it could not be read). */
  timedText: string | null;
}

const SOURCE = "source.mp4";

/** The source's streams: ffprobe on bytes; for a streamed input, `ffmpeg -i`'s description (nothing decoded). */
async function probeSource(engine: MediaEngine, source: EngineInput, signal: AbortSignal | undefined): Promise<Probe> {
  if (!isStreamedInput(source)) return engine.probe(source, SOURCE, signal ? { signal } : {});
  const lines: string[] = [];
  // No output is named, so ffmpeg stops with an error after describing the input: that description is all we want.
  await engine
    .run(["-loglevel", "info", "-i", SOURCE], {
      inputs: { [SOURCE]: source },
      outputs: [],
      ...(signal ? { signal } : {}),
      onLog: (l) => lines.push(l),
    })
    .catch((err: unknown) => {
      if (signal?.aborted) throw err;
    });
  return parseFfmpegInfo(lines, source.size);
}

// What each track becomes: the audio mono 16-bit WAV at the recognizer's rate, the timed text WebVTT. -fs: a
// track of a hostile upload could be most of a 1 GB file; what the parser reads is all we keep.
const AUDIO_OUT = ["-vn", "-sn", "-dn", "-ac", "1", "-ar", String(EXTRACT.rate), "-c:a", "pcm_s16le", "-f", "wav"];
const TEXT_OUT = ["-vn", "-an", "-dn", "-c:s", "webvtt", "-fs", String(TIMED_TEXT.maxChars), "-f", "webvtt"];

/** One output of the extract run: the source's track `index`, cut at `seconds`, written to `file`. */
function trackOutput(index: number, seconds: number, encode: string[], file: string): string[] {
  return ["-map", `0:${index}`, "-t", String(seconds), ...encode, file];
}

export async function extractSpeechInputs(
  engine: MediaEngine,
  source: EngineInput,
  opts: { signal?: AbortSignal; durationSeconds?: number },
): Promise<SpeechInputs> {
  const { signal } = opts;
  const probe = await probeSource(engine, source, signal);
  const audio = probe.streams.find((s) => s.type === "audio");
  const text = probe.streams.find(
    (s) => s.type === "subtitle" && (EXTRACT.textCodecs as readonly string[]).includes(s.codec),
  );
  if (!audio && !text) return { wav: null, timedText: null };
  const known =
    opts.durationSeconds && Number.isFinite(opts.durationSeconds) && opts.durationSeconds > 0
      ? opts.durationSeconds
      : probe.durationSeconds;
  const seconds = Math.min(EXTRACT.maxSeconds, Math.max(1, Math.ceil(known || EXTRACT.maxSeconds)) + 1);
  const run = (withAudio: boolean, withText: boolean) => {
    const args = [
      "-i",
      SOURCE,
      ...(withAudio ? trackOutput(audio!.index, seconds, AUDIO_OUT, "audio.wav") : []),
      ...(withText ? trackOutput(text!.index, seconds, TEXT_OUT, "text.vtt") : []),
    ];
    const outputs = [...(withAudio ? ["audio.wav"] : []), ...(withText ? ["text.vtt"] : [])];
    return engine.run(args, {
      inputs: { [SOURCE]: source },
      outputs,
      durationSeconds: Math.min(seconds, known || seconds),
      timeoutMs: EXTRACT.timeoutBaseMs + EXTRACT.timeoutPerSecondMs * seconds,
      ...(signal ? { signal } : {}),
    });
  };
  let out: Record<string, Uint8Array>;
  try {
    out = await run(!!audio, !!text);
  } catch (err) {
    // The track is a bonus: a failure converting it must not cost the audio.
    if (signal?.aborted || !text || !audio) {
      if (!audio && !signal?.aborted) return { wav: null, timedText: null };
      throw err;
    }
    out = await run(true, false);
  }
  const vtt = out["text.vtt"] ? new TextDecoder().decode(out["text.vtt"]) : null;
  return { wav: out["audio.wav"] ?? null, timedText: vtt?.trim() ? vtt : null };
}
