// The sandbox music provider on both media engines: two distinct, decodable MP3 variations (codec, sample
// rate, channels, bitrate, duration as stated) with PNG covers, the same bytes for the same request, an
// extension of one of ours that keeps the source up to continue_at and goes on in its tempo and key, an
// extension of an upload on its beat, the failure markers, work that never finishes, and abort. The provider
// submits and polls (contracts/upstream.ts); these tests poll it in place (pollToEnd).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  type MusicExtensionRequest,
  type MusicGenerationRequest,
  type MusicProvider,
  MusicProviderError,
  type MusicTrack,
} from "../../contracts/music.ts";
import { createMediaEngine, detectNativeFfmpeg, type MediaEngine, probeImage } from "../../lib/media/index.ts";
import { type InPlace, pollToEnd } from "../../lib/upstream.ts";
import { sandboxMusicProvider, titleFrom } from "../../plugins/music/sandbox.ts";
import { estimateTempo, fromPcm, SAMPLE_RATE, type Stereo, wav } from "../../plugins/music/synth.ts";
import { musicExtension, musicGeneration, ownTrackSource } from "../helpers/music-requests.ts";

const signal = () => new AbortController().signal;
/** A request of test/helpers/music-requests.ts polled in place: a signal of its own, no progress wanted; `o` over it. */
const inPlace = <R>(request: R, o: Partial<InPlace<R>>): InPlace<R> => ({
  ...request,
  signal: signal(),
  onProgress: () => {},
  ...o,
});
const generation = (o: Partial<InPlace<MusicGenerationRequest>> = {}) => inPlace(musicGeneration(), o);
const extension = (source: MusicExtensionRequest["source"], o: Partial<InPlace<MusicExtensionRequest>> = {}) =>
  inPlace(musicExtension(source), o);

async function decode(engine: MediaEngine, bytes: Uint8Array, name = "t.mp3"): Promise<Stereo> {
  const out = await engine.run(
    ["-i", name, "-f", "s16le", "-acodec", "pcm_s16le", "-ar", String(SAMPLE_RATE), "-ac", "2", "o.pcm"],
    { inputs: { [name]: bytes }, outputs: ["o.pcm"] },
  );
  return fromPcm(out["o.pcm"]!);
}

const rms = (x: Float32Array, from = 0, to = x.length) => {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i]! * x[i]!;
  return Math.sqrt(s / Math.max(1, to - from));
};

/** RMS of the difference of two signals over [from, to) samples, best over a few samples of codec delay. */
function diffRms(a: Float32Array, b: Float32Array, from: number, to: number): number {
  let best = Infinity;
  for (let lag = -1200; lag <= 1200; lag += 1) {
    let s = 0;
    for (let i = from; i < to; i += 7) {
      const d = a[i]! - (b[i + lag] ?? 0);
      s += d * d;
    }
    best = Math.min(best, Math.sqrt(s / Math.ceil((to - from) / 7)));
  }
  return best;
}

/** Bitrate of the first MPEG audio frame after any ID3 tag and the encoder's Info frame. */
function mp3Kbps(bytes: Uint8Array): number {
  const rates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  let o = 0;
  for (let frames = 0; frames < 3; frames++) {
    while (o + 4 < bytes.length && !(bytes[o] === 0xff && (bytes[o + 1]! & 0xe0) === 0xe0)) o++;
    const kbps = rates[bytes[o + 2]! >> 4]!;
    const head = Buffer.from(bytes.subarray(o, o + 64)).toString("latin1");
    if (!head.includes("Info") && !head.includes("Xing")) return kbps;
    o += Math.floor((144 * kbps * 1000) / 44100) + ((bytes[o + 2]! >> 1) & 1);
  }
  return 0;
}

/** A click track at `bpm` under a soft tone: recorded music of known tempo, as an upload. */
function clickTrack(seconds: number, bpm: number): Uint8Array {
  const n = Math.round(seconds * SAMPLE_RATE);
  const left = new Float32Array(n);
  const beat = (60 / bpm) * SAMPLE_RATE;
  for (let i = 0; i < n; i++) {
    const inBeat = i % beat;
    left[i] =
      0.1 * Math.sin((2 * Math.PI * 220 * i) / SAMPLE_RATE) +
      (inBeat < 800 ? 0.6 * Math.exp(-inBeat / 150) * Math.sin(i * 0.9) : 0);
  }
  return wav({ left, right: left });
}

