// The sandbox music provider: real, listenable music rendered procedurally (synth.ts: a seeded arrangement
// from the prompt or style, synthesized in plain JS), encoded to MP3 with the media engine, with a cover
// drawn from the same arrangement. Two variations per request; the same request gives the same bytes.
// An extension keeps the source up to `continue_at` and continues it on the source's own bar grid, tempo,
// key and sounds when the source is one of ours (its arrangement came back with it), or on the upload's
// estimated beat otherwise, crossfaded at the joint.
//
// Both operations submit and poll as a remote service would (lib/sandbox-upstream.ts): the request is
// recorded at submit (an extension's with its source audio), polls report progress by the time elapsed, and
// the tracks are rendered in the poll that comes once SANDBOX_LATENCY_MS has passed.
//
// Markers (docs/architecture.md "Sandbox providers") in the prompt, lyrics, style or title, checked a quarter of the way
// through the latency: `[sandbox:fail]` is an upstream failure (`provider_down`), `[sandbox:unsafe]` a
// content refusal (`safety_filter`), `[sandbox:reject]` an unusable input (`input_rejected`).
// `[sandbox:timeout]` is work that never finishes: polls answer pending until the job's deadline cancels it
// (`timeout`). Markers are never sung or shown in titles.
import { createHash } from "node:crypto";
import {
  type CapabilityHost,
  definePlugin,
  hasMarker,
  inThread,
  type MediaEngine,
  type MusicExtensionRequest,
  type MusicGenerationRequest,
  type MusicProvider,
  MusicProviderError,
  type MusicProviders,
  type MusicTrack,
  NO_METADATA_ARGS,
  type SandboxRequestStore,
  sandboxConfig,
  sandboxUpstream,
  withoutMarkers,
  withVips,
} from "mediagate/plugin";
import {
  type Arrangement,
  arrangementForUpload,
  continuation,
  estimateTempo,
  fromPcm,
  JOIN_LEAD,
  join,
  newArrangement,
  parseArrangement,
  SAMPLE_RATE,
  type Song,
  type Stereo,
  wav,
} from "./synth.ts";

const VARIATIONS = 2;
const MP3_KBPS = 192;
const COVER_SIZE = 512;

/** The texts of a request that may carry markers. */
const markedTexts = (req: { prompt: string; style: string | null; title: string | null }) =>
  [req.prompt, req.style, req.title].filter(Boolean).join("\n");

/**
 * Throws the failure a marker asks for; the order makes a text with several markers deterministic (a
 * failure marker wins over `[sandbox:timeout]`, which `hangs` answers: it is checked after this).
 */
function checkMarkers(req: { prompt: string; style: string | null; title: string | null }): void {
  const all = markedTexts(req);
  if (hasMarker(all, "fail")) throw new MusicProviderError("provider_down", "sandbox: failure requested");
  if (hasMarker(all, "unsafe")) throw new MusicProviderError("safety_filter", "sandbox: unsafe content requested");
  if (hasMarker(all, "reject")) throw new MusicProviderError("input_rejected", "sandbox: rejection requested");
}

/** `[sandbox:timeout]`: the upstream never finishes. */
const hangs = (req: { prompt: string; style: string | null; title: string | null }) =>
  hasMarker(markedTexts(req), "timeout");

const seedOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 24);

