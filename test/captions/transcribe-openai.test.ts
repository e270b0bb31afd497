// The OpenAI-compatible upstream adapter (plugins/captions/transcribe/openai.ts) against a local stand-in
// that answers as the real API does (test/captions/helpers/openai-stand-in.ts): the request it sends
// (multipart fields, Bearer key, a 16 kHz mono WAV), the word times it reads back, long audio sent in pieces
// cut in quiet spots with the times shifted back, declining when unconfigured, and every failure (401, 500,
// malformed JSON, a hang, an oversized answer, the guard refusing a private address, the caller's abort)
// thrown with the key nowhere in the message.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createOutboundGuard, type OutboundGuard } from "../../lib/outbound/index.ts";
import { createTranscriber } from "../../plugins/captions/transcribe/index.ts";
import {
  createOpenAiProvider,
  endpointOf,
  OPENAI,
  type OpenAiSettings,
  parseAnswer,
  pieceStarts,
  redact,
  UpstreamTranscriptionError,
} from "../../plugins/captions/transcribe/openai.ts";
import { SPHINX_RATE, sphinxWav } from "../../plugins/captions/transcribe/sphinx-wav.ts";
import { type StandIn, startOpenAiStandIn } from "./helpers/openai-stand-in.ts";

const KEY = "sk-test-0123456789abcdefSECRET";
const t = suite("captions: transcribe, OpenAI-compatible adapter");
const signal = () => new AbortController().signal;

/** `seconds` of audio: a 300 Hz tone switched on and off every half second (the stand-in does not listen). */
function audio(seconds: number, quietAt: number[] = []): Uint8Array {
  const n = Math.round(seconds * SPHINX_RATE);
  const s = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / SPHINX_RATE;
    const quiet = quietAt.some((q) => Math.abs(t - q) < 0.3) || Math.floor(t * 2) % 2 === 1;
    s[i] = quiet ? 0 : Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / SPHINX_RATE));
  }
  return sphinxWav(s);
}

let standIn: StandIn;
let guard: OutboundGuard;
const settings = (extra: Partial<OpenAiSettings> = {}): OpenAiSettings => ({
  url: standIn.url,
  key: KEY,
  model: "whisper-1",
  ...extra,
});

t.before(async () => {
  standIn = await startOpenAiStandIn({ key: KEY });
  // The kernel's guard as a development server configures it (ALLOW_PRIVATE_URLS): the stand-in is on loopback.
  guard = createOutboundGuard({ allowPrivate: true });
});
t.before.each(() => {
  standIn.mode = "ok";
  standIn.key = KEY;
  standIn.requests.length = 0;
  standIn.words = (seconds) =>
    Array.from({ length: Math.floor(seconds) }, (_, i) => ({ word: ` word${i}`, start: i + 0.1, end: i + 0.6 }));
});
t.after(async () => {
  await guard?.close();
  await standIn?.close();
});

/** Runs `fn`, which must throw; returns the error after checking the key is not in its message or stack. */
async function failure(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    assert.instance(err, Error);
    const e = err as Error;
    assert.not.ok(e.message.includes(KEY), `the key is not in the message: ${e.message}`);
    assert.not.ok(e.message.includes(KEY.slice(0, 12)), `no part of the key is in the message: ${e.message}`);
    assert.not.ok(String(e.stack).includes(KEY), "the key is not in the stack");
    return e;
  }
  throw new Error("expected a failure");
}

t("unconfigured (no URL): declines without a request", async () => {
  const p = createOpenAiProvider({ guard, settings: settings({ url: undefined }) });
  assert.is(p.name, "openai");
  assert.is(await p.transcribe({ audio: audio(2), signal: signal() }), null);
  assert.is(standIn.requests.length, 0);
});