const engines: Array<[string, () => MediaEngine]> = [["wasm", () => createMediaEngine({ mode: "wasm" })]];
if (detectNativeFfmpeg()) engines.unshift(["native", () => createMediaEngine({ mode: "native" })]);

for (const [name, make] of engines) {
  const t = suite(`music sandbox on the ${name} engine`);
  let engine: MediaEngine;
  let provider: MusicProvider;
  let song: MusicTrack[];
  t.before(async () => {
    engine = make();
    provider = sandboxMusicProvider({ latencyMs: 0, media: () => engine }).provider("V5_5")!;
  });
  t.after(async () => {
    await engine.close();
  });

  t("two distinct MP3 variations as stated, with covers, progress, and the same bytes again", async () => {
    const progress: number[] = [];
    song = await pollToEnd(provider.generate, generation({ onProgress: (f) => void progress.push(f) }));
    assert.is(song.length, 2);
    // No latency: no wait to report; the render fills the second half, a quarter per variation.
    assert.equal(progress, [0.75, 1]);
    for (const tr of song) {
      const probe = await engine.probe(tr.audio, "t.mp3");
      const audio = probe.streams.find((s) => s.type === "audio")!;
      assert.is(audio.codec, "mp3");
      assert.is(audio.sampleRate, 44100);
      assert.is(audio.channels, 2);
      assert.is(mp3Kbps(tr.audio), 192);
      assert.ok(Math.abs(probe.durationSeconds - tr.duration) < 0.05, `${probe.durationSeconds} vs ${tr.duration}`);
      assert.ok(tr.duration >= 25 && tr.duration <= 50, String(tr.duration));
      assert.is(tr.title, "An Upbeat Summer Pop");
      const cover = await probeImage(tr.cover);
      assert.equal([cover.format, cover.width, cover.height], ["png", 512, 512]);
      const pcm = await decode(engine, tr.audio);
      assert.ok(rms(pcm.left) > 0.05, "music, not silence");
    }
    assert.not.equal(Buffer.from(song[0]!.audio).equals(Buffer.from(song[1]!.audio)), true);
    assert.not.equal(Buffer.from(song[0]!.cover).equals(Buffer.from(song[1]!.cover)), true);
    if (name === "native") {
      const again = await pollToEnd(provider.generate, generation());
      assert.ok(Buffer.from(again[0]!.audio).equals(Buffer.from(song[0]!.audio)), "deterministic");
    }
  });

  t("an instrumental differs from a sung one; a custom title is used as is", async () => {
    const [inst] = await pollToEnd(
      provider.generate,
      generation({ instrumental: true, custom: true, prompt: "", style: "ambient piano", title: "Quiet Rooms" }),
    );
    assert.is(inst!.title, "Quiet Rooms");
    assert.is((inst!.arrangement as any).instruments.lead === "vocal", false);
    assert.is((song[0]!.arrangement as any).instruments.lead, "vocal");
  });

  t("extending one of ours keeps the source up to continue_at and goes on in its tempo and key", async () => {
    const source = song[1]!;
    const continueAt = 12.4;
    const out = await pollToEnd(provider.extend, extension(ownTrackSource(source), { continueAt }));
    assert.is(out.length, 2);
    const src = await decode(engine, source.audio);
    for (const tr of out) {
      assert.ok(tr.duration > continueAt + 15, String(tr.duration));
      assert.is(tr.title, source.title);
      const a = tr.arrangement as any;
      const s = source.arrangement as any;
      assert.equal([a.bpm, a.key, a.scale, a.offset], [s.bpm, s.key, s.scale, s.offset]);
      const ext = await decode(engine, tr.audio);
      const until = Math.round((continueAt - 0.6) * SAMPLE_RATE);
      const from = Math.round(1 * SAMPLE_RATE);
      // Same music up to the joint (two MP3 generations apart), new music after it.
      assert.ok(diffRms(ext.left, src.left, from, until) < 0.25 * rms(src.left, from, until), "kept the source");
      const after = Math.round((continueAt + 2) * SAMPLE_RATE);
      assert.ok(rms(ext.left, after, after + 5 * SAMPLE_RATE) > 0.05, "went on playing");
    }
    assert.not.equal(Buffer.from(out[0]!.audio).equals(Buffer.from(out[1]!.audio)), true);
  });

  t("extending an upload continues it on its beat", async () => {
    const upload = clickTrack(16, 120);
    const tempo = estimateTempo(fromPcm(upload.subarray(44)));
    assert.ok(tempo && Math.abs(tempo.bpm - 120) <= 3, JSON.stringify(tempo));
    const out = await pollToEnd(
      provider.extend,
      extension(
        { bytes: upload, seconds: 16, name: "source.wav", arrangement: null, title: null },
        { continueAt: 8, prompt: "a drum groove", mode: "original" },
      ),
    );
    for (const tr of out) {
      assert.ok(Math.abs((tr.arrangement as any).bpm - 120) <= 3, String((tr.arrangement as any).bpm));
      assert.ok(tr.duration > 8 + 15);
      const ext = await decode(engine, tr.audio);
      const src = fromPcm(upload.subarray(44));
      assert.ok(
        diffRms(ext.left, src.left, SAMPLE_RATE, 7 * SAMPLE_RATE) < 0.25 * rms(src.left, SAMPLE_RATE, 7 * SAMPLE_RATE),
      );
    }
  });

  t.run();
}

