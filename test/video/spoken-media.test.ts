// The video sandbox speaks when `sound` is on, on every engine this machine has: the recorded word times are
// where the clip's decoded audio is loud (speech over a quiet chord), the pauses between words are quieter, the
// line is the prompt's quoted dialogue or its first sentence, fitted to the clip, and markers are not spoken.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { MediaEngine } from "../../lib/media/index.ts";
import { rmsBetween } from "../../lib/speech/index.ts";
import { pollToEnd } from "../../lib/upstream.ts";
import { mergedSpoken } from "../../plugins/video/records.ts";
import { clipLine, clipSpeech, SPEECH_START } from "../../plugins/video/sandbox.ts";
import { ENGINE_MODES } from "../media/util.ts";
import { sandboxOnEngine, sandboxRequest } from "./sandbox-rig.ts";

const request = (over: Parameters<typeof sandboxRequest>[0]) =>
  sandboxRequest({ width: 320, height: 180, seconds: 4, sound: true, ...over });

/** The clip's audio decoded to 48 kHz mono 16-bit samples by the engine. */
async function decodedAudio(engine: MediaEngine, mp4: Uint8Array): Promise<Int16Array> {
  const out = await engine.run(["-i", "in.mp4", "-vn", "-ac", "1", "-ar", "48000", "-f", "s16le", "a.pcm"], {
    inputs: { "in.mp4": mp4 },
    outputs: ["a.pcm"],
  });
  const pcm = out["a.pcm"]!;
  return new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
}

const lines = suite("what a clip says");
lines("quoted dialogue first (straight and curly quotes), else the first sentence; markers never", () => {
  assert.is(
    clipLine(`A knight says "Hold the gate!" and the queen replies “Never, my friend.” [sandbox:flaky]`),
    "Hold the gate! Never, my friend.",
  );
  assert.is(clipLine("A paper boat drifting on a stream. It rains all day."), "A paper boat drifting on a stream.");
  assert.is(clipLine("[sandbox:flaky] Waves\n   at   night"), "Waves at night");
  assert.is(clipLine(`An empty quote "  " then words.`), `An empty quote " " then words.`);
  assert.is(clipLine("[sandbox:flaky]"), "");
});
lines("the speech fits the clip: long lines are cut and sped up; nothing to say is null", async () => {
  const long =
    "This is a very long sentence that could never be spoken in full inside a clip that lasts only two seconds without rushing";
  const fit = (await clipSpeech(long, 2))!;
  assert.ok(fit.spoken.words.length >= 1 && fit.spoken.words.length < 10, String(fit.spoken.words.length));
  assert.ok(fit.spoken.words[0]!.start >= SPEECH_START);
  assert.ok(fit.spoken.words.at(-1)!.end <= 2 - 0.2 + 1e-6, JSON.stringify(fit.spoken.words.at(-1)));
  assert.equal(
    fit.spoken.words.map((w) => w.text),
    long.split(" ").slice(0, fit.spoken.words.length),
  );
  assert.is(await clipSpeech("[sandbox:flaky] ...", 4), null);
  assert.is(await clipSpeech("Hello there.", 0.5), null);
});
lines("a merge's record: the clips' records shifted by the clips before; null when a clip with sound has none", () => {
  const said = (text: string, start: number) => ({
    language: "en",
    words: [{ text, start, end: start + 0.3, confidence: 1 }],
  });
  assert.equal(
    mergedSpoken([
      { spoken: said("one", 0.5), hasAudio: true, seconds: 4 },
      { spoken: null, hasAudio: false, seconds: 2.5 },
      { spoken: said("two", 0.4), hasAudio: true, seconds: 5 },
    ]),
    {
      language: "en",
      words: [
        { text: "one", start: 0.5, end: 0.8, confidence: 1 },
        { text: "two", start: 6.9, end: 7.2, confidence: 1 },
      ],
    },
  );
  assert.is(
    mergedSpoken([
      { spoken: said("one", 0.5), hasAudio: true, seconds: 4 },
      { spoken: undefined, hasAudio: true, seconds: 2 },
    ]),
    null,
  );
  assert.is(
    mergedSpoken([
      { spoken: null, hasAudio: false, seconds: 4 },
      { spoken: null, hasAudio: false, seconds: 2 },
    ]),
    null,
  );
});
lines.run();

