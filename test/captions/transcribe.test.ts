// The transcription chain (plugins/captions/transcribe/index.ts) with stand-in providers: the order, a
// decline or a throw falling through to the next, the voice-activity step standing before the first
// provider that listens (silence: an empty transcript from "vad"), the caller's abort ending it, no answer at
// all throwing with every reason; the order and the adapter's settings from the plugin's declared config;
// the spoken record and the WebVTT timed-text providers on their own.
import { existsSync } from "node:fs";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { TimedWord, TranscribeRequest, Transcript, TranscriptionProvider } from "../../contracts/speech.ts";
import type { CapabilityHost } from "../../core/plugin.ts";
import type { MediaEngine } from "../../lib/media/index.ts";
import { speakTimed } from "../../lib/speech/index.ts";
import { captionsConfig, DEFAULT_ORDER } from "../../plugins/captions/config.ts";
import { createTranscriber, type TranscriberDeps } from "../../plugins/captions/transcribe/index.ts";
import { spokenProvider, usableWords } from "../../plugins/captions/transcribe/spoken.ts";
import {
  cueWords,
  parseWebVtt,
  plainText,
  spreadWords,
  TIMED_TEXT,
  timedTextProvider,
  timedTextWords,
} from "../../plugins/captions/transcribe/timed-text.ts";
import type { SpeechDetection } from "../../plugins/captions/transcribe/vad.ts";

const t = suite("captions: transcribe chain, config, spoken and timed-text providers");
const signal = () => new AbortController().signal;
const AUDIO = new Uint8Array([1, 2, 3]);
const word = (text: string, start: number, end: number): TimedWord => ({ text, start, end, confidence: 1 });

/** A provider that records its calls and answers `answer` (a value, null, or an Error to throw). */
function standIn(name: string, answer: Transcript | null | Error, calls: string[]): TranscriptionProvider {
  return {
    name,
    async transcribe(request: TranscribeRequest) {
      calls.push(name);
      if (answer instanceof Error) throw answer;
      return answer && { ...answer, language: request.language ?? "?" };
    },
  };
}

const heard = (speech: boolean, calls: string[]) => async (): Promise<SpeechDetection> => {
  calls.push("vad");
  return { speech, segments: speech ? [{ start: 0, end: 1 }] : [] };
};

function chain(
  order: TranscriberDeps["config"]["transcribeOrder"],
  providers: TranscriberDeps["providers"],
  speech: boolean,
  calls: string[],
  warnings: string[] = [],
) {
  return createTranscriber({
    engine: {} as MediaEngine,
    outbound: () => {
      throw new Error("the outbound guard is not used by stand-ins");
    },
    config: {
      transcribeUrl: undefined,
      transcribeKey: undefined,
      transcribeModel: "whisper-1",
      transcribeOrder: order,
    },
    log: { warn: (m: string) => warnings.push(m) },
    providers,
    detect: heard(speech, calls),
  });
}

const answer = (provider: string, words = [word("hi", 0, 0.5)]): Transcript => ({ language: "en", words, provider });

t("providers are tried in order; the first answer wins; declines and throws fall through (throws logged)", async () => {
  const calls: string[] = [];
  const warnings: string[] = [];
  const c = chain(
    ["spoken", "timed-text", "pocketsphinx", "openai"],
    {
      spoken: standIn("spoken", null, calls),
      "timed-text": standIn("timed-text", null, calls),
      pocketsphinx: standIn("pocketsphinx", new Error("decoder crashed"), calls),
      openai: standIn("openai", answer("openai"), calls),
    },
    true,
    calls,
    warnings,
  );
  assert.equal(
    c.providers.map((p) => p.name),
    ["spoken", "timed-text", "pocketsphinx", "openai"],
  );
  const got = await c.transcribe({ audio: AUDIO, signal: signal() });
  assert.is(got.provider, "openai");
  assert.is(got.language, "en", "the language defaults to en");
  assert.equal(calls, ["spoken", "timed-text", "vad", "pocketsphinx", "openai"]);
  assert.is(warnings.length, 1);
  assert.match(warnings[0]!, /pocketsphinx failed \(decoder crashed\)/);
});

t("our record and an embedded track answer without the voice-activity step", async () => {
  for (const first of ["spoken", "timed-text"] as const) {
    const calls: string[] = [];
    const c = chain(
      ["spoken", "timed-text", "pocketsphinx"],
      {
        spoken: standIn("spoken", first === "spoken" ? answer("spoken") : null, calls),
        "timed-text": standIn("timed-text", answer("timed-text"), calls),
        pocketsphinx: standIn("pocketsphinx", answer("pocketsphinx"), calls),
      },
      false,
      calls,
    );
    const got = await c.transcribe({ audio: AUDIO, signal: signal(), language: "de" });
    assert.is(got.provider, first);
    assert.is(got.language, "de");
    assert.not.ok(calls.includes("vad"));
  }
});