t("sends the multipart request of the API and reads the word times", async () => {
  standIn.words = () => [
    { word: " Hello", start: 0.12, end: 0.5 },
    { word: " world.", start: 0.6, end: 1.04 },
    { word: "again", start: 1.3, end: 1.3, probability: 0.42 },
  ];
  const progress: number[] = [];
  const got = await createOpenAiProvider({ guard, settings: settings() }).transcribe({
    audio: audio(2),
    language: "en-US",
    signal: signal(),
    onProgress: (f) => progress.push(f),
  });
  assert.ok(got);
  assert.is(got.provider, "openai");
  assert.is(got.language, "en-US");
  assert.equal(got.words, [
    { text: "Hello", start: 0.12, end: 0.5, confidence: OPENAI.unscoredConfidence },
    { text: "world.", start: 0.6, end: 1.04, confidence: OPENAI.unscoredConfidence },
    // A word that takes no time keeps 10 ms; a server's probability is its confidence.
    { text: "again", start: 1.3, end: 1.31, confidence: 0.42 },
  ]);
  assert.equal(progress, [1]);
  assert.is(standIn.requests.length, 1);
  const r = standIn.requests[0]!;
  assert.is(r.path, "/v1/audio/transcriptions");
  assert.is(r.authorization, `Bearer ${KEY}`);
  assert.match(r.contentType ?? "", /^multipart\/form-data; boundary=/);
  assert.equal(r.fields, {
    model: "whisper-1",
    response_format: "verbose_json",
    "timestamp_granularities[]": "word",
    language: "en",
  });
  assert.ok(r.file);
  assert.is(r.file.name, "audio.wav");
  assert.is(r.file.type, "audio/wav");
  const v = new DataView(r.file.bytes.buffer, r.file.bytes.byteOffset);
  assert.is(v.getUint32(24, true), 16_000, "16 kHz");
  assert.is(v.getUint16(22, true), 1, "mono");
  assert.is(v.getUint16(34, true), 16, "16-bit");
  assert.ok(Math.abs(r.seconds - 2) < 0.01, `2 s of audio sent (${r.seconds})`);
});

t(
  "a language that is no ISO 639-1 code is not sent; no key, no Authorization header; a base ending in /v1 is not doubled",
  async () => {
    standIn.key = undefined;
    const p = createOpenAiProvider({ guard, settings: settings({ key: undefined, url: `${standIn.url}/v1/` }) });
    const got = await p.transcribe({ audio: audio(2), language: "english", signal: signal() });
    assert.is(got?.words.length, 2);
    const r = standIn.requests[0]!;
    assert.is(r.path, "/v1/audio/transcriptions");
    assert.is(r.authorization, undefined);
    assert.is(r.fields.language, undefined);
    assert.is(endpointOf("https://api.openai.com"), "https://api.openai.com/v1/audio/transcriptions");
    assert.is(endpointOf("https://api.openai.com/v1"), "https://api.openai.com/v1/audio/transcriptions");
    assert.is(endpointOf("https://proxy.example/openai/"), "https://proxy.example/openai/v1/audio/transcriptions");
  },
);

t("long audio goes up in pieces cut in quiet spots, the words' times shifted back to the file's", async () => {
  // 25 s with a longer quiet stretch around 8.6 s and 17.6 s; pieces of at most 10 s.
  const wav = audio(25, [8.6, 17.6]);
  const got = await createOpenAiProvider({ guard, settings: settings(), options: { maxPieceSeconds: 10 } }).transcribe({
    audio: wav,
    signal: signal(),
  });
  assert.ok(got);
  const pieces = standIn.requests.map((r) => r.seconds);
  assert.is(pieces.length, 3, `three pieces (${pieces.join(", ")})`);
  for (const s of pieces) assert.ok(s <= 10, `piece of ${s} s`);
  assert.ok(Math.abs(pieces.reduce((a, b) => a + b, 0) - 25) < 0.01, "the pieces add up to the file");
  // Each cut falls in a quiet stretch (the tone is off there).
  let at = 0;
  for (const s of pieces.slice(0, -1)) {
    at += s;
    const inQuiet = Math.abs(at - 8.6) < 0.3 || Math.abs(at - 17.6) < 0.3 || Math.floor(at * 2) % 2 === 1;
    assert.ok(inQuiet, `cut at ${at.toFixed(2)} s is in a quiet spot`);
  }
  // The stand-in answers "wordN" at N+0.1 within each piece: shifted by the piece's start.
  const firstOfSecond = got.words.find((w, i) => i > 0 && w.text === "word0")!;
  assert.ok(
    Math.abs(firstOfSecond.start - (pieces[0]! + 0.1)) < 0.002,
    `second piece's first word at ${firstOfSecond.start}`,
  );
  for (let i = 1; i < got.words.length; i++) assert.ok(got.words[i]!.start >= got.words[i - 1]!.start, "in time order");
});

