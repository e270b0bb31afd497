// The audio pocketsphinx is given: always a canonical 44-byte-header WAV of 16 kHz mono 16-bit PCM that we
// wrote ourselves, whatever the request carried. The CLI's own header check is loose (it warns and reads on),
// so a WAV with odd chunks, another rate or a lying size never reaches it: we read the request's WAV with the
// shared RIFF walker, keep the PCM samples present, mix them down to mono and resample to 16 kHz here. The
// chain's extractor already hands us 16 kHz mono (then this is a copy); callers such as tests feeding eSpeak's
// 22,050 Hz output get the conversion for free.
import { open } from "node:fs/promises";
import { endianness } from "node:os";
import { latin1, pcm16Wav, riffChunks } from "mediagate/plugin";

export const SPHINX_RATE = 16_000;

export class SphinxAudioError extends Error {}

/**
 * 16 kHz mono samples of a 16-bit PCM WAV (any rate, any channel count). Audio longer than `maxSeconds` is
 * refused before anything is allocated: a low rate would otherwise grow several-fold in the resampling.
 */
export function sphinxSamples(bytes: Uint8Array, maxSeconds = Infinity): Int16Array {
  if (bytes.byteLength < 12 || latin1(bytes, 0, 4) !== "RIFF" || latin1(bytes, 8, 12) !== "WAVE")
    throw new SphinxAudioError("not a WAV file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fmt: { format: number; channels: number; rate: number; bits: number } | undefined;
  let data: { from: number; to: number } | undefined;
  // cutAtEnd: a streamed WAV's placeholder sizes are cut to the bytes present rather than refused.
  for (const chunk of riffChunks(bytes, 12, bytes.byteLength, { cutAtEnd: true })) {
    if (chunk.type === "fmt " && chunk.dataEnd - chunk.body >= 16) {
      const o = chunk.body;
      fmt = {
        format: view.getUint16(o, true),
        channels: view.getUint16(o + 2, true),
        rate: view.getUint32(o + 4, true),
        bits: view.getUint16(o + 14, true),
      };
    }
    if (chunk.type === "data" && fmt) {
      data = { from: chunk.body, to: chunk.dataEnd };
      break;
    }
  }
  if (!fmt || !data) throw new SphinxAudioError("WAV without fmt and data chunks");
  // 1 = PCM, 0xfffe = WAVE_FORMAT_EXTENSIBLE (ffmpeg writes it for some layouts; the samples are still PCM).
  if ((fmt.format !== 1 && fmt.format !== 0xfffe) || fmt.bits !== 16)
    throw new SphinxAudioError("WAV is not 16-bit PCM");
  if (fmt.channels < 1 || fmt.channels > 8 || fmt.rate < 4000 || fmt.rate > 192_000)
    throw new SphinxAudioError("WAV with an unusable channel count or sample rate");
  const channels = fmt.channels;
  const frameBytes = 2 * channels;
  const frames = Math.floor((data.to - data.from) / frameBytes);
  if (frames / fmt.rate > maxSeconds)
    throw new SphinxAudioError(`${Math.round(frames / fmt.rate)} s of audio is more than ${maxSeconds} s`);
  // What the chain's extractor hands us (16 kHz mono) is used in place: a 30-minute file is 57 MB, and a copy
  // or a float intermediate of it would double or triple that on the server.
  const at = bytes.byteOffset + data.from;
  if (fmt.rate === SPHINX_RATE && channels === 1 && LITTLE_ENDIAN && at % 2 === 0)
    return new Int16Array(bytes.buffer, at, frames);
  const frame = (i: number) => {
    let sum = 0;
    for (let c = 0, o = data.from + i * frameBytes; c < channels; c++, o += 2) sum += view.getInt16(o, true);
    return sum / channels;
  };
  return resample(frame, frames, fmt.rate);
}

const LITTLE_ENDIAN = endianness() === "LE";

/**
 * Mono frames to 16 kHz by linear interpolation. No anti-alias filter: the acoustic model only looks below
 * 6.8 kHz (feat.params -upperf), and speech above 8 kHz is faint, so what folds back lands where it does not
 * count.
 */
function resample(frame: (i: number) => number, frames: number, rate: number): Int16Array {
  const n = rate === SPHINX_RATE ? frames : Math.floor((frames * SPHINX_RATE) / rate);
  const out = new Int16Array(n);
  const step = rate / SPHINX_RATE;
  for (let i = 0; i < n; i++) {
    const x = i * step;
    const j = Math.floor(x);
    const a = frame(j);
    const b = j + 1 < frames ? frame(j + 1) : a;
    out[i] = Math.max(-32768, Math.min(32767, Math.round(a + (b - a) * (x - j))));
  }
  return out;
}

/** The 44-byte header of a 16 kHz mono 16-bit WAV holding `sampleCount` samples. */
export function sphinxWavHeader(sampleCount: number): Uint8Array {
  // The canonical header of no samples, then the two sizes (RIFF chunk, data chunk) for `sampleCount`.
  const out = pcm16Wav(new Int16Array(0), SPHINX_RATE);
  const v = new DataView(out.buffer);
  v.setUint32(4, 36 + 2 * sampleCount, true);
  v.setUint32(40, 2 * sampleCount, true);
  return out;
}

/** Little-endian bytes of samples: a view where the platform is little-endian (every one Node runs on). */
function pcmBytes(samples: Int16Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = new Uint8Array(samples.byteLength);
  const v = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) v.setInt16(2 * i, samples[i]!, true);
  return out;
}

/** Writes a WAV of the pieces laid end to end (a number is that many samples of silence), without joining them in memory. */
export async function writeSphinxWav(path: string, pieces: ReadonlyArray<Int16Array | number>): Promise<void> {
  const count = pieces.reduce<number>((n, p) => n + (typeof p === "number" ? p : p.length), 0);
  const file = await open(path, "w");
  try {
    await file.write(sphinxWavHeader(count));
    for (const p of pieces) {
      if (typeof p !== "number") await file.write(pcmBytes(p));
      else for (let left = p; left > 0; left -= 65_536) await file.write(new Uint8Array(2 * Math.min(left, 65_536)));
    }
  } finally {
    await file.close();
  }
}

/** The canonical WAV (44-byte header) of 16 kHz mono samples, in memory (tests and the benchmark). */
export function sphinxWav(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(44 + samples.byteLength);
  out.set(sphinxWavHeader(samples.length));
  out.set(pcmBytes(samples), 44);
  return out;
}