for (const mode of ENGINE_MODES) {
  const t = suite(`video sandbox speech on ${mode}`);
  const on = sandboxOnEngine(t, mode);

  t("speech is in the clip's audio at the recorded times, louder than the chord under it", async () => {
    const prompt = `[sandbox:flaky] A knight shouts "Hold the gate, all of you! They are coming." at dawn`;
    const clip = await pollToEnd(on.sandbox(), request({ prompt }));
    const spoken = clip.spoken!;
    assert.is(spoken.language, "en");
    assert.equal(
      spoken.words.map((w) => w.text),
      ["Hold", "the", "gate,", "all", "of", "you!", "They", "are", "coming."],
    );
    const samples = await decodedAudio(on.engine, clip.bytes);
    const rate = 48000;
    assert.ok(spoken.words[0]!.start >= SPEECH_START && spoken.words.at(-1)!.end <= 4);
    const before = rmsBetween(samples, rate, 0.05, SPEECH_START - 0.05); // the chord alone
    let inside = 0;
    let gaps = 0;
    for (const [i, w] of spoken.words.entries()) {
      const loud = rmsBetween(samples, rate, w.start, w.end);
      inside += loud;
      assert.ok(loud > before * 3, `${w.text}: ${loud} vs chord ${before}`);
      const next = spoken.words[i + 1];
      if (next) gaps += rmsBetween(samples, rate, w.end + 0.01, next.start - 0.01);
    }
    const meanInside = inside / spoken.words.length;
    const meanGap = gaps / (spoken.words.length - 1);
    assert.ok(meanInside > meanGap * 3, `inside ${meanInside} vs gaps ${meanGap}`);
    // Aligned at both ends, not merely near: the fifth of a second before the first word and after the last
    // hold the chord alone.
    const first = spoken.words[0]!;
    const last = spoken.words.at(-1)!;
    const lead = rmsBetween(samples, rate, first.start - 0.2, first.start - 0.02);
    const trail = rmsBetween(samples, rate, last.end + 0.02, last.end + 0.2);
    assert.ok(lead < meanInside / 3 && trail < meanInside / 3, `lead ${lead}, trail ${trail}, inside ${meanInside}`);
    assert.ok(
      rmsBetween(samples, rate, first.start, first.start + 0.1) > lead * 3,
      "the first word starts where recorded",
    );
  });

  t("without quotes the first sentence; the same request gives the same record; no sound, no record", async () => {
    const req = request({ prompt: "Rain falls on the old town. Nobody is outside.", model: "animation" });
    const a = await pollToEnd(on.sandbox(), req);
    assert.equal(
      a.spoken!.words.map((w) => w.text),
      ["Rain", "falls", "on", "the", "old", "town."],
    );
    const b = await pollToEnd(on.sandbox(), req);
    assert.equal(b.spoken, a.spoken);
    if (mode === "native") assert.equal(Buffer.compare(Buffer.from(a.bytes), Buffer.from(b.bytes)), 0);
    const silent = await pollToEnd(on.sandbox(), request({ sound: false, seconds: 1 }));
    assert.is(silent.spoken, null);
    const probe = await on.engine.probe(silent.bytes);
    assert.not.ok(probe.streams.some((s) => s.type === "audio"));
    // Sound but nothing to say: the chord alone, and a record of no words.
    const wordless = await pollToEnd(on.sandbox(), request({ prompt: "[sandbox:flaky] ...", seconds: 1 }));
    assert.equal(wordless.spoken, { language: "en", words: [] });
  });

  t.run();
}