t("pieceStarts: short audio is one piece; every piece within the limit", () => {
  assert.equal(pieceStarts(new Int16Array(16_000), 32_000), [0]);
  const starts = pieceStarts(new Int16Array(16_000 * 95), 16_000 * 30);
  assert.ok(starts.length >= 4);
  for (let i = 0; i < starts.length; i++) {
    const end = starts[i + 1] ?? 16_000 * 95;
    assert.ok(end - starts[i]! <= 16_000 * 30 && end > starts[i]!, `piece ${i}`);
  }
});

t("401: thrown with its status, the upstream's text (which echoes the key) not repeated", async () => {
  const e = await failure(() =>
    createOpenAiProvider({ guard, settings: settings({ key: `${KEY}-wrong` }) }).transcribe({
      audio: audio(1),
      signal: signal(),
    }),
  );
  assert.instance(e, UpstreamTranscriptionError);
  assert.is((e as UpstreamTranscriptionError).status, 401);
  assert.match(e.message, /answered 401/);
  assert.not.match(e.message, /Incorrect API key/);
});

t("500: thrown with its status and the upstream's message, the key cut out of it", async () => {
  standIn.mode = "500";
  const e = await failure(() =>
    createOpenAiProvider({ guard, settings: settings() }).transcribe({ audio: audio(1), signal: signal() }),
  );
  assert.is((e as UpstreamTranscriptionError).status, 500);
  assert.match(e.message, /answered 500: The server had an error/);
  assert.match(e.message, /\[redacted\]/);
});

t("malformed JSON, an answer without word times, an answer that is no transcription: thrown", async () => {
  standIn.mode = "malformed";
  assert.match(
    (
      await failure(() =>
        createOpenAiProvider({ guard, settings: settings() }).transcribe({ audio: audio(1), signal: signal() }),
      )
    ).message,
    /malformed JSON/,
  );
  standIn.mode = "text-only";
  assert.match(
    (
      await failure(() =>
        createOpenAiProvider({ guard, settings: settings() }).transcribe({ audio: audio(2), signal: signal() }),
      )
    ).message,
    /without word timestamps/,
  );
  assert.throws(() => parseAnswer([1, 2]), /not a transcription/);
  assert.throws(() => parseAnswer({ words: "no" }), /not a transcription/);
  // An empty transcription is one: no words.
  assert.equal(parseAnswer({ text: "" }), []);
});

t("a server that ignores timestamp_granularities: its segments' words spread over the segment", async () => {
  standIn.mode = "segments";
  standIn.words = () => [
    { word: " one", start: 1, end: 1.5 },
    { word: " three", start: 1.5, end: 3 },
  ];
  const got = await createOpenAiProvider({ guard, settings: settings() }).transcribe({
    audio: audio(4),
    signal: signal(),
  });
  assert.equal(
    got?.words.map((w) => [w.text, w.start, w.end]),
    [
      ["one", 1, 1.75],
      ["three", 1.75, 3],
    ],
  );
});