t("silence: an empty transcript from the voice-activity step, no recognizer run", async () => {
  const calls: string[] = [];
  const c = chain(
    ["spoken", "pocketsphinx", "openai"],
    {
      spoken: standIn("spoken", null, calls),
      pocketsphinx: standIn("pocketsphinx", answer("pocketsphinx"), calls),
      openai: standIn("openai", answer("openai"), calls),
    },
    false,
    calls,
  );
  assert.equal(await c.transcribe({ audio: AUDIO, signal: signal() }), { language: "en", words: [], provider: "vad" });
  assert.equal(calls, ["spoken", "vad"]);
});

t(
  "the order is the config's: openai before pocketsphinx; the voice-activity step before whichever listens first",
  async () => {
    const calls: string[] = [];
    const c = chain(
      ["openai", "pocketsphinx"],
      {
        pocketsphinx: standIn("pocketsphinx", answer("pocketsphinx"), calls),
        openai: standIn("openai", new Error("upstream answered 500"), calls),
      },
      true,
      calls,
    );
    assert.is((await c.transcribe({ audio: AUDIO, signal: signal() })).provider, "pocketsphinx");
    assert.equal(calls, ["vad", "openai", "pocketsphinx"]);
  },
);

t("a failing voice-activity step is logged and the recognizers decide", async () => {
  const warnings: string[] = [];
  const calls: string[] = [];
  const c = createTranscriber({
    engine: {} as MediaEngine,
    outbound: {} as never,
    config: {
      transcribeUrl: undefined,
      transcribeKey: undefined,
      transcribeModel: "m",
      transcribeOrder: ["pocketsphinx"],
    },
    log: { warn: (m: string) => warnings.push(m) },
    providers: { pocketsphinx: standIn("pocketsphinx", answer("pocketsphinx"), calls) },
    detect: async () => {
      throw new Error("not a WAV file");
    },
  });
  assert.is((await c.transcribe({ audio: AUDIO, signal: signal() })).provider, "pocketsphinx");
  assert.match(warnings.join("\n"), /voice-activity step failed \(not a WAV file\)/);
});

t("no provider answers: thrown with every provider's reason", async () => {
  const calls: string[] = [];
  const c = chain(
    ["spoken", "pocketsphinx", "openai"],
    {
      spoken: standIn("spoken", null, calls),
      pocketsphinx: standIn("pocketsphinx", null, calls),
      openai: standIn("openai", new Error("upstream answered 401"), calls),
    },
    true,
    calls,
  );
  try {
    await c.transcribe({ audio: AUDIO, signal: signal() });
    assert.unreachable("should throw");
  } catch (err) {
    assert.match(
      (err as Error).message,
      /no transcription provider answered \(spoken: declined; pocketsphinx: declined; openai: upstream answered 401\)/,
    );
  }
});

t("the caller's abort ends the chain: no next provider after a throw, nothing when aborted before", async () => {
  const calls: string[] = [];
  const ac = new AbortController();
  const reason = new Error("job cancelled");
  const aborting: TranscriptionProvider = {
    name: "pocketsphinx",
    async transcribe() {
      calls.push("pocketsphinx");
      ac.abort(reason);
      throw reason;
    },
  };
  const c = chain(
    ["pocketsphinx", "openai"],
    { pocketsphinx: aborting, openai: standIn("openai", answer("openai"), calls) },
    true,
    calls,
  );
  try {
    await c.transcribe({ audio: AUDIO, signal: ac.signal });
    assert.unreachable("should throw");
  } catch (err) {
    assert.is(err, reason);
  }
  assert.equal(calls, ["vad", "pocketsphinx"]);
  calls.length = 0;
  await c.transcribe({ audio: AUDIO, signal: ac.signal }).then(
    () => assert.unreachable("aborted"),
    (err) => assert.is(err, reason),
  );
  assert.equal(calls, []);
});

t(
  "built from the kernel's capability host: the declared config gives the order; openai declines when unconfigured",
  async () => {
    const values = (env: Record<string, string>) => {
      const read = captionsConfig.read(env);
      return Object.fromEntries(
        Object.entries(captionsConfig.variables).map(([k, v]) => [v.name, read[k as keyof typeof read]]),
      );
    };
    const host = (env: Record<string, string>) =>
      ({
        pluginConfig: values(env),
        capability: (name: string) => {
          throw new Error(`capability ${name} is made on first use only`);
        },
      }) as unknown as CapabilityHost;
    assert.equal(
      createTranscriber(host({})).providers.map((p) => p.name),
      [...DEFAULT_ORDER],
    );
    const ordered = createTranscriber(host({ CAPTIONS_TRANSCRIBE_ORDER: " spoken , openai,Pocketsphinx" }));
    assert.equal(
      ordered.providers.map((p) => p.name),
      ["spoken", "openai", "pocketsphinx"],
    );
    // The openai adapter declines before it touches the guard or the audio.
    const openai = ordered.providers.find((p) => p.name === "openai")!;
    assert.is(await openai.transcribe({ audio: AUDIO, signal: signal() }), null);
  },
);