const m = suite("music sandbox markers and abort");
m("markers fail with their error codes, as the upstream's failed poll; abort rejects", async () => {
  const provider = sandboxMusicProvider({
    latencyMs: 0,
    media: () => assert.unreachable("no work for a refused request") as never,
  }).provider("V5")!;
  for (const [marker, code] of [
    ["[sandbox:fail]", "provider_down"],
    ["[sandbox:unsafe]", "safety_filter"],
    ["[sandbox:reject]", "input_rejected"],
  ] as const) {
    for (const where of ["prompt", "style", "title"] as const) {
      try {
        await pollToEnd(provider.generate, generation({ [where]: `a song ${marker}` }));
        assert.unreachable();
      } catch (err) {
        assert.instance(err, MusicProviderError);
        assert.is((err as MusicProviderError).code, code);
      }
      try {
        await pollToEnd(
          provider.extend,
          extension(
            { bytes: new Uint8Array(8), seconds: 20, name: "source.mp3", arrangement: null, title: null },
            { [where]: `more ${marker}` },
          ),
        );
        assert.unreachable();
      } catch (err) {
        assert.is((err as MusicProviderError).code, code);
      }
    }
  }
  // A failure marker wins over the time-out marker.
  await pollToEnd(provider.generate, generation({ prompt: "[sandbox:timeout] [sandbox:reject]" })).then(
    () => assert.unreachable(),
    (err) => assert.is((err as MusicProviderError).code, "input_rejected"),
  );
  const slow = sandboxMusicProvider({ latencyMs: 10_000, media: () => assert.unreachable() as never }).provider("V5")!;
  const ac = new AbortController();
  const pending = pollToEnd(slow.generate, generation({ signal: ac.signal }));
  ac.abort(new Error("gone"));
  await pending.then(
    () => assert.unreachable(),
    (err) => assert.is((err as Error).message, "gone"),
  );
  assert.is(titleFrom("[sandbox:fail] hello, world of sound!"), "Hello World Of Sound");
});

m("[sandbox:timeout]: the work never finishes, polls answer pending until it is cancelled", async () => {
  const provider = sandboxMusicProvider({
    latencyMs: 0,
    media: () => assert.unreachable("a hung request renders nothing") as never,
  }).provider("V5")!;
  const options = { signal: signal(), onProgress: () => {} };
  for (const where of ["prompt", "style", "title"] as const) {
    const { signal: _s, onProgress: _p, ...request } = generation({ [where]: `a song [sandbox:timeout]` });
    const handle = await provider.generate.submit(request, { idempotencyKey: `hang-${where}`, signal: options.signal });
    for (let i = 0; i < 3; i++) {
      const polled = await provider.generate.poll(handle, options);
      assert.is(polled.state, "pending");
      assert.ok(polled.state === "pending" && polled.pollAfterMs! >= 1000, "no busy polling");
    }
    await provider.generate.cancel!(handle);
    const after = await provider.generate.poll(handle, options);
    assert.is(after.state, "failed", "cancelled work is gone");
  }
});
m.run();
