// eSpeak NG in a worker thread (espeak.worker.mjs): text in, 16-bit mono WAV out. One worker per process,
// started on first use and unref'd so an idle one never keeps the process alive; texts are spoken one at a
// time, in order. The worker holds the process open only while a text is being spoken.
import { Worker } from "node:worker_threads";
import { latin1, riffChunks } from "../formats/index.ts";

export interface EspeakVoice {
  /** eSpeak voice with an optional variant, e.g. `en-us+f3`. */
  voice: string;
  /** 0-99, eSpeak's default 50. */
  pitch: number;
  /** Words per minute, eSpeak's default 175. */
  speed: number;
  /** Extra pause between words, in units of 10 ms. */
  gap: number;
}

export interface Wav {
  bytes: Uint8Array;
  sampleRate: number;
  durationSeconds: number;
}

const WORKER_URL = new URL("./espeak.worker.mjs", import.meta.url);

type Pending = { resolve(wav: Uint8Array): void; reject(err: Error): void };

let worker: Promise<Worker> | undefined;
const pending = new Map<number, Pending>();
let nextId = 1;

function failAll(err: Error) {
  for (const p of pending.values()) p.reject(err);
  pending.clear();
}

function start(): Promise<Worker> {
  worker ??= new Promise<Worker>((resolve, reject) => {
    const w = new Worker(WORKER_URL);
    w.unref();
    w.on("message", (m: any) => {
      if (m?.type === "ready") return resolve(w);
      const p = pending.get(m?.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(`espeak: ${m.error}`));
      else p.resolve(m.wav as Uint8Array);
    });
    // A dead worker is replaced on the next call; whatever it held fails now rather than hanging.
    const gone = (err: Error) => {
      worker = undefined;
      reject(err);
      failAll(err);
    };
    w.on("error", gone);
    w.on("exit", (code) => gone(new Error(`espeak worker exited with code ${code}`)));
  });
  return worker;
}

/** Reads the sample rate and data length of a PCM WAV as eSpeak writes it (canonical 44-byte header or chunks). */
export function wavInfo(bytes: Uint8Array): {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  dataBytes: number;
  dataOffset: number;
} {
  // Not riffHeader: eSpeak may leave a streaming placeholder in the RIFF and data sizes, which that check
  // refuses. The bytes present are what counts, so the chunks are read to the end of the bytes and a data
  // chunk that claims more is cut there.
  if (bytes.byteLength < 12 || latin1(bytes, 0, 4) !== "RIFF" || latin1(bytes, 8, 12) !== "WAVE")
    throw new Error("not a WAV file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fmt: { sampleRate: number; channels: number; bitsPerSample: number } | undefined;
  for (const chunk of riffChunks(bytes, 12, bytes.byteLength, { cutAtEnd: true })) {
    const o = chunk.body;
    if (chunk.type === "fmt ")
      fmt = {
        channels: view.getUint16(o + 2, true),
        sampleRate: view.getUint32(o + 4, true),
        bitsPerSample: view.getUint16(o + 14, true),
      };
    if (chunk.type === "data" && fmt) return { ...fmt, dataBytes: chunk.dataEnd - chunk.body, dataOffset: chunk.body };
  }
  throw new Error("WAV without fmt and data chunks");
}

/**
 * Speaks `text` with `voice`; rejects at once when `signal` aborts (the worker finishes that text and moves on).
 * With `ssml`, the text is read as SSML (eSpeak's -m): the caller escapes it.
 */
export async function speak(
  text: string,
  voice: EspeakVoice,
  signal?: AbortSignal,
  options: { ssml?: boolean } = {},
): Promise<Wav> {
  signal?.throwIfAborted();
  const w = await start();
  const id = nextId++;
  w.ref();
  const wav = await new Promise<Uint8Array>((resolve, reject) => {
    const onAbort = () => {
      pending.delete(id);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    pending.set(id, {
      resolve: (v) => (signal?.removeEventListener("abort", onAbort), resolve(v)),
      reject: (e) => (signal?.removeEventListener("abort", onAbort), reject(e)),
    });
    w.postMessage({
      id,
      text,
      voice: voice.voice,
      pitch: voice.pitch,
      speed: voice.speed,
      gap: voice.gap,
      ssml: options.ssml === true,
    });
  }).finally(() => {
    if (pending.size === 0) w.unref();
  });
  const info = wavInfo(wav);
  return {
    bytes: wav,
    sampleRate: info.sampleRate,
    durationSeconds: info.dataBytes / (info.sampleRate * info.channels * (info.bitsPerSample / 8)),
  };
}
