// speakTimed: eSpeak NG speech with the time of every word, checked against the audio itself: each word's
// interval holds speech, the pause between two words is (nearly) silent, and the words keep the text's
// spelling and punctuation.

import { type EspeakVoice, rmsBetween, speakTimed, spokenWords, wavSamples } from "mediagate/plugin";
import { suite } from "uvu";
import * as assert from "uvu/assert";

const VOICE: EspeakVoice = { voice: "en-us+f3", pitch: 62, speed: 165, gap: 0 };

const t = suite("speakTimed");

t("words keep spelling and punctuation; marks with no letters join a word", () => {
  assert.equal(spokenWords("  Hello, world — it's 5 o'clock!  "), ["Hello,", "world —", "it's", "5", "o'clock!"]);
  assert.equal(spokenWords("— Go"), ["— Go"]);
  assert.equal(spokenWords(" \n "), []);
});

t("each word's interval is loud, the pauses between words are quiet, times increase", async () => {
  const text = "The quick brown fox, jumps over the lazy dog. Really?";
  const { wav, spoken } = await speakTimed(text, VOICE);
  assert.is(spoken.language, "en");
  assert.equal(
    spoken.words.map((w) => w.text),
    text.split(" "),
  );
  const { samples, sampleRate } = wavSamples(wav.bytes);
  assert.is(sampleRate, wav.sampleRate);
  assert.ok(Math.abs(samples.length / sampleRate - wav.durationSeconds) < 0.001);
  let last = 0;
  for (const [i, w] of spoken.words.entries()) {
    assert.is(w.confidence, 1);
    assert.ok(w.start >= last && w.end > w.start + 0.08, `${w.text} ${w.start}-${w.end}`);
    assert.ok(w.end <= wav.durationSeconds + 1e-6);
    last = w.end;
    const inside = rmsBetween(samples, sampleRate, w.start, w.end);
    assert.ok(inside > 1000, `${w.text}: rms ${inside}`);
    const next = spoken.words[i + 1];
    if (next) {
      const gap = rmsBetween(samples, sampleRate, w.end, next.start);
      assert.ok(next.start - w.end >= 0.04, `pause after ${w.text}`);
      assert.ok(gap < inside / 10, `${w.text}: gap rms ${gap} vs ${inside}`);
    }
  }
  // Longer pauses after a comma and after a full stop than between plain words.
  const pause = (i: number) => spoken.words[i + 1]!.start - spoken.words[i]!.end;
  assert.ok(pause(3) > pause(1) + 0.1, "after the comma");
  assert.ok(pause(8) > pause(3), "after the full stop");
  // The last word ends near the end of the file: nothing long trails it.
  assert.ok(wav.durationSeconds - spoken.words.at(-1)!.end < 0.15);
});

t("the same text and voice give the same samples and times; a language may be named", async () => {
  const a = await speakTimed("Same words twice.", VOICE);
  const b = await speakTimed("Same words twice.", VOICE, { language: "en-US" });
  assert.equal(Buffer.compare(Buffer.from(a.wav.bytes), Buffer.from(b.wav.bytes)), 0);
  assert.equal(a.spoken.words, b.spoken.words);
  assert.is(b.spoken.language, "en-US");
});

t("markup-looking text is spoken as text; a faster voice and a shorter pace fit a shorter slot", async () => {
  const odd = await speakTimed(`a <b> & "c" </speak>`, VOICE);
  assert.equal(
    odd.spoken.words.map((w) => w.text),
    ["a", "<b> &", `"c"`, "</speak>"],
  );
  const text = "Speech can be made to fit the clip it belongs to.";
  const slow = await speakTimed(text, VOICE);
  const fast = await speakTimed(text, { ...VOICE, speed: 260 }, { pace: 0.5 });
  assert.is(fast.spoken.words.length, slow.spoken.words.length);
  assert.ok(
    fast.wav.durationSeconds < slow.wav.durationSeconds * 0.8,
    `${fast.wav.durationSeconds} vs ${slow.wav.durationSeconds}`,
  );
});

t("no words: a tenth of a second of silence", async () => {
  const { wav, spoken } = await speakTimed("  ... ", VOICE);
  assert.equal(spoken.words, []);
  assert.ok(Math.abs(wav.durationSeconds - 0.1) < 0.001);
});

t("an aborted signal rejects", async () => {
  const c = new AbortController();
  c.abort(new Error("gone"));
  try {
    await speakTimed("Never spoken.", VOICE, { signal: c.signal });
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).message, "gone");
  }
});

t.run();
