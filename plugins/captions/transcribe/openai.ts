// The chain's last provider by default: any OpenAI-compatible transcription endpoint (OpenAI's whisper-1,
// or a self-hosted server speaking the same API), configured by CAPTIONS_TRANSCRIBE_URL / _KEY / _MODEL
// (config.ts). POST <base>/v1/audio/transcriptions, multipart: file (16 kHz mono WAV), model,
// response_format=verbose_json, timestamp_granularities[]=word, language; the answer's `words`
// ([{ word, start, end }]) are the transcript.
//
// Called through the kernel's outbound guard (docs/architecture.md invariant 6), so an upstream on a private address is
// refused unless ALLOW_PRIVATE_URLS; each call has a deadline and a bounded answer. OpenAI takes files up to
// 25 MB (13 minutes of this WAV), so longer audio goes up in pieces of at most `maxPieceSeconds`, cut at
// the quietest moment of the half minute before each limit (between words, not inside one), the pieces'
// word times shifted back to the whole file's.
//
// The key is sent as a Bearer token and nowhere else: error messages carry the status and the upstream's
// own message with the key (and anything shaped like one: OpenAI's 401 echoes a masked key) cut out.
import { randomBytes } from "node:crypto";
import {
  describeCallFailure,
  errorAnswerDetail,
  type OutboundGuard,
  redactKey,
  type TimedWord,
  type TranscribeRequest,
  type Transcript,
  type TranscriptionProvider,
} from "mediagate/plugin";
import type { CaptionsConfig } from "../config.ts";
import { SPHINX_RATE, sphinxSamples, sphinxWav } from "./sphinx-wav.ts";
import { spreadWords } from "./timed-text.ts";
import { frameLevels, VAD } from "./vad.ts";

export const OPENAI = {
  path: "/v1/audio/transcriptions",
  /** 600 s of 16 kHz 16-bit mono is 19.2 MB, under OpenAI's 25 MB per file. */
  maxPieceSeconds: 600,
  /** Where a piece may end: the quietest 100 ms of this many seconds before its limit. */
  cutWindowSeconds: 30,
  cutSpanSeconds: 0.1,
  /** Each call's deadline: a fixed allowance plus this much per second of audio (whisper-1 takes ~5 s a minute). */
  timeoutBaseMs: 60_000,
  timeoutPerAudioSecondMs: 500,
  /** A verbose_json answer with words and segments is ~1 kB per 10 s of speech: 10 minutes is well under 1 MB. */
  maxAnswerBytes: 8 * 1024 * 1024,
  /** Whisper gives word times but no word scores; a server that sends `probability` has it used instead. */
  unscoredConfidence: 0.9,
  /** How much of the upstream's own error message an error carries. */
  maxMessageChars: 200,
  /** Audio shorter than this holds no word: no call. */
  minAudioSeconds: 0.1,
} as const;

export interface OpenAiSettings {
  url: string | undefined;
  key: string | undefined;
  model: string;
}

export interface OpenAiOptions {
  /** Overrides the per-call deadline (tests). */
  timeoutMs?: number;
  /** Overrides OPENAI.maxPieceSeconds (tests). */
  maxPieceSeconds?: number;
}

/** The upstream failed: its HTTP status when it answered (never the key). */
export class UpstreamTranscriptionError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

export function openAiSettings(
  config: Pick<CaptionsConfig, "transcribeUrl" | "transcribeKey" | "transcribeModel">,
): OpenAiSettings {
  return { url: config.transcribeUrl, key: config.transcribeKey, model: config.transcribeModel };
}

/** The endpoint for a base URL; a base that already ends in /v1 (as OpenAI's own SDK takes it) is not doubled. */
export function endpointOf(base: string): string {
  const trimmed = base.replace(/(?<!\/)\/+$/, "");
  return /\/v1$/.test(trimmed) ? `${trimmed}/audio/transcriptions` : `${trimmed}${OPENAI.path}`;
}