t("a hang ends at the deadline; an oversized answer at the cap; the caller's abort at once", async () => {
  standIn.mode = "hang";
  // The stand-in never answers: the time-out's error (and the caller's own reason below) can only come from the cut.
  const e = await failure(() =>
    createOpenAiProvider({ guard, settings: settings(), options: { timeoutMs: 400 } }).transcribe({
      audio: audio(1),
      signal: signal(),
    }),
  );
  assert.match(e.message, /timeout/);

  const ac = new AbortController();
  const reason = new Error("caller went away");
  setTimeout(() => ac.abort(reason), 200);
  try {
    await createOpenAiProvider({ guard, settings: settings() }).transcribe({ audio: audio(1), signal: ac.signal });
    assert.unreachable("aborted");
  } catch (err) {
    assert.is(err, reason, "the caller's own reason");
  }

  standIn.mode = "huge";
  assert.match(
    (
      await failure(() =>
        createOpenAiProvider({ guard, settings: settings() }).transcribe({ audio: audio(1), signal: signal() }),
      )
    ).message,
    /too_large/,
  );
});

t("the kernel's guard without ALLOW_PRIVATE_URLS refuses the stand-in on loopback: nothing is sent", async () => {
  const strict = createOutboundGuard();
  try {
    const e = await failure(() =>
      createOpenAiProvider({ guard: () => strict, settings: settings() }).transcribe({
        audio: audio(1),
        signal: signal(),
      }),
    );
    assert.match(e.message, /invalid_url|not_public/);
    assert.is(standIn.requests.length, 0);
  } finally {
    await strict.close();
  }
});

t(
  "in the chain: a failing upstream is logged without its key and the next provider answers; unconfigured, it is skipped",
  async () => {
    standIn.mode = "500";
    const warnings: string[] = [];
    const sphinx = {
      name: "pocketsphinx",
      transcribe: async () => ({ language: "en", words: [], provider: "pocketsphinx" }),
    };
    const config = {
      transcribeUrl: standIn.url,
      transcribeKey: KEY,
      transcribeModel: "whisper-1",
      transcribeOrder: ["openai" as const, "pocketsphinx" as const],
    };
    const speech = { speech: true, segments: [{ start: 0, end: 1 }] };
    const chain = createTranscriber({
      engine: {} as never,
      outbound: guard,
      config,
      log: { warn: (m: string) => warnings.push(m) },
      providers: { pocketsphinx: sphinx },
      detect: async () => speech,
    });
    assert.is((await chain.transcribe({ audio: audio(1), signal: signal() })).provider, "pocketsphinx");
    assert.is(warnings.length, 1);
    assert.match(warnings[0]!, /openai failed \(transcription upstream answered 500/);
    assert.not.ok(warnings[0]!.includes(KEY));
    // Every status the stand-in can give: the chain's final error carries no key either.
    for (const mode of ["401", "500", "malformed", "huge"] as const) {
      standIn.mode = mode;
      const alone = createTranscriber({
        engine: {} as never,
        outbound: guard,
        config: { ...config, transcribeOrder: ["openai"] },
        detect: async () => speech,
      });
      await failure(() => alone.transcribe({ audio: audio(1), signal: signal() }));
    }
    standIn.requests.length = 0;
    const unconfigured = createTranscriber({
      engine: {} as never,
      outbound: guard,
      config: { ...config, transcribeUrl: undefined },
      providers: { pocketsphinx: sphinx },
      detect: async () => speech,
    });
    assert.is((await unconfigured.transcribe({ audio: audio(1), signal: signal() })).provider, "pocketsphinx");
    assert.is(standIn.requests.length, 0);
  },
);

t("redact: the key and key-shaped tokens", () => {
  assert.is(
    redact(`bad key ${KEY} and sk-abc***xyz, Bearer abc.def`, KEY),
    "bad key [redacted] and [redacted], Bearer [redacted]",
  );
});

t.run();