/** A title from a description: its first few words, in title case (what a simple-mode song is called). */
export function titleFrom(text: string): string {
  const words = withoutMarkers(text)
    .replace(/[^\p{L}\p{N}'\s-]/gu, " ")
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, 4);
  if (words.length === 0) return "Untitled";
  return words
    .map((w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase())
    .join(" ")
    .slice(0, 80);
}

async function encodeMp3(
  engine: MediaEngine,
  audio: Stereo,
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array; seconds: number }> {
  const out = await engine.run(
    // bitexact and no metadata: the same request gives the same bytes, and no tool names ride along.
    [
      "-i",
      "song.wav",
      ...NO_METADATA_ARGS,
      "-flags:a",
      "+bitexact",
      "-c:a",
      "libmp3lame",
      "-b:a",
      `${MP3_KBPS}k`,
      "-ar",
      String(SAMPLE_RATE),
      "-ac",
      "2",
      "song.mp3",
    ],
    {
      inputs: { "song.wav": wav(audio) },
      outputs: ["song.mp3"],
      signal,
      durationSeconds: audio.left.length / SAMPLE_RATE,
    },
  );
  const bytes = out["song.mp3"]!;
  // The duration the partner sees is measured from the file, not taken from the plan.
  const probe = await engine.probe(bytes, "song.mp3", { signal });
  return { bytes, seconds: Math.round(probe.durationSeconds * 100) / 100 };
}

/** The source up to the joint (what comes after is replaced, so an 8-minute upload is not decoded whole). */
async function decodeSource(
  engine: MediaEngine,
  source: MusicExtensionRequest["source"],
  until: number,
  signal: AbortSignal,
): Promise<Stereo> {
  const name = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(source.name) ? source.name : "source.bin";
  try {
    const out = await engine.run(
      [
        "-i",
        name,
        "-vn",
        "-t",
        until.toFixed(3),
        "-f",
        "s16le",
        "-acodec",
        "pcm_s16le",
        "-ar",
        String(SAMPLE_RATE),
        "-ac",
        "2",
        "source.pcm",
      ],
      { inputs: { [name]: source.bytes }, outputs: ["source.pcm"], signal },
    );
    return fromPcm(out["source.pcm"]!);
  } catch (err) {
    if (signal.aborted) throw err;
    // The plugin measured it before the charge; a file that still cannot be decoded is the input's fault.
    throw new MusicProviderError(
      "input_rejected",
      `sandbox: the source could not be decoded: ${(err as Error).message}`,
    );
  }
}

/**
 * Cover art from the arrangement: a two-colour gradient in the key's hue with one ring per beat of a bar
 * and the tempo's pulse, so tracks of one song look related and the variations differ.
 */
export async function coverArt(a: Arrangement, variation: number): Promise<Uint8Array> {
  const n = COVER_SIZE;
  const px = new Uint8Array(n * n * 3);
  const hue = (a.key / 12 + variation * 0.17) % 1;
  const hsl = (h: number, s: number, l: number) => {
    const f = (k: number) => {
      const x = (k + h * 12) % 12;
      return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(x - 3, 9 - x, 1));
    };
    return [f(0), f(8), f(4)].map((c) => Math.round(c * 255));
  };
  const dark = a.scale === "minor" || a.scale === "dorian";
  const c1 = hsl(hue, 0.6, dark ? 0.18 : 0.35);
  const c2 = hsl((hue + 0.12) % 1, 0.75, dark ? 0.45 : 0.7);
  const rings = 4 + (Math.round(a.bpm) % 5);
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const g = (x + y) / (2 * n);
      const r = Math.hypot(x - n / 2, y - n / 2) / (n / 2);
      const ring = r < 0.9 && Math.abs(Math.sin(r * rings * Math.PI)) > 0.92 ? 0.35 : 0;
      const o = (y * n + x) * 3;
      for (let k = 0; k < 3; k++)
        px[o + k] = Math.min(255, Math.round(c1[k]! * (1 - g) + c2[k]! * g + ring * 255 * (1 - r)));
    }
  }
  return withVips("failed", (vips, track) => {
    const img = track(vips.Image.newFromMemory(px, n, n, 3, vips.BandFormat.uchar));
    return img.writeToBuffer(".png", { compression: 9 });
  });
}

async function track(
  engine: MediaEngine,
  audio: Stereo,
  a: Arrangement,
  variation: number,
  title: string,
  signal: AbortSignal,
): Promise<MusicTrack> {
  const mp3 = await encodeMp3(engine, audio, signal);
  return {
    audio: mp3.bytes,
    cover: await coverArt(a, variation),
    coverMimeType: "image/png",
    title,
    duration: mp3.seconds,
    arrangement: a,
  };
}

/**
 * Renders in a worker thread, in a place of the media pool: a song takes about a CPU-second per variation,
 * which a loaded machine stretches past the queue's 10 s heartbeat when it runs on the event loop (lib/threads.ts).
 */
function renderInThread(
  engine: MediaEngine,
  song: Song,
  from: number,
  to: number,
  signal: AbortSignal,
): Promise<Stereo> {
  return engine.pool.run(() => inThread<Stereo>(SYNTH_MODULE, "renderRange", [song, from, to], signal), signal);
}
const SYNTH_MODULE = new URL("./synth.ts", import.meta.url);