/** `text` with the key and anything shaped like an API key removed (lib/outbound/upstream-url.ts). */
export const redact = redactKey;

// ---------------------------------------------------------------------------------------------------------
// The request.

const LANGUAGE = /^([a-z]{2})(?:[-_][A-Za-z0-9]{1,8})*$/;

function field(boundary: string, name: string, value: string): string {
  return `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value.replace(/[\r\n]/g, " ")}\r\n`;
}

/** The multipart body: the WAV, then the text fields. */
export function multipartBody(
  wav: Uint8Array,
  fields: ReadonlyArray<[string, string]>,
): { body: Uint8Array; contentType: string } {
  const boundary = `mediagate-${randomBytes(16).toString("hex")}`;
  const enc = new TextEncoder();
  const head = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  );
  const tail = enc.encode(`\r\n${fields.map(([n, v]) => field(boundary, n, v)).join("")}--${boundary}--\r\n`);
  const body = new Uint8Array(head.byteLength + wav.byteLength + tail.byteLength);
  body.set(head, 0);
  body.set(wav, head.byteLength);
  body.set(tail, head.byteLength + wav.byteLength);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

// ---------------------------------------------------------------------------------------------------------
// The answer.

const finite = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** Timed words of a verbose_json answer, shifted by `offset` seconds. Throws on an answer that is not one. */
export function parseAnswer(json: unknown, offset = 0): TimedWord[] {
  if (!json || typeof json !== "object" || Array.isArray(json))
    throw new UpstreamTranscriptionError("transcription upstream answered something that is not a transcription", null);
  const answer = json as { words?: unknown; segments?: unknown; text?: unknown };
  const out: TimedWord[] = [];
  if (Array.isArray(answer.words)) {
    for (const w of answer.words as Array<Record<string, unknown>>) {
      const text = typeof w?.word === "string" ? w.word.trim() : "";
      const start = finite(w?.start);
      const end = finite(w?.end);
      if (!text || start === null || end === null || start < 0 || end < start) continue;
      const p = finite(w.probability);
      // Whisper gives a word that takes no time (start = end) now and then: it keeps 10 ms so it can be shown.
      out.push({
        text,
        start: ms(start + offset),
        end: ms(Math.max(end, start + 0.01) + offset),
        confidence: p === null ? OPENAI.unscoredConfidence : Math.min(1, Math.max(0, p)),
      });
    }
  } else if (Array.isArray(answer.segments)) {
    // A server that ignores timestamp_granularities: its segments' words spread over their times.
    for (const s of answer.segments as Array<Record<string, unknown>>) {
      const start = finite(s?.start);
      const end = finite(s?.end);
      if (typeof s?.text !== "string" || start === null || end === null) continue;
      out.push(...spreadWords(s.text, start + offset, end + offset, OPENAI.unscoredConfidence));
    }
  } else if (typeof answer.text === "string" && answer.text.trim() !== "") {
    throw new UpstreamTranscriptionError("transcription upstream answered without word timestamps", null);
  } else if (typeof answer.text !== "string") {
    throw new UpstreamTranscriptionError("transcription upstream answered something that is not a transcription", null);
  }
  return out.sort((a, b) => a.start - b.start);
}

const ms = (s: number) => Math.round(s * 1000) / 1000;

// ---------------------------------------------------------------------------------------------------------
// Pieces.

