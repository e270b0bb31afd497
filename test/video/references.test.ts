// Reference media of POST /generate-video (plugins/video/references.ts), against a local HTTP server: the
// spec's errors for every way a download or a file can fail and the measured seconds (before the charge: a
// probe, never an encode), and what the job's normalization makes (on every engine this machine has).
// Clips are small and short because ffmpeg.wasm is slow.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ApiError } from "../../lib/api-error.ts";
import { mp4Boxes } from "../../lib/formats/index.ts";
import {
  createMediaEngine,
  firstAudio,
  firstVideo,
  generateTestVideo,
  type MediaEngine,
  mp4MetadataCategories,
} from "../../lib/media/index.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import { VIDEO_ERRORS } from "../../plugins/video/errors.ts";
import {
  MAX_REFERENCE_AUDIO_BYTES,
  MAX_REFERENCE_VIDEO_BYTES,
  measureReferenceAudio,
  measureReferenceVideos,
  normalizeReference,
  type ReferenceDeps,
  ReferenceEncodeError,
  type ReferenceRules,
} from "../../plugins/video/references.ts";
import { rejection } from "../helpers/assert.ts";
import { ENGINE_MODES, fixture } from "../media/util.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round2 = (n: number) => Math.round(n * 100) / 100;
const VIDEO_RULES = { minSeconds: 2, maxSeconds: 15, totalSeconds: 15 };
const AUDIO_RULES = { minSeconds: 2, maxSeconds: 30, totalSeconds: 30 };

// ---------------------------------------------------------------------------------------------------------
// Fixtures, made once on the fastest engine here.

const maker = createMediaEngine({ mode: ENGINE_MODES[0]! });
const convert = async (args: string[], input: Uint8Array, inName: string, out: string) =>
  (await maker.run(["-i", inName, ...args, out], { inputs: { [inName]: input }, outputs: [out], timeoutMs: 60_000 }))[
    out
  ]!;

const clip = await generateTestVideo(maker, { width: 1000, height: 800, seconds: 2.5, fps: 50, font: false }); // 50 fps, with sound
const silent = await convert(["-an", "-c", "copy"], clip, "in.mp4", "silent.mp4");
const landscape = await generateTestVideo(maker, { width: 1440, height: 800, seconds: 2, font: false }); // 25 fps
// Stored 1440x800 and shown upright as 800x1440, like a phone's portrait video.
const rotated = await convert(["-c", "copy", "-metadata:s:v:0", "rotate=90"], landscape, "in.mp4", "rotated.mp4");
const short = await generateTestVideo(maker, { width: 320, height: 180, seconds: 1, font: false });
const long = await generateTestVideo(maker, { width: 160, height: 90, seconds: 16, fps: 10, font: false });
const song = fixture("sample1.mp3"); // about 122 s
const mp3 = await convert(["-t", "5", "-c", "copy"], song, "in.mp3", "five.mp3");
const wav = await convert(["-t", "3", "-c:a", "pcm_s16le"], song, "in.mp3", "three.wav");
const m4a = await convert(["-t", "3", "-c:a", "aac"], song, "in.mp3", "three.m4a");
const shortMp3 = await convert(["-t", "1", "-c", "copy"], song, "in.mp3", "one.mp3");
// Both probe as the full 2.5 s. Cut short (moov in front, the mdat cut after its first bytes): refused on its
// boxes before the charge. Frames zeroed (every box whole, the pictures noise): the checks pass, the job's
// encode fails.
const faststart = await convert(["-c", "copy", "-movflags", "+faststart"], clip, "in.mp4", "fs.mp4");
const mdatOf = (bytes: Uint8Array) => [...mp4Boxes(bytes)].find((b) => b.type === "mdat")!;
const cutShort = faststart.subarray(0, mdatOf(faststart).start + 64);
const zeroed = new Uint8Array(clip);
zeroed.fill(0, mdatOf(clip).body, mdatOf(clip).end);
const cmov = fixture("c.mov"); // real QuickTime file: 2750x1834, ~59 fps, no sound, 5.2 s
const seconds = async (bytes: Uint8Array) => round2((await maker.probe(bytes)).durationSeconds);
const measured = {
  clip: await seconds(clip),
  silent: await seconds(silent),
  rotated: await seconds(rotated),
  short: await seconds(short),
  long: await seconds(long),
  song: await seconds(song),
  mp3: await seconds(mp3),
  wav: await seconds(wav),
  m4a: await seconds(m4a),
  cmov: await seconds(cmov),
};
await maker.close();

// ---------------------------------------------------------------------------------------------------------
// The server.

