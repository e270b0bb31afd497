// Benchmark: sandbox speech synthesis speed, in seconds of audio per second of wall time, for 1,000 and
// 5,000 characters: eSpeak NG alone (WAV), and the whole sandbox provider (eSpeak plus MP3 encoding to the
// default mp3_44100_128 with the media engine). Run: npx tsx test/bench/speech.bench.ts  (BENCH_RUNS to change
// the repetitions; the median is reported).
import process from "node:process";
import { loadConfig } from "../../core/config.ts";
import { createMediaEngine } from "../../lib/media/index.ts";
import { speak } from "../../lib/speech/espeak.ts";
import { parseOutputFormat, VOICES } from "../../plugins/voiceover/models.ts";
import { SANDBOX_VOICES, sandboxSpeechProvider } from "../../plugins/voiceover/sandbox.ts";

const runs = Number(process.env.BENCH_RUNS ?? 5);
const PASSAGE =
  "The committee met on Tuesday to review the proposal, and after a long discussion about costs, schedules and " +
  "risks, it agreed to fund a small pilot. Results are expected in the spring; if they are good, the program will grow. ";
const textOf = (n: number) => PASSAGE.repeat(Math.ceil(n / PASSAGE.length)).slice(0, n);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const config = loadConfig({ ...process.env, LOG_LEVEL: "silent" } as Record<string, string>);
const media = createMediaEngine({ mode: config.mediaEngine });
const provider = sandboxSpeechProvider({ latencyMs: 0, media: () => media }).provider("tts_v4_turbo")!;
const voiceId = VOICES[0]!.voice_id;
const format = parseOutputFormat("mp3_44100_128")!;

// Worker start and the wasm compile are paid once per process, not per request.
await speak("warm up", SANDBOX_VOICES[voiceId]!);
await provider.synthesize({
  text: "warm up",
  voiceId,
  model: "tts_v4_turbo",
  format,
  signal: new AbortController().signal,
});

console.log(`media engine: ${media.kind}; ${runs} runs each, median`);
for (const chars of [1000, 5000]) {
  const text = textOf(chars);
  const wavRates: number[] = [];
  const mp3Rates: number[] = [];
  let audio = 0;
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    const wav = await speak(text, SANDBOX_VOICES[voiceId]!);
    wavRates.push(wav.durationSeconds / ((performance.now() - t) / 1000));
    t = performance.now();
    const out = await provider.synthesize({
      text,
      voiceId,
      model: "tts_v4_turbo",
      format,
      signal: new AbortController().signal,
    });
    mp3Rates.push(out.durationSeconds / ((performance.now() - t) / 1000));
    audio = out.durationSeconds;
  }
  console.log(
    `${chars} chars -> ${audio.toFixed(1)} s of audio: eSpeak (WAV) ${median(wavRates).toFixed(1)} s/s; eSpeak + MP3 ${median(mp3Rates).toFixed(1)} s/s`,
  );
}
await media.close();