export interface SandboxMusicOptions {
  latencyMs: number;
  media: () => MediaEngine;
  /** Where submitted requests are kept (the plugin's blob folder); default: this process's memory. */
  store?: SandboxRequestStore;
}

/** The wait fills the first half of the progress bar; each variation rendered, a quarter. */
const WAIT_SHARE = 0.5;

export function sandboxMusicProvider(options: SandboxMusicOptions): MusicProviders {
  // One service, two operations: both are `music-sandbox` (its work ids are unique across them).
  const upstream = {
    name: "music-sandbox",
    latencyMs: options.latencyMs,
    ...(options.store ? { store: options.store } : {}),
    waitShare: WAIT_SHARE,
    check: checkMarkers,
    hangs,
  };
  const provider: MusicProvider = {
    generate: sandboxUpstream<MusicGenerationRequest, MusicTrack[]>({
      ...upstream,
      async render(req, { signal, onProgress }) {
        const title = req.title ? withoutMarkers(req.title) || "Untitled" : titleFrom(req.prompt);
        // Simple mode writes its own words: the description, sung.
        const lyrics = withoutMarkers(req.prompt);
        const seed = seedOf({
          op: "generate",
          model: req.model,
          prompt: req.prompt,
          style: req.style,
          title: req.title,
          instrumental: req.instrumental,
        });
        const tracks: MusicTrack[] = [];
        for (let v = 0; v < VARIATIONS; v++) {
          const a = newArrangement({
            seed,
            variation: v,
            text: `${req.style ?? ""} ${req.prompt}`,
            instrumental: req.instrumental,
            hook: title,
          });
          const engine = options.media();
          const audio = await renderInThread(engine, { arrangement: a, lyrics }, 0, a.seconds, signal);
          tracks.push(await track(engine, audio, a, v, title, signal));
          await onProgress((v + 1) / VARIATIONS);
        }
        return tracks;
      },
    }),

    extend: sandboxUpstream<MusicExtensionRequest, MusicTrack[]>({
      ...upstream,
      async render(req, { signal, onProgress }) {
        const engine = options.media();
        const source = await decodeSource(engine, req.source, req.continueAt + 0.1, signal);
        const own = parseArrangement(req.source.arrangement);
        const title = withoutMarkers(req.title) || req.source.title || titleFrom(req.prompt || req.style || "Extended");
        const lyrics = withoutMarkers(req.prompt);
        const seed = seedOf({
          op: "extend",
          source: createHash("sha256").update(req.source.bytes).digest("hex"),
          controls: { ...req, source: undefined },
        });
        // Uploads are continued on their own beat where one can be heard.
        const tempo = own ? null : estimateTempo(source);
        const tracks: MusicTrack[] = [];
        for (let v = 0; v < VARIATIONS; v++) {
          const a = own
            ? continuation(own, {
                seed,
                variation: v,
                continueAt: req.continueAt,
                instrumental: req.instrumental,
                voice: req.vocalGender,
                hook: req.title,
              })
            : arrangementForUpload({
                seed,
                variation: v,
                text: `${req.style} ${req.prompt}`,
                instrumental: req.instrumental,
                hook: title,
                continueAt: req.continueAt,
                tempo,
                voice: req.vocalGender,
              });
          const next = await renderInThread(
            engine,
            { arrangement: a, lyrics },
            req.continueAt - JOIN_LEAD,
            a.seconds,
            signal,
          );
          tracks.push(await track(engine, join(source, next, req.continueAt, JOIN_LEAD), a, v, title, signal));
          await onProgress((v + 1) / VARIATIONS);
        }
        return tracks;
      },
    }),
  };
  return { provider: () => provider };
}

/** Provides `music.generate` with the sandbox. A real deployment registers its adapter plugin instead. */
export default definePlugin({
  name: "music-sandbox",
  config: sandboxConfig,
  requires: ["media"],
  provides: {
    "music.generate": (host: CapabilityHost) =>
      sandboxMusicProvider({
        latencyMs: sandboxConfig.of(host).latencyMs,
        media: () => host.capability("media"),
        store: host.blobs.scoped("music-sandbox"),
      }),
  },
});