const FILES: Record<string, Uint8Array> = {
  "/clip.mp4": clip,
  "/silent.mp4": silent,
  "/rotated.mp4": rotated,
  "/short.mp4": short,
  "/long.mp4": long,
  "/c.mov": cmov,
  "/song.mp3": song,
  "/five.mp3": mp3,
  "/three.wav": wav,
  "/three.m4a": m4a,
  "/one.mp3": shortMp3,
  "/notes.txt": new TextEncoder().encode("just some words, not a video\n".repeat(50)),
  "/truncated.mp4": clip.subarray(0, 2000),
  "/cut-short.mp4": cutShort,
  "/zeroed.mp4": zeroed,
};
const closedBySlowClient: string[] = [];

function routes(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? "/").split("?")[0]!;
  const file = FILES[path];
  if (file) {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.byteLength) });
    res.end(file);
    return;
  }
  switch (path) {
    case "/moved.mp4":
      res.writeHead(302, { location: "/clip.mp4" });
      res.end();
      return;
    case "/declared-huge.mp4":
      // Declares one byte more than allowed: refused on the header, before the body.
      res.writeHead(200, { "content-length": String(MAX_REFERENCE_VIDEO_BYTES + 1) });
      res.write(clip.subarray(0, 1000));
      return;
    case "/streamed-huge.mp3": {
      // No Content-Length: the cap has to hold while the body streams.
      res.writeHead(200, { "content-type": "audio/mpeg" });
      const chunk = new Uint8Array(1 << 20);
      let sent = 0;
      const pump = () => {
        while (sent <= MAX_REFERENCE_AUDIO_BYTES && !res.destroyed) {
          sent += chunk.byteLength;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
      return;
    }
    case "/slow.mp4":
      // Never answers; records when the client gives up.
      req.socket.once("close", () => closedBySlowClient.push(path));
      return;
    default:
      res.writeHead(404);
      res.end("not found");
  }
}

const server = createServer(routes);
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as AddressInfo).port;
const base = `http://127.0.0.1:${port}`;
// A port nothing listens on: a refused connection.
const closedPort = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = (s.address() as AddressInfo).port;
    s.close(() => resolve(p));
  });
});

const guard = createOutboundGuard({ allowPrivate: true });
const publicGuard = createOutboundGuard();

async function apiError(p: Promise<unknown>): Promise<ApiError> {
  const err = await rejection(p);
  assert.instance(err, ApiError, `expected an ApiError, got ${String(err)}`);
  return err as ApiError;
}

/** What the request does (measure) and then the job (normalize each file), as one call. */
async function prepareAndNormalize(
  kind: "video" | "audio",
  urls: string[],
  rules: ReferenceRules,
  deps: ReferenceDeps,
) {
  const measured = await (kind === "video" ? measureReferenceVideos : measureReferenceAudio)(
    urls,
    rules,
    "beta-2-5",
    deps,
  );
  return Promise.all(
    measured.map(async (m) => ({ ...m, bytes: await normalizeReference(kind, m.bytes, deps.engine) })),
  );
}

// ---------------------------------------------------------------------------------------------------------
// Downloads and checks: the engine only probes here, so one engine is enough.

