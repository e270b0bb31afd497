// Music end to end through app.fetch on every database backend: validation before any charge, prices per
// tier, jobs completing with two decodable tracks and covers, failures refunded with their error_code, the
// list, the in-flight cap, and extension in both forms with the Idempotency-Key contract (replay, 409, and
// identical requests racing into one job).
//
// The provider here is the test's own (real MP3s of a tone, fast; it submits and polls as an upstream would),
// so these tests are about the API; the sandbox's music is tested in sandbox.test.ts, and end to end with the
// API in sandbox-api.test.ts.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { type MusicProvider, MusicProviderError, type MusicProviders, type MusicTrack } from "../../contracts/music.ts";
import type { UpstreamProvider } from "../../contracts/upstream.ts";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import { ApiError } from "../../lib/api-error.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { createMediaEngine, type MediaEngine } from "../../lib/media/index.ts";
import { pcm16Wav } from "../../lib/speech/pcm.ts";
import account from "../../plugins/account/index.ts";
import { encodePng } from "../../plugins/images/png.ts";
import { FAILURE_TEXTS, MUSIC_ERRORS } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import { uploadedSource } from "../../plugins/music/source.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { assertAnswer, assertFields } from "../helpers/assert.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { ledgerAmounts } from "../helpers/ledger-amounts.ts";
import { balance } from "../helpers/partner-reads.ts";
import { ended, pollStatus } from "../helpers/poll-status.ts";

/** A mono 16-bit WAV of a tone. */
function toneWav(seconds: number, hz = 440, rate = 22050): Uint8Array {
  const samples = Int16Array.from({ length: Math.round(seconds * rate) }, (_, i) =>
    Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate)),
  );
  return pcm16Wav(samples, rate);
}

// Each tone is encoded once per file: the provider makes the same few (length, pitch) pairs in every test, on
// both backends. Callers get copies; a failed encoding is not kept.
const mp3s = new Map<string, Promise<Uint8Array>>();
async function mp3(engine: MediaEngine, seconds: number, hz: number): Promise<Uint8Array> {
  const key = `${seconds}:${hz}`;
  let made = mp3s.get(key);
  if (!made) {
    made = engine
      .run(["-i", "in.wav", "-c:a", "libmp3lame", "-b:a", "64k", "out.mp3"], {
        inputs: { "in.wav": toneWav(seconds, hz) },
        outputs: ["out.mp3"],
      })
      .then((out) => out["out.mp3"]!);
    mp3s.set(key, made);
    made.catch(() => mp3s.delete(key));
  }
  return new Uint8Array(await made);
}

const cover = encodePng(16, 16, new Uint8Array(16 * 16 * 3).fill(200), 3);

/** What the test provider saw, and how it should answer next. */
interface Script {
  /** The requests submitted. */
  calls: Array<{ kind: "generate" | "extend"; request: any }>;
  /** The upstream's failure, answered by the poll. */
  fail?: MusicProviderError | Error;
  /** Thrown by the submit (the upstream could not be reached). */
  refuse?: Error;
  /** While true, polls answer pending (for in-flight tests). */
  held?: boolean;
  /** Tracks made without an arrangement: they cannot be extended directly (restaged as uploads). */
  noArrangement?: boolean;
}

function testProvider(engine: () => MediaEngine, script: Script): MusicProvider {
  const tracks = async (seconds: number, title: string): Promise<MusicTrack[]> =>
    Promise.all(
      [440, 660].map(async (hz, i) => ({
        audio: await mp3(engine(), seconds, hz),
        cover,
        coverMimeType: "image/png" as const,
        title,
        duration: seconds,
        arrangement: script.noArrangement ? null : { hz, variation: i },
      })),
    );
  // The "remote" work, by id: what each request will make once polled.
  const works = new Map<string, () => Promise<MusicTrack[]>>();
  const upstream = <R>(
    kind: "generate" | "extend",
    make: (request: R) => Promise<MusicTrack[]>,
  ): UpstreamProvider<R, MusicTrack[]> => ({
    name: "music-test",
    async submit(request) {
      if (script.refuse) throw script.refuse;
      script.calls.push({ kind, request });
      const id = `${kind}-${works.size}-${Math.random().toString(36).slice(2)}`;
      works.set(id, () => make(request));
      return { id };
    },
    async poll(handle) {
      if (script.held) return { state: "pending", progress: 0.5, pollAfterMs: 50 };
      if (script.fail) return { state: "failed", error: script.fail };
      return { state: "done", result: await works.get(handle.id)!() };
    },
  });
  return {
    generate: upstream("generate", (request) => tracks(3, request.title ?? "Generated")),
    extend: upstream("extend", (request) =>
      tracks(Math.ceil(request.continueAt) + 2, request.title || request.source.title || "Extended"),
    ),
  };
}

