// 16-bit mono PCM as eSpeak writes it: reading the samples out of a WAV, writing them back, and the short-time
// energy that finds where speech is (timed.ts) and lets tests check it is where the record says.
import { wavInfo } from "./espeak.ts";

/** The samples of a 16-bit PCM WAV (the first channel when there are more) and its rate. */
export function wavSamples(bytes: Uint8Array): { samples: Int16Array; sampleRate: number } {
  const info = wavInfo(bytes);
  if (info.bitsPerSample !== 16) throw new Error(`expected 16-bit PCM, got ${info.bitsPerSample}-bit`);
  const frames = Math.floor(info.dataBytes / (2 * info.channels));
  const view = new DataView(bytes.buffer, bytes.byteOffset + info.dataOffset, frames * 2 * info.channels);
  const samples = new Int16Array(frames);
  for (let i = 0; i < frames; i++) samples[i] = view.getInt16(i * 2 * info.channels, true);
  return { samples, sampleRate: info.sampleRate };
}

/** A canonical 44-byte-header WAV of 16-bit mono samples. */
export function pcm16Wav(samples: Int16Array, sampleRate: number): Uint8Array {
  const out = new Uint8Array(44 + samples.length * 2);
  const view = new DataView(out.buffer);
  const ascii = (at: number, s: string) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  ascii(0, "RIFF");
  view.setUint32(4, 36 + samples.length * 2, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  ascii(36, "data");
  view.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) view.setInt16(44 + i * 2, samples[i]!, true);
  return out;
}

/** RMS of each `frame`-sample window (the last one possibly shorter), in sample units. */
export function frameRms(samples: ArrayLike<number>, frame: number): Float64Array {
  const n = Math.ceil(samples.length / frame);
  const out = new Float64Array(n);
  for (let f = 0; f < n; f++) {
    const from = f * frame;
    const to = Math.min(samples.length, from + frame);
    let sum = 0;
    for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
    out[f] = Math.sqrt(sum / (to - from));
  }
  return out;
}

/** RMS of the samples in [fromSeconds, toSeconds). */
export function rmsBetween(
  samples: ArrayLike<number>,
  sampleRate: number,
  fromSeconds: number,
  toSeconds: number,
): number {
  const from = Math.max(0, Math.floor(fromSeconds * sampleRate));
  const to = Math.min(samples.length, Math.ceil(toSeconds * sampleRate));
  if (to <= from) return 0;
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (to - from));
}