{
  const t = suite("reference media: downloads and checks");
  let engine: MediaEngine;
  let deps: ReferenceDeps;
  t.before(() => {
    engine = createMediaEngine({ mode: ENGINE_MODES[0]! });
    deps = { guard, engine };
  });
  t.after(async () => {
    await engine.close();
  });

  t("a URL the deployment's guard refuses (loopback on a default guard) is 400 Invalid reference ... URL", async () => {
    const strict = { ...deps, guard: publicGuard };
    for (const url of [`https://127.0.0.1:${port}/clip.mp4`, `${base}/clip.mp4`]) {
      const v = await apiError(measureReferenceVideos([url], VIDEO_RULES, "beta-2-5", strict));
      assert.is(v.status, 400);
      assert.is(v.message, VIDEO_ERRORS.invalidReferenceVideoUrl(url));
      const a = await apiError(
        measureReferenceAudio([url.replace("clip.mp4", "five.mp3")], AUDIO_RULES, "beta-2-5", strict),
      );
      assert.is(a.status, 400);
      assert.is(a.message, VIDEO_ERRORS.invalidReferenceAudioUrl(url.replace("clip.mp4", "five.mp3")));
    }
  });

  t("an HTTP error or a redirect (never followed) is 400 with the status", async () => {
    const missing = await apiError(measureReferenceVideos([`${base}/missing.mp4`], VIDEO_RULES, "beta-2-5", deps));
    assert.is(missing.status, 400);
    assert.is(missing.message, VIDEO_ERRORS.referenceVideoDownload(404));
    assert.is(missing.message, "A reference video could not be downloaded (HTTP 404).");
    const moved = await apiError(measureReferenceVideos([`${base}/moved.mp4`], VIDEO_RULES, "beta-2-5", deps));
    assert.is(moved.message, VIDEO_ERRORS.referenceVideoDownload(302));
    const audio = await apiError(measureReferenceAudio([`${base}/missing.mp3`], AUDIO_RULES, "beta-2-5", deps));
    assert.is(audio.message, VIDEO_ERRORS.referenceAudioDownload(404));
  });

  t("no HTTP status at all: a refused connection reads as 502, a time-out as 504", async () => {
    const refused = await apiError(
      measureReferenceVideos([`http://127.0.0.1:${closedPort}/clip.mp4`], VIDEO_RULES, "beta-2-5", deps),
    );
    assert.is(refused.status, 400);
    assert.is(refused.message, VIDEO_ERRORS.referenceVideoDownload(502));
    const slow = await apiError(
      measureReferenceVideos([`${base}/slow.mp4`], VIDEO_RULES, "beta-2-5", { ...deps, downloadTimeoutMs: 300 }),
    );
    assert.is(slow.status, 400);
    assert.is(slow.message, VIDEO_ERRORS.referenceVideoDownload(504));
  });

  t("too large is 413, whether declared (Content-Length) or streamed", async () => {
    const declared = await apiError(
      measureReferenceVideos([`${base}/declared-huge.mp4`], VIDEO_RULES, "beta-2-5", deps),
    );
    assert.is(declared.status, 413);
    assert.is(declared.message, "A reference video is too large (max 95 MB).");
    const streamed = await apiError(
      measureReferenceAudio([`${base}/streamed-huge.mp3`], AUDIO_RULES, "beta-2-5", deps),
    );
    assert.is(streamed.status, 413);
    assert.is(streamed.message, VIDEO_ERRORS.referenceAudioTooLarge);
  });

  t("what is not an MP4/MOV with a picture (or MP3/WAV/M4A with sound) is 400 Could not prepare ...", async () => {
    for (const path of ["/notes.txt", "/five.mp3", "/truncated.mp4", "/cut-short.mp4"]) {
      const err = await apiError(measureReferenceVideos([`${base}${path}`], VIDEO_RULES, "beta-2-5", deps));
      assert.is(err.status, 400, path);
      assert.is(err.message, VIDEO_ERRORS.referenceVideoUnusable, path);
    }
    for (const path of ["/notes.txt", "/clip.mp4"]) {
      const err = await apiError(measureReferenceAudio([`${base}${path}`], AUDIO_RULES, "beta-2-5", deps));
      assert.is(err.status, 400, path);
      assert.is(err.message, VIDEO_ERRORS.referenceAudioUnusable, path);
    }
  });

  t("each clip must last between the model's bounds; the text names the measured seconds", async () => {
    const tooShort = await apiError(measureReferenceVideos([`${base}/short.mp4`], VIDEO_RULES, "beta-2-direct", deps));
    assert.is(tooShort.status, 400);
    assert.is(tooShort.message, VIDEO_ERRORS.referenceVideoLength(2, 15, measured.short));
    assert.ok(measured.short >= 0.9 && measured.short < 1.1, String(measured.short));
    const tooLong = await apiError(
      measureReferenceVideos([`${base}/clip.mp4`, `${base}/long.mp4`], VIDEO_RULES, "beta-2-direct", deps),
    );
    assert.is(tooLong.message, VIDEO_ERRORS.referenceVideoLength(2, 15, measured.long));
    assert.match(tooLong.message, /^Reference videos must be between 2 and 15 seconds \(yours is 16(\.\d{1,2})?s\)\.$/);
    const song = await apiError(measureReferenceAudio([`${base}/song.mp3`], AUDIO_RULES, "beta-2-5", deps));
    assert.is(song.message, VIDEO_ERRORS.referenceAudioLength(2, 30, measured.song));
    assert.is(song.message, "Reference audio must be between 2 and 30 seconds (yours is 122.12s).");
    const oneSecond = await apiError(measureReferenceAudio([`${base}/one.mp3`], AUDIO_RULES, "beta-2-5", deps));
    assert.match(oneSecond.message, /^Reference audio must be between 2 and 30 seconds \(yours is 1(\.\d{1,2})?s\)\.$/);
  });

  t("the clips together must stay within the model's total", async () => {
    const rules = { minSeconds: 2, maxSeconds: 15, totalSeconds: 4 };
    const err = await apiError(
      measureReferenceVideos([`${base}/clip.mp4`, `${base}/silent.mp4`], rules, "beta-2-direct", deps),
    );
    assert.is(err.status, 400);
    assert.is(
      err.message,
      VIDEO_ERRORS.referenceVideosTotal(round2(measured.clip + measured.silent), "beta-2-direct", 4),
    );
    const audio = await apiError(
      measureReferenceAudio(
        [`${base}/three.wav`, `${base}/three.m4a`],
        { ...AUDIO_RULES, totalSeconds: 5 },
        "beta-2-5",
        deps,
      ),
    );
    assert.is(audio.message, VIDEO_ERRORS.referenceAudioTotal(round2(measured.wav + measured.m4a), "beta-2-5", 5));
  });

  t("the first failure stops the other downloads of the request", async () => {
    closedBySlowClient.length = 0;
    const err = await apiError(
      measureReferenceVideos([`${base}/slow.mp4`, `${base}/missing.mp4`], VIDEO_RULES, "beta-2-5", {
        ...deps,
        downloadTimeoutMs: 60_000,
      }),
    );
    assert.is(err.message, VIDEO_ERRORS.referenceVideoDownload(404));
    for (let i = 0; i < 50 && closedBySlowClient.length === 0; i++) await sleep(20);
    assert.equal(closedBySlowClient, ["/slow.mp4"]);
  });

  t("the request's own cancellation passes through, not as a 400", async () => {
    const ac = new AbortController();
    const p = measureReferenceVideos([`${base}/slow.mp4`], VIDEO_RULES, "beta-2-5", {
      ...deps,
      signal: ac.signal,
      downloadTimeoutMs: 60_000,
    });
    setTimeout(() => ac.abort(), 50);
    const err = await rejection(p);
    assert.not.instance(err, ApiError);
  });

  t(
    "before the charge the engine only probes: no encode, whatever the pool holds; the file is kept as downloaded",
    async () => {
      // An engine whose every run (an encode) fails: the checks must not need one (issue 36 item 9).
      let runs = 0;
      const probeOnly: MediaEngine = Object.assign(Object.create(engine) as MediaEngine, {
        run: async () => {
          runs++;
          throw new Error("no encode before the charge");
        },
      });
      const [v] = await measureReferenceVideos([`${base}/clip.mp4`], VIDEO_RULES, "beta-2-5", {
        ...deps,
        engine: probeOnly,
      });
      assert.is(v!.seconds, measured.clip);
      assert.equal(v!.bytes, clip);
      const [a] = await measureReferenceAudio([`${base}/five.mp3`], AUDIO_RULES, "beta-2-5", {
        ...deps,
        engine: probeOnly,
      });
      assert.is(a!.seconds, measured.mp3);
      assert.equal(a!.bytes, mp3);
      assert.is(runs, 0);
    },
  );

  t("no URLs: nothing is fetched", async () => {
    assert.equal(await measureReferenceVideos([], VIDEO_RULES, "beta-2-5", { ...deps, guard: publicGuard }), []);
    assert.equal(await measureReferenceAudio([], AUDIO_RULES, "beta-2-5", { ...deps, guard: publicGuard }), []);
  });

  t.run();
}

