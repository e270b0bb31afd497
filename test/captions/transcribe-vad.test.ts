// The voice-activity step (plugins/captions/transcribe/vad.ts): eSpeak speech is speech, with segments
// covering every spoken word (times from speakTimed's record); digital silence, dither, low noise, steady
// noise, a pure tone quiet or loud, a tone switching on or beeping are not; speech over a steady bed some dB
// quieter is still found. On each media engine: a WAV that is not 16-bit PCM is converted first, and the
// steady tone of the engine's own test video (what a "silent" generated clip carries) is not speech.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import { speakTimed } from "../../lib/speech/index.ts";
import { extractSpeechInputs } from "../../plugins/captions/transcribe/extract.ts";
import { SPHINX_RATE, sphinxSamples, sphinxWav } from "../../plugins/captions/transcribe/sphinx-wav.ts";
import { detectSpeech, VAD } from "../../plugins/captions/transcribe/vad.ts";
import { ENGINE_MODES } from "../media/util.ts";

const VOICE = { voice: "en-us", pitch: 50, speed: 160, gap: 0 };
const signal = () => new AbortController().signal;
// No engine run is needed for 16-bit PCM: a stand-in that fails if it is asked.
const NO_ENGINE = {
  run: async () => {
    throw new Error("the engine is not needed for 16-bit PCM");
  },
} as unknown as MediaEngine;

const clamp = (x: number) => Math.max(-32768, Math.min(32767, Math.round(x)));
const make = (seconds: number, f: (i: number) => number) =>
  sphinxWav(Int16Array.from({ length: Math.round(seconds * SPHINX_RATE) }, (_, i) => clamp(f(i))));
const sine = (hz: number, amp: number) => (i: number) => amp * Math.sin((2 * Math.PI * hz * i) / SPHINX_RATE);
// A fixed pseudo-random sequence, so noise is the same on every run.
function noise(amp: number): (i: number) => number {
  let x = 12345;
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return (x / 0x7fffffff - 0.5) * 2 * amp;
  };
}

const t = suite("captions: voice-activity step");

t(
  "eSpeak sentences are speech; every spoken word lies in a segment; leading and trailing silence stays out",
  async () => {
    const { wav, spoken } = await speakTimed(
      "The weather is nice today. Please open the door, we will meet at seven.",
      VOICE,
    );
    const samples = sphinxSamples(wav.bytes);
    // Two seconds of digital silence on each side.
    const pad = 2 * SPHINX_RATE;
    const padded = new Int16Array(samples.length + 2 * pad);
    padded.set(samples, pad);
    const got = await detectSpeech(NO_ENGINE, sphinxWav(padded), signal());
    assert.ok(got.speech);
    for (const w of spoken.words) {
      const mid = 2 + (w.start + w.end) / 2;
      assert.ok(
        got.segments.some((s) => s.start <= mid && mid <= s.end),
        `"${w.text}" at ${mid.toFixed(2)} s is in a segment (${JSON.stringify(got.segments)})`,
      );
    }
    assert.ok(got.segments[0]!.start >= 1.9, `speech starts after the silence (${got.segments[0]!.start})`);
    assert.ok(
      got.segments.at(-1)!.end <= 2 + samples.length / SPHINX_RATE + 0.1,
      "and ends before the trailing silence",
    );
  },
);

t("short single words are speech", async () => {
  for (const text of ["yes", "a", "go"]) {
    const { wav } = await speakTimed(text, VOICE);
    assert.ok((await detectSpeech(NO_ENGINE, wav.bytes, signal())).speech, `"${text}"`);
  }
});