t("config: defaults, a bad order or URL stops the boot by name; the key stays out of the messages", () => {
  const d = captionsConfig.read({});
  assert.equal(d, {
    transcribeUrl: undefined,
    transcribeKey: undefined,
    transcribeModel: "whisper-1",
    pocketsphinxPath: undefined,
    transcribeOrder: ["spoken", "timed-text", "pocketsphinx", "openai"],
  });
  const c = captionsConfig.read({
    CAPTIONS_TRANSCRIBE_URL: "https://api.example.com/",
    CAPTIONS_TRANSCRIBE_KEY: "sk-secret",
    CAPTIONS_TRANSCRIBE_MODEL: "whisper-large-v3",
  });
  assert.is(c.transcribeUrl, "https://api.example.com");
  assert.is(c.transcribeKey, "sk-secret");
  assert.is(c.transcribeModel, "whisper-large-v3");
  assert.throws(
    () => captionsConfig.read({ CAPTIONS_TRANSCRIBE_ORDER: "spoken,whisper" }),
    /CAPTIONS_TRANSCRIBE_ORDER must list providers among spoken, timed-text, pocketsphinx, openai/,
  );
  assert.throws(
    () => captionsConfig.read({ CAPTIONS_TRANSCRIBE_ORDER: "openai,openai" }),
    /CAPTIONS_TRANSCRIBE_ORDER must not list a provider twice/,
  );
  assert.throws(
    () => captionsConfig.read({ CAPTIONS_TRANSCRIBE_URL: "ftp://x" }),
    /CAPTIONS_TRANSCRIBE_URL must be an http\(s\) base URL/,
  );
  assert.throws(
    () => captionsConfig.read({ CAPTIONS_TRANSCRIBE_URL: "https://user:pw@x.example" }),
    /CAPTIONS_TRANSCRIBE_URL must be/,
  );
  assert.throws(() => captionsConfig.read({ CAPTIONS_TRANSCRIBE_MODEL: "a\nb" }), /CAPTIONS_TRANSCRIBE_MODEL/);
});

t(
  "the default chain with the real providers on eSpeak speech: pocketsphinx answers when installed, else nothing does",
  async () => {
    const { wav } = await speakTimed("The weather is nice today. Please open the door.", {
      voice: "en-us",
      pitch: 50,
      speed: 160,
      gap: 0,
    });
    const warnings: string[] = [];
    const c = createTranscriber({
      engine: {} as MediaEngine,
      outbound: {} as never,
      config: captionsConfig.read({}),
      log: { warn: (m: string) => warnings.push(m) },
    });
    const installed =
      existsSync("/usr/bin/pocketsphinx_continuous") || existsSync("/usr/local/bin/pocketsphinx_continuous");
    try {
      const got = await c.transcribe({ audio: wav.bytes, signal: signal() });
      assert.is(got.provider, "pocketsphinx");
      assert.ok(got.words.length >= 4, `words: ${got.words.map((w) => w.text).join(" ")}`);
      assert.ok(installed);
    } catch (err) {
      assert.not.ok(installed, String(err));
      assert.match((err as Error).message, /pocketsphinx: declined; openai: declined/);
    }
    assert.equal(warnings, []);
  },
);

// ---------------------------------------------------------------------------------------------------------
// The spoken record.

t(
  "spoken: the record as it is (in time order, unusable words dropped); declines without a record or words",
  async () => {
    const words = [word("world", 0.6, 1), word("hello", 0.1, 0.5)];
    const got = await spokenProvider.transcribe({
      audio: new Uint8Array(0),
      spoken: { language: "en", words },
      signal: signal(),
    });
    assert.equal(got, { language: "en", words: [word("hello", 0.1, 0.5), word("world", 0.6, 1)], provider: "spoken" });
    assert.is(await spokenProvider.transcribe({ audio: AUDIO, signal: signal() }), null);
    assert.is(await spokenProvider.transcribe({ audio: AUDIO, spoken: null, signal: signal() }), null);
    assert.is(
      await spokenProvider.transcribe({ audio: AUDIO, spoken: { language: "en", words: [] }, signal: signal() }),
      null,
    );
    assert.equal(
      usableWords([
        word(" a ", 0, 1),
        word("", 0, 1),
        word("b", 1, 1),
        word("c", -1, 1),
        word("d", NaN, 1),
        { text: "e", start: 2, end: 3, confidence: 7 },
        null as never,
      ]),
      [word("a", 0, 1), { text: "e", start: 2, end: 3, confidence: 1 }],
    );
  },
);