/** Sample indexes where the pieces start (the first is 0): each piece at most `maxSamples`, cut in a quiet spot. */
export function pieceStarts(samples: Int16Array, maxSamples: number, rate = SPHINX_RATE): number[] {
  const starts = [0];
  if (samples.length <= maxSamples) return starts;
  const levels = frameLevels(samples, rate);
  const frame = Math.round(rate * VAD.frameSeconds);
  const span = Math.max(1, Math.round(OPENAI.cutSpanSeconds / VAD.frameSeconds));
  const window = Math.min(Math.floor(maxSamples / frame / 2), Math.round(OPENAI.cutWindowSeconds / VAD.frameSeconds));
  let at = 0;
  while (samples.length - at > maxSamples) {
    const limitFrame = Math.floor((at + maxSamples) / frame);
    let best = limitFrame;
    let bestSum = Infinity;
    for (let f = limitFrame - window; f + span <= limitFrame; f++) {
      let sum = 0;
      for (let k = f; k < f + span; k++) sum += 10 ** ((levels[k] ?? 0) / 10);
      // The latest of equally quiet spots: pieces as long as allowed, so as few calls as possible.
      if (sum <= bestSum) {
        bestSum = sum;
        best = f + Math.floor(span / 2);
      }
    }
    const next = Math.max(at + 1, Math.min(at + maxSamples, best * frame));
    starts.push(next);
    at = next;
  }
  return starts;
}

// ---------------------------------------------------------------------------------------------------------
// The provider.

export function createOpenAiProvider(deps: {
  guard: OutboundGuard | (() => OutboundGuard);
  settings: OpenAiSettings;
  options?: OpenAiOptions;
}): TranscriptionProvider {
  const { settings } = deps;
  const guardOf = () => (typeof deps.guard === "function" ? deps.guard() : deps.guard);
  const maxPieceSeconds = deps.options?.maxPieceSeconds ?? OPENAI.maxPieceSeconds;

  async function call(
    wav: Uint8Array,
    seconds: number,
    language: string | undefined,
    signal: AbortSignal,
  ): Promise<unknown> {
    const fields: Array<[string, string]> = [
      ["model", settings.model],
      ["response_format", "verbose_json"],
      ["timestamp_granularities[]", "word"],
    ];
    if (language) fields.push(["language", language]);
    const { body, contentType } = multipartBody(wav, fields);
    const headers: Record<string, string> = { "content-type": contentType, accept: "application/json" };
    if (settings.key) headers.authorization = `Bearer ${settings.key}`;
    let res;
    try {
      res = await guardOf().fetch(endpointOf(settings.url!), {
        method: "POST",
        headers,
        body,
        signal,
        timeoutMs:
          deps.options?.timeoutMs ?? OPENAI.timeoutBaseMs + Math.ceil(seconds * OPENAI.timeoutPerAudioSecondMs),
        maxBytes: OPENAI.maxAnswerBytes,
        // Every status is read, so an error's own message can be reported.
        acceptStatus: () => true,
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const what = describeCallFailure(err);
      throw new UpstreamTranscriptionError(`transcription upstream failed (${redact(what, settings.key)})`, null);
    }
    const text = new TextDecoder().decode(res.body);
    if (res.status < 200 || res.status >= 300) {
      const detail = errorAnswerDetail(res.status, text, settings.key, OPENAI.maxMessageChars);
      throw new UpstreamTranscriptionError(`transcription upstream answered ${res.status}${detail}`, res.status);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new UpstreamTranscriptionError("transcription upstream answered malformed JSON", res.status);
    }
  }

  return {
    name: "openai",
    async transcribe(request: TranscribeRequest): Promise<Transcript | null> {
      if (!settings.url) return null;
      const language = request.language || "en";
      const hint = LANGUAGE.exec(language)?.[1];
      const samples = sphinxSamples(request.audio);
      const words: TimedWord[] = [];
      if (samples.length >= OPENAI.minAudioSeconds * SPHINX_RATE) {
        const starts = pieceStarts(samples, Math.round(maxPieceSeconds * SPHINX_RATE));
        for (let k = 0; k < starts.length; k++) {
          request.signal.throwIfAborted();
          const from = starts[k]!;
          const to = starts[k + 1] ?? samples.length;
          const piece = samples.subarray(from, to);
          const answer = await call(sphinxWav(piece), piece.length / SPHINX_RATE, hint, request.signal);
          words.push(...parseAnswer(answer, from / SPHINX_RATE));
          request.onProgress?.((k + 1) / starts.length);
        }
      }
      return { language, words, provider: "openai" };
    },
  };
}
