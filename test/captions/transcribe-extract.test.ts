// Audio and timed text out of a source video (plugins/captions/transcribe/extract.ts) on every media engine
// this machine has, and the whole chain on what it extracts: an MP4 with eSpeak speech and a mov_text track
// made from an .srt gives a 16 kHz mono 16-bit WAV of the clip's length and the track as WebVTT, the same
// from a streamed (chunked) source; a file without audio gives no WAV; then the chain answers from the
// track, from the upstream stand-in when there is no track, from our own record when there is one, and
// "vad" (no words) on a generated clip whose audio is a steady tone. Clips are small: ffmpeg.wasm is slow.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { TranscriptionProvider } from "../../contracts/speech.ts";
import {
  createMediaEngine,
  detectNativeFfmpeg,
  type EngineInput,
  generateTestVideo,
  type MediaEngine,
  type StreamedInput,
} from "../../lib/media/index.ts";
import { createOutboundGuard, type OutboundGuard } from "../../lib/outbound/index.ts";
import { speakTimed } from "../../lib/speech/index.ts";
import { extractSpeechInputs } from "../../plugins/captions/transcribe/extract.ts";
import { createTranscriber } from "../../plugins/captions/transcribe/index.ts";
import { sphinxSamples } from "../../plugins/captions/transcribe/sphinx-wav.ts";
import { timedTextProvider } from "../../plugins/captions/transcribe/timed-text.ts";
import { detectSpeech } from "../../plugins/captions/transcribe/vad.ts";
import { VIDEO_SOUND_SUBS } from "../helpers/ffmpeg-args.ts";
import { ENGINE_MODES } from "../media/util.ts";
import { type StandIn, startOpenAiStandIn } from "./helpers/openai-stand-in.ts";

const VOICE = { voice: "en-us", pitch: 50, speed: 160, gap: 0 };
const SECONDS = 4;
const SRT =
  "1\n00:00:00,500 --> 00:00:02,000\nHello <i>big</i> world\n\n2\n00:00:02,500 --> 00:00:03,500\nsecond line & more\n";
const KEY = "sk-extract-test-key";
const signal = () => new AbortController().signal;
const NATIVE = detectNativeFfmpeg();

function chunked(bytes: Uint8Array, size = 8192): StreamedInput {
  return {
    size: bytes.byteLength,
    async *chunks() {
      for (let at = 0; at < bytes.byteLength; at += size) yield bytes.slice(at, at + size);
    },
  };
}

const wavFormat = (wav: Uint8Array) => {
  const v = new DataView(wav.buffer, wav.byteOffset, wav.byteLength);
  return {
    rate: v.getUint32(24, true),
    channels: v.getUint16(22, true),
    bits: v.getUint16(34, true),
    seconds: sphinxSamples(wav).length / 16_000,
  };
};

/**
 * The clips with an .srt turned into a mov_text track. Made with the ffmpeg program directly: the media
 * engine opens media containers only (an .srt input is refused by its first bytes, by design).
 */