// ---------------------------------------------------------------------------------------------------------
// WebVTT timed text.

const VTT = `WEBVTT
Kind: captions

NOTE a comment with --> in it
that spans lines

STYLE
::cue { color: red }

1
00:00:01.000 --> 00:00:03.000 align:start position:10%
<v Bob>Hello</v> <b>big</b>&nbsp;world

00:04.000 --> 00:05.000
- ♪ &amp; ok

bad
00:00:09.000 --> 00:00:08.000
backwards cue is skipped
`;

t(
  "timed-text: cues parsed (ids, settings, mm:ss, NOTE/STYLE skipped, backwards dropped), tags stripped, time split by length",
  async () => {
    assert.equal(
      parseWebVtt(VTT).map((c) => [c.start, c.end]),
      [
        [1, 3],
        [4, 5],
      ],
    );
    const got = await timedTextProvider.transcribe({ audio: AUDIO, timedText: VTT, language: "en", signal: signal() });
    assert.ok(got);
    assert.is(got.provider, "timed-text");
    // "Hello big world": 5 + 3 + 5 = 13 characters over 2 s.
    assert.equal(got.words, [
      { text: "Hello", start: 1, end: 1.769, confidence: 1 },
      { text: "big", start: 1.769, end: 2.231, confidence: 1 },
      { text: "world", start: 2.231, end: 3, confidence: 1 },
      // "- ♪ & ok": only "ok" is a word.
      { text: "ok", start: 4, end: 5, confidence: 1 },
    ]);
  },
);

t("timed-text: inline timestamps anchor the split; clamped to the cue when out of order", () => {
  assert.equal(
    cueWords({ start: 10, end: 14, text: "one two <00:00:12.000>three <00:00:11.000>four <00:00:20.000>five" }).map(
      (w) => [w.text, w.start, w.end],
    ),
    [
      ["one", 10, 11],
      ["two", 11, 12],
      // The stamps at 11 (backwards) and 20 (after the cue) are ignored: their words share the last piece.
      ["three", 12, 12.769],
      ["four", 12.769, 13.385],
      ["five", 13.385, 14],
    ],
  );
});

t("timed-text: declines on no track, an empty track or one without words; hostile input stays bounded", async () => {
  assert.is(await timedTextProvider.transcribe({ audio: AUDIO, signal: signal() }), null);
  assert.is(await timedTextProvider.transcribe({ audio: AUDIO, timedText: "WEBVTT\n\n", signal: signal() }), null);
  assert.is(
    await timedTextProvider.transcribe({
      audio: AUDIO,
      timedText: "WEBVTT\n\n00:01.000 --> 00:02.000\n♪ ♪\n",
      signal: signal(),
    }),
    null,
  );
  assert.equal(timedTextWords("x".repeat(TIMED_TEXT.maxChars + 1)), []);
  // Past the cap only the first part is read: its words still count.
  const capped = timedTextWords(
    `WEBVTT\n\n00:01.000 --> 00:02.000\nfirst words\n\n00:03.000 --> 00:04.000\n${"y ".repeat(TIMED_TEXT.maxChars)}`,
  );
  assert.equal(
    capped.slice(0, 2).map((w) => w.text),
    ["first", "words"],
  );
  assert.is(plainText("<c.a<b>x</c> &#x48;&#105;&bogus; &#0;<unclosed"), " x  Hi&bogus;  ");
  // Many cues: capped; a long line of tags: linear.
  const many = `WEBVTT\n\n${Array.from({ length: 30_000 }, (_, i) => `00:00:${String(i % 60).padStart(2, "0")}.000 --> 00:00:${String((i % 60) + 1).padStart(2, "0")}.000\na b`).join("\n\n")}`;
  assert.is(timedTextWords(many).length, TIMED_TEXT.maxWords);
  // A parse that is not linear in these lines would hold the file until the runner's time-out fails it.
  timedTextWords(`WEBVTT\n\n00:00.000 --> 00:01.000\n${"<a\n".repeat(200_000)}`);
  assert.is(plainText("<".repeat(1_000_000)), " ");
  timedTextWords(`WEBVTT\n\n${"00:00.000 --> ".repeat(20_000)}`);
  assert.equal(spreadWords("", 0, 1), []);
  assert.equal(spreadWords("a", 1, 1), []);
});

t.run();
