// Voiceover end to end through app.fetch on every database backend: validation before any charge, prices per
// tier, real speech decoded by the media engine in the requested format, distinct voices, failure and refund,
// the list and its pages, the in-flight cap, and the provider time-out.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  SpeechHttpError,
  type SpeechProvider,
  type SpeechProviders,
  SpeechTimeoutError,
  synthesizeWithin,
} from "../../contracts/speech.ts";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import account from "../../plugins/account/index.ts";
import { VOICEOVER_ERRORS } from "../../plugins/voiceover/errors.ts";
import voiceover from "../../plugins/voiceover/index.ts";
import { VOICES } from "../../plugins/voiceover/models.ts";
import voiceoverSandbox from "../../plugins/voiceover/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { newestListed } from "../helpers/newest-listed.ts";
import { balance, ledgerSum } from "../helpers/partner-reads.ts";
import { rowCount } from "../helpers/row-count.ts";

const ARIA = VOICES[0]!.voice_id;
const MARCUS = VOICES[1]!.voice_id;
const MANY = { rate_limits: { "POST /generate-voiceover": 10000 } };

const audioOf = (tk: TestKernel, url: string) => tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length));

/**
 * Bitrate (kbit/s) and sample rate of the first MPEG audio frame that carries audio, after any ID3v2 tag and
 * the encoder's Info/Xing frame (which may use a larger bitrate to fit the tag).
 */
function mp3FrameHeader(bytes: Uint8Array): { kbps: number; sampleRate: number } {
  let o = 0;
  if (bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33)
    o = 10 + ((bytes[6]! << 21) | (bytes[7]! << 14) | (bytes[8]! << 7) | bytes[9]!);
  const rates1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  const rates2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
  const sr1 = [44100, 48000, 32000],
    sr2 = [22050, 24000, 16000];
  for (;;) {
    while (o + 4 < bytes.length && !(bytes[o] === 0xff && (bytes[o + 1]! & 0xe0) === 0xe0)) o++;
    const mpeg1 = (bytes[o + 1]! & 0x18) === 0x18;
    const kbps = (mpeg1 ? rates1 : rates2)[bytes[o + 2]! >> 4]!;
    const sampleRate = (mpeg1 ? sr1 : sr2)[(bytes[o + 2]! >> 2) & 3]!;
    const length = Math.floor(((mpeg1 ? 144 : 72) * kbps * 1000) / sampleRate) + ((bytes[o + 2]! >> 1) & 1);
    const head = Buffer.from(bytes.subarray(o, o + 64)).toString("latin1");
    if (!head.includes("Info") && !head.includes("Xing")) return { kbps, sampleRate };
    o += length;
  }
}

/**
 * The sandbox's provider, or a test's own in its place while `testProviders` is set: one kernel serves the
 * whole suite, and a test that needs a failing or held provider sets it (cleared after each test).
 */
let testProviders: SpeechProviders | undefined;
/** A provider that answers at once, for tests about prices and lists rather than speech. */
const instant: SpeechProviders = {
  provider: () => ({ synthesize: async () => ({ bytes: new Uint8Array([1, 2, 3]), durationSeconds: 1 }) }),
};
const switchableSpeech = definePlugin({
  ...voiceoverSandbox,
  provides: {
    "speech.synthesize": (host: CapabilityHost): SpeechProviders => {
      const sandbox = voiceoverSandbox.provides["speech.synthesize"](host);
      return { provider: (model) => (testProviders ?? sandbox).provider(model) };
    },
  },
});