function fixtures(clip: Uint8Array, speech: Uint8Array) {
  const dir = mkdtempSync(join(tmpdir(), "captions-extract-"));
  try {
    writeFileSync(join(dir, "clip.mp4"), clip);
    writeFileSync(join(dir, "speech.wav"), speech);
    writeFileSync(join(dir, "subs.srt"), SRT);
    const t = String(SECONDS);
    // The video copied, the sound to AAC padded with silence to the clip's length.
    const copyPadded = ["-c:v", "copy", "-c:a", "aac", "-af", "apad", "-t", t];
    execFileSync(
      NATIVE!.ffmpegPath,
      [
        "-v",
        "error",
        "-y",
        "-i",
        "clip.mp4",
        "-i",
        "speech.wav",
        "-i",
        "subs.srt",
        ...VIDEO_SOUND_SUBS,
        ...copyPadded,
        "both.mp4",
        "-map",
        "0:v",
        "-map",
        "1:a",
        ...copyPadded,
        "speech.mp4",
        "-map",
        "0:v",
        "-map",
        "2:s",
        "-c:v",
        "copy",
        "-c:s",
        "mov_text",
        "-t",
        t,
        "track.mp4",
        "-map",
        "0:v",
        "-c:v",
        "copy",
        "video.mp4",
      ],
      { cwd: dir },
    );
    const read = (name: string) => new Uint8Array(readFileSync(join(dir, name)));
    return {
      speechWithTrack: read("both.mp4"),
      speechOnly: read("speech.mp4"),
      silentWithTrack: read("track.mp4"),
      videoOnly: read("video.mp4"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Declines as pocketsphinx does when it is not installed: keeps the chain's answer independent of the machine. */
const noSphinx: TranscriptionProvider = { name: "pocketsphinx", transcribe: async () => null };

// The fixtures need the ffmpeg program (.ci/run installs it); without it only the engine-made clip could be tested.
for (const mode of NATIVE ? ENGINE_MODES : []) {
  const t = suite(`captions: speech inputs and the chain on the ${mode} engine`);
  let engine: MediaEngine;
  let guard: OutboundGuard;
  let standIn: StandIn;
  let clip: Uint8Array; // video + steady tone
  let speechWithTrack: Uint8Array; // video + eSpeak speech + mov_text
  let speechOnly: Uint8Array; // video + eSpeak speech
  let silentWithTrack: Uint8Array; // video + mov_text, no audio
  let videoOnly: Uint8Array;
  let spoken: Awaited<ReturnType<typeof speakTimed>>["spoken"];

  t.before(async () => {
    engine = createMediaEngine({ mode });
    guard = createOutboundGuard({ allowPrivate: true });
    standIn = await startOpenAiStandIn({ key: KEY });
    clip = await generateTestVideo(engine, {
      width: 160,
      height: 120,
      seconds: SECONDS,
      font: false,
      seed: `extract-${mode}`,
    });
    const speech = await speakTimed("The weather is nice today. Please open the door.", VOICE);
    spoken = speech.spoken;
    ({ speechWithTrack, speechOnly, silentWithTrack, videoOnly } = fixtures(clip, speech.wav.bytes));
  });
  t.after(async () => {
    await engine?.close();
    await guard?.close();
    await standIn?.close();
  });

  const chain = () =>
    createTranscriber({
      engine,
      outbound: guard,
      config: {
        transcribeUrl: standIn.url,
        transcribeKey: KEY,
        transcribeModel: "whisper-1",
        transcribeOrder: ["spoken", "timed-text", "pocketsphinx", "openai"],
      },
      providers: { pocketsphinx: noSphinx },
    });

  t("speech and a mov_text track: a 16 kHz mono 16-bit WAV of the clip's length, and the track as WebVTT", async () => {
    for (const [label, source] of [
      ["bytes", speechWithTrack],
      ["streamed", chunked(speechWithTrack)],
    ] as Array<[string, EngineInput]>) {
      const got = await extractSpeechInputs(engine, source, { signal: signal(), durationSeconds: SECONDS });
      assert.ok(got.wav, `${label}: a WAV`);
      const f = wavFormat(got.wav);
      assert.equal(
        { rate: f.rate, channels: f.channels, bits: f.bits },
        { rate: 16_000, channels: 1, bits: 16 },
        label,
      );
      assert.ok(Math.abs(f.seconds - SECONDS) < 0.15, `${label}: ${f.seconds} s`);
      assert.ok((await detectSpeech(engine, got.wav, signal())).speech, `${label}: speech heard`);
      assert.ok(got.timedText?.startsWith("WEBVTT"), `${label}: WebVTT`);
      const words = (await timedTextProvider.transcribe({
        audio: got.wav,
        timedText: got.timedText,
        signal: signal(),
      }))!.words;
      assert.equal(
        words.map((w) => w.text),
        ["Hello", "big", "world", "second", "line", "more"],
        label,
      );
      assert.is(words[0]!.start, 0.5);
      assert.is(words[2]!.end, 2);
      assert.is(words[3]!.start, 2.5);
      assert.is(words[5]!.end, 3.5);
    }
  });

  t("no audio stream: no WAV (the track still comes out); neither: both null", async () => {
    const track = await extractSpeechInputs(engine, silentWithTrack, { signal: signal(), durationSeconds: SECONDS });
    assert.is(track.wav, null);
    assert.match(track.timedText ?? "", /Hello/);
    assert.equal(await extractSpeechInputs(engine, videoOnly, { signal: signal() }), { wav: null, timedText: null });
    assert.equal(await extractSpeechInputs(engine, chunked(videoOnly), { signal: signal() }), {
      wav: null,
      timedText: null,
    });
  });

  t(
    "the chain on what was extracted: the track; the upstream without a track; our record; vad on a steady tone",
    async () => {
      const c = chain();
      const both = await extractSpeechInputs(engine, speechWithTrack, { signal: signal(), durationSeconds: SECONDS });
      assert.is(
        (await c.transcribe({ audio: both.wav!, timedText: both.timedText, signal: signal() })).provider,
        "timed-text",
      );

      standIn.requests.length = 0;
      const speech = await extractSpeechInputs(engine, chunked(speechOnly), {
        signal: signal(),
        durationSeconds: SECONDS,
      });
      assert.is(speech.timedText, null);
      const upstream = await c.transcribe({ audio: speech.wav!, timedText: speech.timedText, signal: signal() });
      assert.is(upstream.provider, "openai");
      assert.is(standIn.requests.length, 1);
      assert.ok(Math.abs(standIn.requests[0]!.seconds - SECONDS) < 0.15, "the whole clip went up");
      assert.equal(
        upstream.words.map((w) => w.text),
        ["word0", "word1", "word2", "word3"],
      );

      const ours = await c.transcribe({ audio: speech.wav!, spoken, signal: signal() });
      assert.is(ours.provider, "spoken");
      assert.equal(ours.words, spoken.words);

      standIn.requests.length = 0;
      const tone = await extractSpeechInputs(engine, clip, { signal: signal(), durationSeconds: SECONDS });
      assert.equal(await c.transcribe({ audio: tone.wav!, timedText: tone.timedText, signal: signal() }), {
        language: "en",
        words: [],
        provider: "vad",
      });
      assert.is(standIn.requests.length, 0, "no upstream call on silence");
    },
  );

  t("the caller's abort stops the extraction", async () => {
    const ac = new AbortController();
    const reason = new Error("job cancelled");
    ac.abort(reason);
    await extractSpeechInputs(engine, speechWithTrack, { signal: ac.signal }).then(
      () => assert.unreachable("aborted"),
      (err) => assert.ok(err === reason || /abort|cancel/i.test(String((err as Error).message)), String(err)),
    );
  });

  t.run();
}