// ---------------------------------------------------------------------------------------------------------
// Normalization, on every engine.

function topLevelBoxes(bytes: Uint8Array): string[] {
  return [...mp4Boxes(bytes)].map((b) => b.type);
}

for (const mode of ENGINE_MODES) {
  const t = suite(`reference media: normalization (${mode})`);
  let engine: MediaEngine;
  let deps: ReferenceDeps;
  t.before(() => {
    engine = createMediaEngine({ mode });
    deps = { guard, engine };
  });
  t.after(async () => {
    await engine.close();
  });

  t("videos become H.264/AAC MP4s: short edge at most 720, 30 fps, sound kept, moov first, no metadata", async () => {
    const urls = [`${base}/clip.mp4`, `${base}/silent.mp4`, `${base}/rotated.mp4`];
    const out = await prepareAndNormalize("video", urls, VIDEO_RULES, deps);
    assert.is(out.length, 3);
    assert.equal(
      out.map((m) => m.url),
      urls,
    );

    const [withSound, noSound, portrait] = await Promise.all(out.map((m) => engine.probe(m.bytes, "ref.mp4")));
    assert.is(withSound!.formatName, "mov,mp4,m4a,3gp,3g2,mj2");
    const v = firstVideo(withSound!)!;
    assert.is(v.codec, "h264");
    assert.equal([v.width, v.height], [900, 720]);
    assert.is(v.fps, 30); // 50 fps in
    const a = firstAudio(withSound!)!;
    assert.is(a.codec, "aac");
    assert.is(a.sampleRate, 48000);
    assert.is(a.channels, 2);
    assert.is(out[0]!.seconds, measured.clip);
    assert.ok(Math.abs(withSound!.durationSeconds - measured.clip) < 0.1, String(withSound!.durationSeconds));

    assert.is(firstAudio(noSound!), undefined);
    assert.is(firstVideo(noSound!)!.codec, "h264");

    // Upright, 720 on the short edge, and no rotation left to apply.
    const p = firstVideo(portrait!)!;
    assert.equal([p.width, p.height], [720, 1296]);
    assert.is(p.fps, 30); // 25 fps in
    assert.is(p.rotation, undefined);
    assert.is(out[2]!.seconds, measured.rotated);

    for (const m of out) {
      const boxes = topLevelBoxes(m.bytes);
      assert.is(boxes[0], "ftyp");
      assert.ok(boxes.indexOf("moov") < boxes.indexOf("mdat"), boxes.join(","));
      assert.equal(mp4MetadataCategories(m.bytes), []);
      assert.not.ok(new TextDecoder("latin1").decode(m.bytes).includes("Lavf"), "no muxer tag");
    }
  });

  t("a small clip is never upscaled", async () => {
    const [m] = await prepareAndNormalize(
      "video",
      [`${base}/short.mp4`],
      { minSeconds: 0.5, maxSeconds: 15, totalSeconds: 15 },
      deps,
    );
    const v = firstVideo(await engine.probe(m!.bytes, "ref.mp4"))!;
    assert.equal([v.width, v.height], [320, 180]);
  });

  if (mode === "native") {
    // A real QuickTime file at 2750x1834 and ~59 fps: too heavy for the wasm engine in a test.
    t("a real-world MOV (ftyp qt) is accepted and normalized", async () => {
      const [m] = await prepareAndNormalize("video", [`${base}/c.mov`], VIDEO_RULES, deps);
      assert.is(m!.seconds, measured.cmov);
      const p = await engine.probe(m!.bytes, "ref.mp4");
      const v = firstVideo(p)!;
      assert.is(v.codec, "h264");
      assert.is(v.height, 720);
      assert.ok(Math.abs(v.width! - 1080) <= 2 && v.width! % 2 === 0, String(v.width));
      assert.is(v.fps, 30);
      assert.is(firstAudio(p), undefined);
    });
  }

  t(
    "a whole file whose frames do not decode passes the checks and fails the job's encode (ReferenceEncodeError)",
    async () => {
      const [m] = await measureReferenceVideos([`${base}/zeroed.mp4`], VIDEO_RULES, "beta-2-5", deps);
      assert.is(m!.seconds, measured.clip);
      const err = await rejection(normalizeReference("video", m!.bytes, engine));
      assert.instance(err, ReferenceEncodeError, String(err));
    },
  );

  t("MP3, WAV and M4A become MP3 (44.1 kHz stereo) without tags; seconds are measured", async () => {
    const urls = [`${base}/five.mp3`, `${base}/three.wav`, `${base}/three.m4a`];
    const out = await prepareAndNormalize("audio", urls, { minSeconds: 2, maxSeconds: 15, totalSeconds: 15 }, deps);
    assert.equal(
      out.map((m) => m.seconds),
      [measured.mp3, measured.wav, measured.m4a],
    );
    assert.ok(Math.abs(measured.mp3 - 5) < 0.1 && Math.abs(measured.wav - 3) < 0.1, `${measured.mp3} ${measured.wav}`);
    for (const m of out) {
      const p = await engine.probe(m.bytes, "ref.mp3");
      assert.is(p.formatName, "mp3");
      const a = firstAudio(p)!;
      assert.is(a.codec, "mp3");
      assert.is(a.sampleRate, 44100);
      assert.is(a.channels, 2);
      assert.is(firstVideo(p), undefined);
      assert.ok(Math.abs(p.durationSeconds - m.seconds) < 0.15, `${p.durationSeconds} vs ${m.seconds}`);
      assert.is.not(new TextDecoder("latin1").decode(m.bytes.subarray(0, 3)), "ID3");
    }
  });

  t.run();
}

// The suites run in the order they were declared, so this one goes last: the server and the guards' pooled
// connections would otherwise keep the process alive.
{
  const t = suite("reference media: teardown");
  t("closes the server and the guards", async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all([guard.close(), publicGuard.close()]);
  });
  t.run();
}