const providerPlugin = (script: Script, serve = true) =>
  definePlugin({
    name: "music-test-provider",
    requires: ["media"],
    provides: {
      "music.generate": (host: CapabilityHost): MusicProviders => {
        const p = testProvider(() => host.capability("media"), script);
        return { provider: () => (serve ? p : undefined) };
      },
    },
  });

const UNLIMITED = {
  rate_limits: {
    "POST /generate-music": 10_000,
    "POST /extend-music": 10_000,
    "GET /music-status/<job_id>": 100_000,
    "GET /music": 10_000,
    "GET /credits": 10_000,
  },
};

/** The status answer once the job ends (complete or error). */
const waitFor = (tk: TestKernel, key: string, id: string, timeoutMs = 60_000) =>
  pollStatus(tk, key, `/music-status/${id}`, ended, timeoutMs, 50);

async function rows(tk: TestKernel): Promise<number> {
  const r = await tk.kernel.database.kysely
    .selectFrom("music_jobs" as any)
    .select((eb: any) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  return Number((r as any).n);
}

const blobOf = async (tk: TestKernel, url: string) =>
  (await tk.kernel.blobs.get(new URL(url).pathname.slice("/media/".length)))!;

function form(parameters: Record<string, unknown> | string, audio?: { bytes: Uint8Array; name: string }): FormData {
  const f = new FormData();
  f.set("parameters", typeof parameters === "string" ? parameters : JSON.stringify(parameters));
  if (audio) f.set("audio", new Blob([audio.bytes as Uint8Array<ArrayBuffer>]), audio.name);
  return f;
}

// The multipart test's long uploads, made once per file (both backends send the same bytes).
let uploads:
  | Promise<{ longMp3: Record<string, Uint8Array>; tricky: Uint8Array; trickyProbedSeconds: number }>
  | undefined;
const uploadFixtures = () =>
  (uploads ??= (async () => {
    const engine = createMediaEngine();
    try {
      const longMp3 = await engine.run(
        ["-f", "s16le", "-ar", "8000", "-ac", "1", "-i", "in.raw", "-c:a", "libmp3lame", "-b:a", "8k", "out.mp3"],
        { inputs: { "in.raw": new Uint8Array(8000 * 2 * 481) }, outputs: ["out.mp3"] },
      );
      const pcm = new Uint8Array(44100 * 2 * 600);
      for (let i = 0; i < 44100 * 3; i++)
        new DataView(pcm.buffer).setInt16(i * 2, Math.round(20000 * Math.sin(i * 0.37) * Math.sin(i * 0.011)), true);
      const tricky = (
        await engine.run(
          [
            "-f",
            "s16le",
            "-ar",
            "44100",
            "-ac",
            "1",
            "-i",
            "in.raw",
            "-c:a",
            "libmp3lame",
            "-q:a",
            "0",
            "-write_xing",
            "0",
            "out.mp3",
          ],
          { inputs: { "in.raw": pcm }, outputs: ["out.mp3"] },
        )
      )["out.mp3"]!;
      return { longMp3, tricky, trickyProbedSeconds: (await engine.probe(tricky, "t.mp3")).durationSeconds };
    } finally {
      await engine.close();
    }
  })());

let keyCounter = 0;
const newKey = () => `test-key-${Date.now().toString(36)}-${keyCounter++}`;

for (const backend of await databaseBackends()) {
  const t = suite(`music on ${backend.name}`);
  let tk: TestKernel;
  let script: Script;
  const start = async (serve = true) => {
    script = { calls: [] };
    tk = await createTestKernel({
      plugins: [account, providerPlugin(script, serve), music],
      databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
      env: { PUBLIC_URL: "https://media.example.test" },
      start: true,
    });
  };
  const partner = (o: Parameters<TestKernel["partner"]>[0] = {}) =>
    tk.partner({ ...o, limits: { ...UNLIMITED, ...o.limits, rate_limits: UNLIMITED.rate_limits } });
  t.after.each(async () => {
    await tk?.close();
  });

  /** POST /extend-music as the partner with a fresh Idempotency-Key, unless `headers` names one. */
  const extend = (key: string, body: unknown, headers: Record<string, string> = {}) =>
    tk.request("POST", "/extend-music", { key, headers: { "idempotency-key": newKey(), ...headers }, body });

  /** A completed generation of this partner's, to extend. */
  async function completedJob(key: string, body: Record<string, unknown> = { prompt: "calm piano" }) {
    const res = await tk.request("POST", "/generate-music", { key, body });
    assert.is(res.status, 202, JSON.stringify(res.body));
    const done = await waitFor(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete");
    return res.body.job_id as string;
  }

  t("generation: every rule answers 400 before any charge", async () => {
    await start();
    const { key } = await partner({ credits: 100 });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, MUSIC_ERRORS.promptMissing],
      [{ prompt: "   " }, MUSIC_ERRORS.promptMissing],
      [{ prompt: "x".repeat(501) }, MUSIC_ERRORS.promptTooLong],
      [{ prompt: "x", model: "V4" }, MUSIC_ERRORS.invalidModel],
      [{ prompt: "x", instrumental: "yes" }, MUSIC_ERRORS.instrumentalType],
      [{ prompt: "x", style: "jazz" }, MUSIC_ERRORS.styleAndTitle],
      [{ prompt: "x", title: "Song" }, MUSIC_ERRORS.styleAndTitle],
      [{ style: "jazz", title: "Song" }, MUSIC_ERRORS.lyricsMissing],
      [{ prompt: "x".repeat(5001), style: "jazz", title: "Song" }, MUSIC_ERRORS.lyricsTooLong],
      [{ prompt: "la la", style: "x".repeat(1001), title: "Song" }, MUSIC_ERRORS.styleTooLong],
      [{ prompt: "la la", style: "jazz", title: "x".repeat(81) }, MUSIC_ERRORS.titleTooLong],
      [{ prompt: 5 }, MUSIC_ERRORS.notAString("prompt")],
      [{ prompt: "x", partner_job_id: "has space" }, KERNEL_ERRORS.invalidPartnerJobId],
    ];
    for (const [body, error] of cases) {
      const res = await tk.request("POST", "/generate-music", { key, body });
      assert.is(res.status, 400, JSON.stringify(body));
      assert.is(res.body.error, error, JSON.stringify(body));
    }
    assert.is(await balance(tk, key), 100);
    assert.is(await rows(tk), 0);
    assert.is(script.calls.length, 0);
  });

  t("generation: 202, tier prices, two decodable tracks with covers, status and list agree", async () => {
    await start();
    const { key } = await partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-music", {
      key,
      body: { prompt: "calm piano at dawn", partner_job_id: "order/7" },
    });
    assertAnswer(res, 202, "credits_remaining credits_used id job_id model partner_job_id request_id status");
    assert.is(res.body.status, "queued");
    assert.is(res.body.model, "V5_5");
    assert.is(res.body.credits_used, 11, "api_plus10 pays 11");
    assert.is(res.body.credits_remaining, 89);
    assert.is(res.body.partner_job_id, "order/7");
    assert.ok(Number.isInteger(res.body.id));
    const done = await waitFor(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete");
    assert.is(done.body.operation, "generate");
    assert.is(done.body.tracks.length, 2);
    assert.is(done.body.error_code, undefined);
    const engine = createMediaEngine();
    try {
      for (const track of done.body.tracks) {
        assert.ok(track.audio_url.startsWith("https://media.example.test/media/music/tracks/"));
        const probe = await engine.probe(await blobOf(tk, track.audio_url), "t.mp3");
        assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "mp3");
        assert.ok(
          Math.abs(probe.durationSeconds - track.duration) < 0.2,
          `${probe.durationSeconds} vs ${track.duration}`,
        );
        assert.is(track.title, "Generated");
        const img = await blobOf(tk, track.image_url);
        assert.is(Buffer.from(img.subarray(1, 4)).toString(), "PNG");
      }
    } finally {
      await engine.close();
    }
    assert.is(script.calls[0]!.request.prompt, "calm piano at dawn");
    assert.is(script.calls[0]!.request.custom, false);

    const standard = await partner({ credits: 100, tier: "standard" });
    const custom = await tk.request("POST", "/generate-music", {
      key: standard.key,
      body: { style: "ambient", title: "Dawn", instrumental: true, model: "V5" },
    });
    assert.is(custom.status, 202);
    assert.is(custom.body.credits_used, 10, "standard pays 10");
    assert.is(custom.body.model, "V5");
    await waitFor(tk, standard.key, custom.body.job_id);
    assert.is(script.calls[1]!.request.custom, true);
    assert.is(script.calls[1]!.request.instrumental, true);

    const list = await tk.request("GET", "/music", { key });
    assert.is(list.status, 200);
    assert.is(list.body.total, 1, "only this account's jobs");
    assert.is(list.body.limit, 30);
    const entry = list.body.music[0];
    assertFields(
      entry,
      "completed_at created_at credits_used job_id model operation partner_job_id status title tracks",
    );
    assert.is(entry.title, "Generated");
    assert.equal(entry.tracks, done.body.tracks);
    assert.ok(entry.completed_at);
    const other = await partner();
    assert.is((await tk.request("GET", `/music-status/${res.body.job_id}`, { key: other.key })).status, 404);
  });

  t("failures end error with their error_code, refunded; no provider is a 503 before any charge", async () => {
    await start();
    const { id, key } = await partner({ credits: 100 });
    for (const code of ["provider_down", "timeout", "safety_filter", "input_rejected"] as const) {
      script.fail = new MusicProviderError(code, "upstream said no");
      const res = await tk.request("POST", "/generate-music", { key, body: { prompt: "x" } });
      const done = await waitFor(tk, key, res.body.job_id);
      assert.is(done.body.status, "error");
      assert.is(done.body.error_code, code);
      assert.is(done.body.error, FAILURE_TEXTS[code]);
      assert.is(done.body.tracks, undefined);
      const listed = (await tk.request("GET", "/music", { key })).body.music[0];
      assert.equal(listed.tracks, []);
      assert.ok(!JSON.stringify(done.body).includes("upstream said no"));
    }
    script.fail = new Error("socket hang up");
    const res = await tk.request("POST", "/generate-music", { key, body: { prompt: "x" } });
    assert.is((await waitFor(tk, key, res.body.job_id)).body.error_code, "provider_down");
    script.fail = undefined;
    script.refuse = new MusicProviderError("safety_filter", "refused at submit");
    const refused = await tk.request("POST", "/generate-music", { key, body: { prompt: "x" } });
    assert.equal(
      [(await waitFor(tk, key, refused.body.job_id)).body.error_code, script.calls.length],
      ["safety_filter", 5],
      "a submit that throws is the provider's failure",
    );
    assert.is(await balance(tk, key), 100, "every failure refunded");
    assert.is((await ledgerAmounts(tk, { partnerId: id, type: "refund" })).length, 6);
    await tk.close();

    await start(false);
    const p = await partner({ credits: 100 });
    const off = await tk.request("POST", "/generate-music", { key: p.key, body: { prompt: "x" } });
    assert.is(off.status, 503);
    assert.is(off.body.error, MUSIC_ERRORS.notConfigured);
    assert.is(await balance(tk, p.key), 100);
  });

  t("generation counts against the in-flight cap; extension does not", async () => {
    await start();
    const { key } = await partner({ credits: 100, limits: { inflight_jobs: 1 } });
    const jobId = await completedJob(key);
    script.held = true;
    const first = await tk.request("POST", "/generate-music", { key, body: { prompt: "one" } });
    assert.is(first.status, 202);
    const second = await tk.request("POST", "/generate-music", { key, body: { prompt: "two" } });
    assert.is(second.status, 429);
    assert.is(second.body.error, "Too many in-flight jobs for this partner. Wait for some to finish and retry.");
    const ext = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": newKey() },
      body: { continue_at: 1, source: { kind: "svc_music", ref: jobId } },
    });
    assert.is(ext.status, 202, JSON.stringify(ext.body));
    const slots = await tk.kernel.database.kysely
      .selectFrom("jobs")
      .select(["id", "holds_inflight_slot"])
      .where("id", "in", [first.body.job_id, ext.body.job_id])
      .execute();
    assert.equal(Object.fromEntries(slots.map((r: any) => [r.id, r.holds_inflight_slot])), {
      [first.body.job_id]: true,
      [ext.body.job_id]: false,
    });
    script.held = false;
    await waitFor(tk, key, first.body.job_id);
    assert.is((await tk.request("POST", "/generate-music", { key, body: { prompt: "three" } })).status, 202);
  });

  t("extension (JSON): the rules, inheritance, 404s, and a completed extension", async () => {
    await start();
    const { key } = await partner({ credits: 200 });
    const jobId = await completedJob(key, { style: "lofi", title: "Rain", prompt: "la la la" });
    const source = { kind: "svc_music", ref: jobId };
    const other = await partner({ credits: 100 });
    const otherJob = await completedJob(other.key);
    const before = await balance(tk, key);
    const rowsBefore = await rows(tk);

    for (const [headers, body, status, error] of [
      [{ "idempotency-key": "(omit)" }, { continue_at: 1, source }, 400, MUSIC_ERRORS.idempotencyKey],
      [{ "idempotency-key": "short" }, { continue_at: 1, source }, 400, MUSIC_ERRORS.idempotencyKey],
      [{ "idempotency-key": "has space in it" }, { continue_at: 1, source }, 400, MUSIC_ERRORS.idempotencyKey],
      [{ "idempotency-key": "x".repeat(101) }, { continue_at: 1, source }, 400, MUSIC_ERRORS.idempotencyKey],
      [{}, { continue_at: 1 }, 400, MUSIC_ERRORS.sourceRequired],
      [{}, { continue_at: 1, source: { kind: "url", ref: "https://x.test/a.mp3" } }, 400, MUSIC_ERRORS.invalidSource],
      [{}, { continue_at: 1, source: { kind: "svc_music", ref: "/etc/passwd" } }, 400, MUSIC_ERRORS.invalidSource],
      [{}, { continue_at: 1, source: { ...source, track: -1 } }, 400, MUSIC_ERRORS.invalidSource],
      [{}, { continue_at: 1, source: { ...source, track: 1.5 } }, 400, MUSIC_ERRORS.invalidSource],
      [{}, { source }, 400, MUSIC_ERRORS.continueAtMissing],
      [{}, { continue_at: 0, source }, 400, MUSIC_ERRORS.continueAtPositive],
      [{}, { continue_at: 3, source }, 400, MUSIC_ERRORS.continueAtOutside(3)],
      [{}, { continue_at: 1, source, request_id: "mine" }, 400, MUSIC_ERRORS.requestIdInBody],
      [{}, { continue_at: 1, source, mode: "remix" }, 400, MUSIC_ERRORS.invalidMode],
      [{}, { continue_at: 1, source, mode: "custom", style: "x" }, 400, MUSIC_ERRORS.customNeedsStyleAndTitle],
      [{}, { continue_at: 1, source, persona_id: "p1" }, 400, MUSIC_ERRORS.personaCustomOnly],
      [{}, { continue_at: 1, source, style_weight: 0.555 }, 400, MUSIC_ERRORS.weight("style_weight")],
      [{}, { continue_at: 1, source, audio_weight: 1.01 }, 400, MUSIC_ERRORS.weight("audio_weight")],
      [{}, { continue_at: 1, source, vocal_gender: "x" }, 400, MUSIC_ERRORS.vocalGender],
      [{}, { continue_at: 1, source, model: "V5" }, 400, MUSIC_ERRORS.modelMismatch("V5_5")],
      [{}, { continue_at: 1, source, instrumental: true }, 400, MUSIC_ERRORS.instrumentalMismatch(false)],
      [{}, { continue_at: 1, source, mode: "custom", style: "x", title: "y" }, 400, MUSIC_ERRORS.promptRequired],
      [{}, { continue_at: 1, source, partner_job_id: "a/b" }, 400, MUSIC_ERRORS.invalidPartnerJobId],
      [{}, { continue_at: 1, source: { kind: "svc_music", ref: otherJob } }, 404, MUSIC_ERRORS.sourceUnavailable],
      [{}, { continue_at: 1, source: { kind: "svc_music", ref: "svc-00000000" } }, 404, MUSIC_ERRORS.sourceUnavailable],
      [{}, { continue_at: 1, source: { ...source, track: 2 } }, 404, MUSIC_ERRORS.sourceUnavailable],
    ] as Array<[Record<string, string>, Record<string, unknown>, number, string]>) {
      const sent: Record<string, string> = { "idempotency-key": newKey(), ...headers };
      if (sent["idempotency-key"] === "(omit)") delete sent["idempotency-key"];
      const res = await tk.request("POST", "/extend-music", { key, headers: sent, body });
      assert.is(res.status, status, JSON.stringify(body));
      assert.is(res.body.error, error, JSON.stringify(body));
    }
    const text = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": newKey(), "content-type": "text/plain" },
      body: "continue",
    });
    assert.is(text.status, 415);
    assert.is(text.body.error, MUSIC_ERRORS.unsupportedType);
    assert.is(await balance(tk, key), before);
    assert.is(await rows(tk), rowsBefore);

    const k = newKey();
    const res = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": k },
      body: { continue_at: 1.5, source: { ...source, track: 1 }, style_weight: 0.25, partner_job_id: "ext_1" },
    });
    assertAnswer(
      res,
      202,
      "credits_remaining credits_used idempotency_key job_id model operation partner_job_id request_id status",
    );
    assert.is(res.body.operation, "extend");
    assert.is(res.body.idempotency_key, k);
    assert.is(res.body.credits_used, 11);
    const done = await waitFor(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete");
    assert.is(done.body.operation, "extend");
    const call = script.calls.at(-1)!;
    assert.is(call.kind, "extend");
    assert.is(call.request.continueAt, 1.5);
    assert.is(call.request.styleWeight, 0.25);
    assert.equal(call.request.source.arrangement, { hz: 660, variation: 1 }, "the chosen variation's arrangement");
    assert.is(call.request.model, "V5_5");
    assert.is(call.request.instrumental, false);
    const list = (await tk.request("GET", "/music", { key })).body.music;
    assert.is(list[0].title, "Rain", "an extension without a title keeps its source's");
    assert.ok(!JSON.stringify(list).includes(k), "idempotency keys are never listed");
    assert.ok(!JSON.stringify(done.body).includes(k));
  });

  t("Idempotency-Key: an identical retry replays with no charge; different parameters are a 409", async () => {
    await start();
    const { key } = await partner({ credits: 100 });
    const jobId = await completedJob(key);
    const k = newKey();
    const body = { continue_at: 2, source: { kind: "svc_music", ref: jobId } };
    const first = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": k },
      body: { ...body, partner_job_id: "first" },
    });
    assert.is(first.status, 202);
    const afterFirst = await balance(tk, key);
    // Spelling out defaults and sending another partner_job_id is still the same request.
    const again = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": k },
      body: { ...body, mode: "original", source: { ...body.source, track: 0 }, partner_job_id: "second" },
    });
    assert.is(again.status, 200, JSON.stringify(again.body));
    assert.is(again.body.deduplicated, true);
    assert.is(again.body.job_id, first.body.job_id);
    assert.is(again.body.partner_job_id, "first");
    assert.is(again.body.credits_used, 11);
    assert.is(again.body.credits_remaining, afterFirst);
    assert.ok(["queued", "processing", "complete"].includes(again.body.status));
    await waitFor(tk, key, first.body.job_id);
    const later = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": k },
      body: { ...body, model: "V5_5", instrumental: false },
    });
    assert.is(later.status, 200, "the source's own model and setting, spelled out, are the same request");
    assert.is(later.body.status, "complete");
    const conflict = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": k },
      body: { ...body, continue_at: 2.5 },
    });
    assert.is(conflict.status, 409);
    assert.is(conflict.body.error, MUSIC_ERRORS.idempotencyConflict);
    assert.is(await balance(tk, key), afterFirst);
    assert.is(await rows(tk), 2);
    // Keys are per account: another account's same key is a new job.
    const other = await partner({ credits: 100 });
    const otherJob = await completedJob(other.key);
    const theirs = await tk.request("POST", "/extend-music", {
      key: other.key,
      headers: { "idempotency-key": k },
      body: { ...body, source: { kind: "svc_music", ref: otherJob } },
    });
    assert.is(theirs.status, 202);
    // A replay answers even when the account could not pay for a new job.
    const poor = await partner({ credits: 22 });
    const poorJob = await completedJob(poor.key);
    const pk = newKey();
    const pb = { continue_at: 1, source: { kind: "svc_music", ref: poorJob } };
    assert.is(
      (await tk.request("POST", "/extend-music", { key: poor.key, headers: { "idempotency-key": pk }, body: pb }))
        .status,
      202,
    );
    assert.is(await balance(tk, poor.key), 0);
    const broke = await tk.request("POST", "/extend-music", {
      key: poor.key,
      headers: { "idempotency-key": newKey() },
      body: pb,
    });
    assert.is(broke.status, 402);
    assert.is(broke.body.credits_remaining, 0);
    assert.is(
      (await tk.request("POST", "/extend-music", { key: poor.key, headers: { "idempotency-key": pk }, body: pb }))
        .status,
      200,
    );
  });

  t("two identical requests racing create one job and one charge; a conflicting racer gets 409", async () => {
    await start();
    const { key } = await partner({ credits: 500 });
    const jobId = await completedJob(key);
    const before = await balance(tk, key);
    const rowsBefore = await rows(tk);
    for (let round = 0; round < 3; round++) {
      const k = newKey();
      const body = { continue_at: 1, source: { kind: "svc_music", ref: jobId } };
      const answers = await Promise.all(
        [0, 1, 2].map(() => tk.request("POST", "/extend-music", { key, headers: { "idempotency-key": k }, body })),
      );
      assert.equal(answers.map((a) => a.status).sort(), [200, 200, 202], JSON.stringify(answers.map((a) => a.body)));
      assert.is(new Set(answers.map((a) => a.body.job_id)).size, 1);
      const k2 = newKey();
      const mixed = await Promise.all(
        [1, 2].map((c) =>
          tk.request("POST", "/extend-music", {
            key,
            headers: { "idempotency-key": k2 },
            body: { ...body, continue_at: c },
          }),
        ),
      );
      assert.equal(mixed.map((a) => a.status).sort(), [202, 409]);
    }
    assert.is(await rows(tk), rowsBefore + 6);
    assert.is(await balance(tk, key), before - 6 * 11);
    // The winner takes the last credits: the loser is refused for credits first, and still gets the replay.
    const poor = await partner({ credits: 22 });
    const poorJob = await completedJob(poor.key);
    const pk = newKey();
    const pb = { continue_at: 1, source: { kind: "svc_music", ref: poorJob } };
    const both = await Promise.all(
      [0, 1].map(() =>
        tk.request("POST", "/extend-music", { key: poor.key, headers: { "idempotency-key": pk }, body: pb }),
      ),
    );
    assert.equal(both.map((a) => a.status).sort(), [200, 202], JSON.stringify(both.map((a) => a.body)));
    assert.is(await balance(tk, poor.key), 0);
  });

  t("an owned track without an arrangement is restaged: upload_extend, with the upload's prompt rule", async () => {
    await start();
    const { key } = await partner({ credits: 100 });
    script.noArrangement = true;
    const jobId = await completedJob(key);
    const source = { kind: "svc_music", ref: jobId };
    const bare = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": newKey() },
      body: { continue_at: 1, source },
    });
    assert.equal(
      [bare.status, bare.body.error],
      [400, MUSIC_ERRORS.promptRequired],
      "original mode needs a prompt when restaged",
    );
    const res = await tk.request("POST", "/extend-music", {
      key,
      headers: { "idempotency-key": newKey() },
      body: { continue_at: 1, source, prompt: "on and on" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.operation, "upload_extend");
    assert.is((await waitFor(tk, key, res.body.job_id)).body.status, "complete");
    assert.equal(script.calls.at(-1)!.request.source.arrangement, null);
  });

  t("extension (multipart): upload rules, upload_extend, replay by file bytes", async () => {
    await start();
    const { key } = await partner({ credits: 100 });
    const wav = toneWav(4);
    const longMp3 = await uploadFixtures().then((f) => f.longMp3);
    const before = await balance(tk, key);
    for (const [headers, body, status, error] of [
      [{}, form({ continue_at: 1 }), 400, MUSIC_ERRORS.audioMissing],
      [{}, form({ continue_at: 1 }, { bytes: wav, name: "song.aiff" }), 400, MUSIC_ERRORS.uploadExtension],
      [{}, form({ continue_at: 1 }, { bytes: wav, name: "song" }), 400, MUSIC_ERRORS.uploadExtension],
      [
        {},
        form({ continue_at: 1 }, { bytes: new TextEncoder().encode("not audio at all"), name: "song.mp3" }),
        400,
        MUSIC_ERRORS.uploadUnreadable,
      ],
      [
        {},
        form({ continue_at: 1, source: { kind: "svc_music", ref: "svc-00000000" } }, { bytes: wav, name: "a.wav" }),
        400,
        MUSIC_ERRORS.sourceInUpload,
      ],
      [
        {},
        form({ continue_at: 4.5, prompt: "go on" }, { bytes: wav, name: "a.wav" }),
        400,
        MUSIC_ERRORS.continueAtOutside(4),
      ],
      [{}, form({ continue_at: 1 }, { bytes: wav, name: "a.wav" }), 400, MUSIC_ERRORS.promptRequired],
      [
        {},
        form({ continue_at: 1, mode: "custom", style: "rock", title: "T" }, { bytes: wav, name: "a.wav" }),
        400,
        MUSIC_ERRORS.promptRequired,
      ],
      [
        {},
        form({ continue_at: 1, prompt: "go on" }, { bytes: longMp3["out.mp3"]!, name: "long.mp3" }),
        400,
        MUSIC_ERRORS.uploadTooLong,
      ],
      [{}, form("not json", { bytes: wav, name: "a.wav" }), 400, "Request body must be JSON"],
    ] as Array<[Record<string, string>, FormData, number, string]>) {
      const res = await extend(key, body, headers);
      assert.is(res.status, status);
      assert.is(res.body.error, error);
    }
    assert.is(await balance(tk, key), before);
    assert.is(await rows(tk), 0);

    // The length is the decoded audio's, not a header's estimate: 10 minutes of VBR MP3 without a Xing
    // header (loud first, then quiet) probes as far shorter than it plays.
    const { tricky, trickyProbedSeconds } = await uploadFixtures();
    assert.ok(trickyProbedSeconds < 480, "the header's estimate is short of the audio");
    // The byte cap over HTTP: one byte over is a 413; exactly at it is read (and refused as not audio). Each
    // body is made when its case is sent (two of them are 95 MB).
    const goOn = (bytes: Uint8Array, name: string) => form({ continue_at: 1, prompt: "go on" }, { bytes, name });
    for (const [what, body, status, error, headers] of [
      ["the decoded length, not the header's", () => goOn(tricky, "tricky.mp3"), 400, MUSIC_ERRORS.uploadTooLong],
      ["one byte over the cap", () => goOn(new Uint8Array(95_000_001), "big.wav"), 413, MUSIC_ERRORS.uploadTooLarge],
      ["exactly at the cap", () => goOn(new Uint8Array(95_000_000), "big.wav"), 400, MUSIC_ERRORS.uploadUnreadable],
      [
        "a garbled multipart body",
        () => "--x\r\nnot a form",
        400,
        MUSIC_ERRORS.uploadUnreadable,
        { "content-type": "multipart/form-data; boundary=nothere" },
      ],
      [
        "a JSON body keeps the ordinary cap",
        () => ({ continue_at: 1, prompt: "x".repeat(1_100_000), source: { kind: "svc_music", ref: "svc-00000000" } }),
        413,
        KERNEL_ERRORS.bodyTooLarge,
      ],
    ] as Array<[string, () => unknown, number, string, Record<string, string>?]>) {
      const res = await extend(key, body(), headers);
      assert.equal([res.status, res.body.error], [status, error], what);
    }
    assert.is(await balance(tk, key), before);
    assert.is(await rows(tk), 0);
    assert.is(
      (
        await tk.kernel.database.kysely
          .selectFrom("retained_blobs" as any)
          .selectAll()
          .execute()
      ).length,
      0,
      "no upload kept",
    );

    // A custom instrumental upload needs no prompt.
    const k = newKey();
    const params = { continue_at: 2, mode: "custom", style: "ambient", title: "Drift", instrumental: true };
    const res = await extend(key, form(params, { bytes: wav, name: "Drift.WAV" }), { "idempotency-key": k });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.operation, "upload_extend");
    assert.is(res.body.model, "V5_5");
    const done = await waitFor(tk, key, res.body.job_id);
    assert.is(done.body.status, "complete");
    const call = script.calls.at(-1)!;
    assert.equal(call.request.source.arrangement, null);
    assert.is(Math.round(call.request.source.seconds), 4);
    assert.equal(
      Buffer.from(call.request.source.bytes).equals(Buffer.from(wav)),
      true,
      "the provider gets the upload as sent",
    );
    const replayed = await extend(key, form(params, { bytes: wav, name: "other-name.wav" }), { "idempotency-key": k });
    assert.is(replayed.status, 200);
    assert.is(replayed.body.deduplicated, true);
    const changed = new Uint8Array(wav);
    changed[100] = changed[100]! ^ 1;
    const conflict = await extend(key, form(params, { bytes: changed, name: "Drift.wav" }), { "idempotency-key": k });
    assert.is(conflict.status, 409);
    assert.is(await balance(tk, key), before - 11);
    // The upload is kept for the job, then swept.
    const uploads = await tk.kernel.database.kysely
      .selectFrom("retained_blobs" as any)
      .select(["key"])
      .execute();
    assert.is(uploads.length, 1);
    assert.match((uploads[0] as any).key, /^music\/private\/uploads\//);
    tk.clock.advance(3 * 24 * 3600 * 1000);
    await tk.kernel.retention.sweep();
    assert.is(await tk.kernel.blobs.has((uploads[0] as any).key), false);
  });

  t.run();
}

const limits = suite("music upload limits");
limits("an upload above 95,000,000 bytes is a 413 before it is read", async () => {
  const engine = createMediaEngine();
  try {
    await uploadedSource(engine, { filename: "big.wav", contentType: "audio/wav", bytes: new Uint8Array(95_000_001) });
    assert.unreachable();
  } catch (err) {
    assert.instance(err, ApiError);
    assert.is((err as ApiError).status, 413);
    assert.is((err as ApiError).message, MUSIC_ERRORS.uploadTooLarge);
  } finally {
    await engine.close();
  }
});
limits.run();