for (const backend of await databaseBackends()) {
  const t = suite(`voiceover on ${backend.name}`);
  // One kernel for the suite: every test has partners of its own (balances, rows, lists and the in-flight cap
  // are per account).
  const tk = suiteKernel(t, backend, {
    plugins: [account, switchableSpeech, voiceover],
    env: { SANDBOX_LATENCY_MS: "5", PUBLIC_URL: "https://media.example.test" },
  });
  t.after.each(() => {
    testProviders = undefined;
  });

  t("catalog and costs", async () => {
    const { key } = await tk.partner();
    const res = await tk.request("GET", "/voiceover/voices", { key });
    assert.is(res.status, 200);
    assert.is(res.body.default_model, "tts_v4_turbo");
    assert.equal(
      res.body.models.map((m: any) => m.id),
      ["tts_v4_turbo", "tts_v4", "tts_turbo_v2_5", "tts_v3"],
    );
    assert.ok(res.body.voices.length >= 2);
    for (const v of res.body.voices)
      assert.equal(Object.keys(v).sort(), ["description", "gender", "lang", "name", "voice_id"]);
    const credits = await tk.request("GET", "/credits", { key });
    const c = credits.body.costs.voiceover;
    assert.is(c.models.tts_v4.chars_per_credit, 40);
    assert.is(c.models.tts_v3.chars_per_credit, 50);
    assert.is(c.default_model, "tts_v4_turbo");
    assert.is(c.min_credits, 1);
    assert.is(c.max_text_length, 5000);
  });

  t("validation texts, no charge and no row", async () => {
    const { key, id } = await tk.partner({ credits: 100, limits: MANY });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ voice_id: ARIA }, VOICEOVER_ERRORS.textMissing],
      [{ text: "   ", voice_id: ARIA }, VOICEOVER_ERRORS.textMissing],
      [{ text: 5, voice_id: ARIA }, VOICEOVER_ERRORS.textMissing],
      [{ text: "x".repeat(5001), voice_id: ARIA }, VOICEOVER_ERRORS.textTooLong],
      [{ text: "hi" }, VOICEOVER_ERRORS.invalidVoice],
      [{ text: "hi", voice_id: "nope" }, VOICEOVER_ERRORS.invalidVoice],
      [{ text: "hi", voice_id: ARIA, model_id: "tts_v9" }, VOICEOVER_ERRORS.invalidModel],
      [{ text: "hi", voice_id: ARIA, output_format: "mp3_44100_999" }, VOICEOVER_ERRORS.invalidOutputFormat],
      [{ text: "hi", voice_id: ARIA, output_format: "wav" }, VOICEOVER_ERRORS.invalidOutputFormat],
      [{ text: "hi", voice_id: ARIA, output_format: "mp3_22050_192" }, VOICEOVER_ERRORS.invalidOutputFormat],
      [{ text: "hi", voice_id: ARIA, source: "s".repeat(201) }, VOICEOVER_ERRORS.invalidSource],
    ];
    for (const [body, text] of cases) {
      const res = await tk.request("POST", "/generate-voiceover", { key, body });
      assert.is(res.status, 400, JSON.stringify(body).slice(0, 80));
      assert.is(res.body.error, text);
    }
    assert.is(await balance(tk, key), 100);
    assert.is(await rowCount(tk, "voiceover_records", id), 0);
  });

  t("price per tier: max(1, ceil(chars / chars_per_credit)), api_plus10 minimum 2", async () => {
    testProviders = instant; // the price is the point, not the speech (real speech: the next tests)
    const plus = await tk.partner({ credits: 1000, limits: MANY });
    const std = await tk.partner({ credits: 1000, tier: "standard", limits: MANY });
    const cases: Array<[number, string, number, number]> = [
      // chars, model, standard, api_plus10
      [1, "tts_v4_turbo", 1, 2],
      [80, "tts_v4_turbo", 1, 2],
      [81, "tts_v4_turbo", 2, 3],
      [100, "tts_v4", 3, 4],
      [101, "tts_v3", 3, 4],
      [400, "tts_turbo_v2_5", 5, 6],
    ];
    for (const [chars, model, s, p] of cases) {
      const text = "a".repeat(chars);
      const a = await tk.request("POST", "/generate-voiceover", {
        key: std.key,
        body: { text, voice_id: ARIA, model_id: model, output_format: "pcm_16000" },
      });
      assert.is(a.status, 200, JSON.stringify(a.body));
      assert.is(a.body.credits_used, s, `${chars} ${model} standard`);
      const b = await tk.request("POST", "/generate-voiceover", {
        key: plus.key,
        body: { text, voice_id: ARIA, model_id: model, output_format: "pcm_16000" },
      });
      assert.is(b.body.credits_used, p, `${chars} ${model} api_plus10`);
      assert.is(b.body.char_count, chars);
    }
    assert.is(await ledgerSum(tk, plus.id), await balance(tk, plus.key));
  });

  t("real speech decoded in the requested codec, sample rate and bitrate", async () => {
    const { key, id } = await tk.partner({ credits: 1000, limits: MANY });
    const engine = tk.kernel.capability("media");
    const text = "The quick brown fox jumps over the lazy dog. Voiceover from the sandbox.";
    for (const [format, codec, rate, kbps] of [
      [undefined, "mp3", 44100, 128],
      ["mp3_22050_32", "mp3", 22050, 32],
      ["mp3_44100_192", "mp3", 44100, 192],
      ["pcm_24000", "pcm_s16le", 24000, 384],
      ["ulaw_8000", "pcm_mulaw", 8000, 64],
      ["opus_48000_64", "opus", 48000, 64],
    ] as const) {
      const res = await tk.request("POST", "/generate-voiceover", {
        key,
        body: { text, voice_id: ARIA, output_format: format, source: "tests", partner_job_id: "vo/1" },
      });
      assert.is(res.status, 200, JSON.stringify(res.body));
      assert.match(res.body.job_id, /^svc-[0-9a-f]{8}$/);
      assert.ok(Number.isInteger(res.body.id));
      assert.is(res.body.voice_name, "Aria");
      assert.is(res.body.model_id, "tts_v4_turbo");
      assert.ok(res.body.audio_url.startsWith("https://media.example.test/media/voiceover/"));
      const bytes = (await audioOf(tk, res.body.audio_url))!;
      const probe = await engine.probe(bytes);
      const audio = probe.streams.find((s) => s.type === "audio")!;
      assert.is(audio.codec, codec, String(format));
      assert.is(audio.sampleRate, rate, String(format));
      assert.ok(probe.durationSeconds > 2 && probe.durationSeconds < 15, `${format}: ${probe.durationSeconds}`);
      const measured = (bytes.byteLength * 8) / probe.durationSeconds / 1000;
      if (codec === "mp3") {
        const header = mp3FrameHeader(bytes);
        assert.is(header.kbps, kbps, String(format));
        assert.is(header.sampleRate, rate);
      }
      // Container overhead aside, the stream's rate is the requested one.
      assert.ok(Math.abs(measured - kbps) / kbps < 0.15, `${format}: ${measured.toFixed(1)} kbit/s for ${kbps}`);
      const media = await tk.request("GET", new URL(res.body.audio_url).pathname);
      assert.is(media.status, 200);
    }
    await newestListed(tk, key, "/voiceovers", "voiceovers", 6, {
      status: "success",
      source: "tests",
      partner_job_id: "vo/1",
      text,
      error_message: null,
    });
    assert.is(await ledgerSum(tk, id), await balance(tk, key));
  });

  t("two voices sound different; the same request gives the same audio", async () => {
    const { key } = await tk.partner({ credits: 1000, limits: MANY });
    const engine = tk.kernel.capability("media");
    const text = "Every voice in the catalog should sound like a different person.";
    const make = async (voice_id: string) => {
      const res = await tk.request("POST", "/generate-voiceover", {
        key,
        body: { text, voice_id, output_format: "pcm_22050" },
      });
      assert.is(res.status, 200, JSON.stringify(res.body));
      return (await audioOf(tk, res.body.audio_url))!;
    };
    const [a, a2, b] = [await make(ARIA), await make(ARIA), await make(MARCUS)];
    assert.equal(Buffer.compare(Buffer.from(a), Buffer.from(a2)), 0);
    assert.not.equal(Buffer.compare(Buffer.from(a), Buffer.from(b)), 0);
    const [da, db] = [(await engine.probe(a)).durationSeconds, (await engine.probe(b)).durationSeconds];
    assert.ok(Math.abs(da - db) > 0.2, `durations ${da} and ${db}`);
  });

  t("[sandbox:fail] answers 502, refunds, and lists the failure", async () => {
    const { key, id } = await tk.partner({ credits: 50 });
    const res = await tk.request("POST", "/generate-voiceover", {
      key,
      body: { text: "fail please [sandbox:fail]", voice_id: ARIA },
    });
    assert.is(res.status, 502);
    assert.is(res.body.error, VOICEOVER_ERRORS.failed);
    assert.is(await balance(tk, key), 50);
    assert.is(await ledgerSum(tk, id), 50);
    const list = await tk.request("GET", "/voiceovers", { key });
    assert.is(list.body.voiceovers[0].status, "failed");
    assert.is(list.body.voiceovers[0].audio_url, null);
    assert.is(list.body.voiceovers[0].error_message, VOICEOVER_ERRORS.failed);
    const ok = await tk.request("POST", "/generate-voiceover", { key, body: { text: "fine", voice_id: ARIA } });
    assert.is(ok.status, 200, "the failed attempt released its in-flight slot");
  });

  t("network error and HTTP error from a provider: the two 502 texts, refunded; 503 when none", async () => {
    let mode: "network" | "http" | "none" = "network";
    const p: SpeechProvider = {
      async synthesize() {
        if (mode === "network") throw new TypeError("fetch failed");
        throw new SpeechHttpError(500, "upstream 500");
      },
    };
    testProviders = { provider: () => (mode === "none" ? undefined : p) };
    const { key, id } = await tk.partner({ credits: 20 });
    let res = await tk.request("POST", "/generate-voiceover", { key, body: { text: "hello", voice_id: ARIA } });
    assert.is(res.status, 502);
    assert.is(res.body.error, VOICEOVER_ERRORS.unavailable);
    mode = "http";
    res = await tk.request("POST", "/generate-voiceover", { key, body: { text: "hello", voice_id: ARIA } });
    assert.is(res.body.error, VOICEOVER_ERRORS.failed);
    mode = "none";
    res = await tk.request("POST", "/generate-voiceover", { key, body: { text: "hello", voice_id: ARIA } });
    assert.is(res.status, 503);
    assert.is(res.body.error, VOICEOVER_ERRORS.notConfigured);
    assert.is(await balance(tk, key), 20);
    assert.is(await ledgerSum(tk, id), 20);
  });

  t("list: newest first, default 30, max 200, offset", async () => {
    testProviders = instant; // 33 rows, not 33 syntheses
    const { key } = await tk.partner({ credits: 10_000, tier: "standard", limits: MANY });
    for (let i = 0; i < 33; i++) {
      const res = await tk.request("POST", "/generate-voiceover", {
        key,
        body: { text: `number ${i}`, voice_id: ARIA, output_format: "pcm_8000" },
      });
      assert.is(res.status, 200);
    }
    let list = await tk.request("GET", "/voiceovers", { key });
    assert.is(list.body.total, 33);
    assert.is(list.body.limit, 30);
    assert.is(list.body.offset, 0);
    assert.is(list.body.voiceovers.length, 30);
    assert.is(list.body.voiceovers[0].text, "number 32");
    list = await tk.request("GET", "/voiceovers?limit=5&offset=30", { key });
    assert.equal(
      list.body.voiceovers.map((v: any) => v.text),
      ["number 2", "number 1", "number 0"],
    );
    list = await tk.request("GET", "/voiceovers?limit=500", { key });
    assert.is(list.body.limit, 200);
    const other = await tk.partner();
    assert.is((await tk.request("GET", "/voiceovers", { key: other.key })).body.total, 0);
  });

  t("in-flight cap: 429 while the slot is held, free again once finished", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const began = new Promise<void>((r) => (started = r));
    const p: SpeechProvider = {
      async synthesize() {
        started();
        await gate;
        return { bytes: new Uint8Array([1, 2, 3]), durationSeconds: 1 };
      },
    };
    testProviders = { provider: () => p };
    const { key } = await tk.partner({ credits: 50, limits: { inflight_jobs: 1 } });
    const first = tk.request("POST", "/generate-voiceover", { key, body: { text: "slow", voice_id: ARIA } });
    await began;
    const second = await tk.request("POST", "/generate-voiceover", { key, body: { text: "blocked", voice_id: ARIA } });
    assert.is(second.status, 429);
    assert.is(second.body.error, "Too many in-flight jobs for this partner. Wait for some to finish and retry.");
    release();
    assert.is((await first).status, 200);
    const third = await tk.request("POST", "/generate-voiceover", { key, body: { text: "now", voice_id: ARIA } });
    assert.is(third.status, 200);
    assert.is(await balance(tk, key), 50 - 2 - 2);
  });

  t.run();
}

const unit = suite("voiceover provider time-out");
unit("a provider that never answers is cut off at the time-out", async () => {
  const hung: SpeechProvider = { synthesize: () => new Promise(() => {}) };
  // A provider that never answers would hold this test until the runner's time-out: the error is the cut.
  const err = await synthesizeWithin(
    hung,
    { text: "x", voiceId: ARIA, model: "tts_v4", format: null as any },
    50,
  ).catch((e) => e);
  assert.instance(err, SpeechTimeoutError);
});
unit.run();