t(
  "not speech: digital silence, dither, low noise, steady noise, quiet and loud tones, a tone switching on, beeps, empty audio",
  async () => {
    const cases: Record<string, Uint8Array> = {
      "digital silence": make(3, () => 0),
      "±1 dither": make(3, noise(1.5)),
      "low white noise (-50 dBFS)": make(3, noise(180)),
      "loud steady white noise": make(3, noise(8000)),
      "quiet 440 Hz tone": make(3, sine(440, 300)),
      "loud 440 Hz tone": make(3, sine(440, 12000)),
      "a 1 kHz tone switching on after 1 s": make(3, (i) => (i > SPHINX_RATE ? sine(1000, 3000)(i) : 0)),
      "half-second beeps": make(4, (i) => ((i / (SPHINX_RATE / 2)) % 2 < 1 ? sine(1000, 3000)(i) : 0)),
      "beeps of 0.1 s, 0.1 s apart": make(4, (i) => ((i / (SPHINX_RATE / 10)) % 2 < 1 ? sine(1000, 3000)(i) : 0)),
      "steady noise at -30 dBFS": make(3, noise(1800)),
      "a click": make(2, (i) => (i === SPHINX_RATE ? 30000 : 0)),
    };
    for (const [label, wav] of Object.entries(cases)) {
      const got = await detectSpeech(NO_ENGINE, wav, signal());
      assert.not.ok(got.speech, `${label}: ${JSON.stringify(got.segments)}`);
    }
    assert.equal(await detectSpeech(NO_ENGINE, new Uint8Array(0), signal()), { speech: false, segments: [] });
  },
);

t(
  "speech over a steady tone or noise about 8 dB quieter is found; under a much louder bed it is not (the known limit)",
  async () => {
    const { wav } = await speakTimed("The weather is nice today. Please open the door, we will meet at seven.", VOICE);
    const s = sphinxSamples(wav.bytes);
    const mixed = (bed: (i: number) => number) => sphinxWav(Int16Array.from(s, (x, i) => clamp(x + bed(i))));
    assert.ok((await detectSpeech(NO_ENGINE, mixed(sine(440, 3000)), signal())).speech, "over a tone");
    assert.ok((await detectSpeech(NO_ENGINE, mixed(noise(3000)), signal())).speech, "over noise");
    assert.not.ok((await detectSpeech(NO_ENGINE, mixed(sine(440, 12000)), signal())).speech, "under a loud tone");
  },
);

t("the caller's abort is honoured; the numbers are the documented ones", async () => {
  const ac = new AbortController();
  ac.abort(new Error("stop"));
  await detectSpeech(
    NO_ENGINE,
    make(1, () => 0),
    ac.signal,
  ).then(
    () => assert.unreachable("aborted"),
    (err: Error) => assert.is(err.message, "stop"),
  );
  assert.is(VAD.marginDb, 6);
  assert.is(VAD.minLevelDb, -50);
});

t.run();

for (const mode of ENGINE_MODES) {
  const e = suite(`captions: voice-activity step on the ${mode} engine`);
  let engine: MediaEngine;
  e.before(() => {
    engine = createMediaEngine({ mode });
  });
  e.after(async () => {
    await engine?.close();
  });

  e("a WAV that is not 16-bit PCM (44.1 kHz stereo float) is converted by the engine first", async () => {
    const { wav } = await speakTimed("please open the door", VOICE);
    const out = await engine.run(["-i", "s.wav", "-ac", "2", "-ar", "44100", "-c:a", "pcm_f32le", "f.wav"], {
      inputs: { "s.wav": wav.bytes },
      outputs: ["f.wav"],
    });
    const float = out["f.wav"]!;
    assert.is(new DataView(float.buffer, float.byteOffset).getUint16(34, true), 32, "a 32-bit float WAV");
    assert.ok((await detectSpeech(engine, float, signal())).speech);
    const silent = await engine.run(
      ["-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "2", "-c:a", "pcm_f32le", "z.wav"],
      { outputs: ["z.wav"] },
    );
    assert.not.ok((await detectSpeech(engine, silent["z.wav"]!, signal())).speech);
  });

  e("the steady tone of a generated test clip is not speech", async () => {
    const clip = await generateTestVideo(engine, { width: 160, height: 120, seconds: 3, font: false, seed: "vad" });
    const { wav } = await extractSpeechInputs(engine, clip, { signal: signal(), durationSeconds: 3 });
    assert.ok(wav, "the clip has audio");
    assert.not.ok((await detectSpeech(engine, wav, signal())).speech);
  });

  e.run();
}
