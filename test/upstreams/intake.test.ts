// Result intake (plugins/upstreams/intake.ts): outputs served from a local HTTP server as an upstream's CDN
// would, read through a real outbound guard (private addresses allowed) and a real media engine. A true file
// comes back as the spec's format at the requested size; a file that lies about itself fails with
// UpstreamOutputError, whose message never holds the URL.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isTransient } from "../../core/plugin-api.ts";
import { PNG_METADATA_CHUNKS, pngChunks, writePng } from "../../lib/formats/index.ts";
import { createMediaEngine, generateTestVideo, type MediaEngine } from "../../lib/media/index.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import {
  type IntakeDeps,
  IntakeDownloadError,
  intakeImage,
  intakeMusic,
  intakeVideo,
  UpstreamOutputError,
} from "../../plugins/upstreams/intake.ts";
import { rejection } from "../helpers/assert.ts";

type Served = { type: string; body: Uint8Array | string; status?: number; location?: string };

const t = suite("upstream result intake");
let server: Server;
let base = "";
let engine: MediaEngine;
let deps: IntakeDeps;
const files: Record<string, Served> = {};
const signal = new AbortController().signal;

async function encode(args: string[], output: string, inputs: Record<string, Uint8Array> = {}) {
  return (await engine.run(args, { inputs, outputs: [output] }))[output]!;
}

const pngSize = (b: Uint8Array) => {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { width: v.getUint32(16), height: v.getUint32(20) };
};

t.before(async () => {
  engine = createMediaEngine();
  deps = { outbound: createOutboundGuard({ allowPrivate: true }), media: engine };
  const picture = (size: string, out: string) =>
    encode(["-f", "lavfi", "-i", `testsrc2=size=${size}:duration=1`, "-frames:v", "1", out], out);
  // A text chunk naming the upstream, as a generator's PNG may carry: it must not survive intake.
  const [head, ...rest] = [...pngChunks(await picture("640x480", "p.png"))];
  const note = new TextEncoder().encode("Comment\0https://upstream.example/outputs/123");
  const png = writePng([head!, { type: "tEXt", data: note }, ...rest]);
  const jpeg = await picture("300x300", "p.jpg");
  const alpha = await encode(
    ["-f", "lavfi", "-i", "color=c=red@0.5:s=200x100:d=1,format=rgba", "-frames:v", "1", "a.png"],
    "a.png",
  );
  const clip = await generateTestVideo(engine, { width: 320, height: 240, seconds: 4, font: false });
  const silentClip = await encode(["-i", "in.mp4", "-an", "-c", "copy", "silent.mp4"], "silent.mp4", {
    "in.mp4": clip,
  });
  const wav = await encode(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-ac", "2", "s.wav"], "s.wav");
  const mp3 = await encode(
    ["-i", "s.wav", "-c:a", "libmp3lame", "-metadata", "title=https://upstream.example/outputs/9", "s.mp3"],
    "s.mp3",
    { "s.wav": wav },
  );
  Object.assign(files, {
    "/out.png": { type: "image/png", body: png },
    "/out.jpg": { type: "image/jpeg", body: jpeg },
    "/alpha.png": { type: "image/png", body: alpha },
    "/page.png": { type: "image/png", body: "<!doctype html><html><body>Not found</body></html>" },
    "/empty.png": { type: "image/png", body: new Uint8Array(0) },
    "/gone.png": { type: "text/plain", body: "gone", status: 404 },
    "/busy.png": { type: "text/plain", body: "busy", status: 503 },
    "/moved.png": { type: "text/plain", body: "", status: 302, location: "/out.png" },
    "/clip.mp4": { type: "video/mp4", body: clip },
    "/silent.mp4": { type: "video/mp4", body: silentClip },
    "/song.wav": { type: "audio/wav", body: wav },
    "/song.mp3": { type: "audio/mpeg", body: mp3 },
    "/cover.jpg": { type: "image/jpeg", body: jpeg },
  });
  server = createServer((req, res) => {
    const f = files[req.url ?? ""];
    if (!f) return void res.writeHead(404).end();
    const headers: Record<string, string> = { "content-type": f.type };
    if (f.location) headers.location = f.location;
    res.writeHead(f.status ?? 200, headers).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

t.after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await deps.outbound.close();
  await engine.close();
});

/** Asserts an intake failed as a lying output, and that its message does not name the URL. */
async function refused(p: Promise<unknown>, kind: typeof UpstreamOutputError | typeof IntakeDownloadError) {
  const err = await rejection(p);
  assert.instance(err, kind, String(err));
  assert.not.ok(String(err.message).includes(base), err.message);
  assert.not.ok(String(err.message).includes("127.0.0.1"), err.message);
  assert.is(err.cause, undefined);
  return err;
}

t("a PNG of another size comes back as a PNG of exactly the requested size, its metadata gone", async () => {
  const progress: number[] = [];
  const image = await intakeImage(deps, `${base}/out.png`, {
    width: 512,
    height: 512,
    signal,
    onProgress: (f) => void progress.push(f),
  });
  assert.is(image.mimeType, "image/png");
  assert.equal(pngSize(image.bytes), { width: 512, height: 512 });
  assert.equal(
    [...pngChunks(image.bytes)].filter((c) => PNG_METADATA_CHUNKS.has(c.type)),
    [],
  );
  assert.is(progress.at(-1), 1);
});

t("a JPEG becomes a PNG of the requested size", async () => {
  const image = await intakeImage(deps, `${base}/out.jpg`, { width: 256, height: 144, signal });
  assert.equal([...image.bytes.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  assert.equal(pngSize(image.bytes), { width: 256, height: 144 });
});

t("a transparent PNG keeps its alpha channel", async () => {
  const image = await intakeImage(deps, `${base}/alpha.png`, { width: 64, height: 64, signal });
  assert.equal(pngSize(image.bytes), { width: 64, height: 64 });
  assert.is(image.bytes[25], 6); // IHDR colour type 6: RGBA
});

t("a redirect is followed through the guard", async () => {
  const image = await intakeImage(deps, `${base}/moved.png`, { width: 64, height: 64, signal });
  assert.equal(pngSize(image.bytes), { width: 64, height: 64 });
});

t("an HTML page served as a PNG, zero bytes, a missing file: UpstreamOutputError, the URL never told", async () => {
  for (const path of ["/page.png", "/empty.png", "/gone.png"]) {
    const err = await refused(
      intakeImage(deps, `${base}${path}`, { width: 64, height: 64, signal }),
      UpstreamOutputError,
    );
    assert.not.ok(isTransient(err), path);
  }
});

t("a file host answering 503 is a transient download error (the poll looks again)", async () => {
  const err = await refused(
    intakeImage(deps, `${base}/busy.png`, { width: 64, height: 64, signal }),
    IntakeDownloadError,
  );
  assert.ok(isTransient(err));
});

t("an MP4 becomes H.264/AAC at the requested frame size and seconds", async () => {
  const video = await intakeVideo(deps, `${base}/clip.mp4`, {
    width: 256,
    height: 256,
    seconds: 4,
    sound: true,
    signal,
  });
  assert.is(video.mimeType, "video/mp4");
  const probe = await engine.probe(video.bytes, "v.mp4");
  const v = probe.streams.find((s) => s.type === "video")!;
  const a = probe.streams.find((s) => s.type === "audio");
  assert.equal([v.codec, v.width, v.height], ["h264", 256, 256]);
  assert.is(a?.codec, "aac");
  assert.ok(Math.abs(probe.durationSeconds - 4) < 0.3, String(probe.durationSeconds));
});

t("a silent clip where sound is wanted gets a silent AAC track; without sound the audio is dropped", async () => {
  const withSound = await intakeVideo(deps, `${base}/silent.mp4`, {
    width: 320,
    height: 240,
    seconds: 4,
    sound: true,
    signal,
  });
  const p1 = await engine.probe(withSound.bytes, "v.mp4");
  assert.is(p1.streams.find((s) => s.type === "audio")?.codec, "aac");
  assert.ok(p1.durationSeconds < 4.3, String(p1.durationSeconds));
  const without = await intakeVideo(deps, `${base}/clip.mp4`, {
    width: 320,
    height: 240,
    seconds: 4,
    sound: false,
    signal,
  });
  const p2 = await engine.probe(without.bytes, "v.mp4");
  assert.is(
    p2.streams.find((s) => s.type === "audio"),
    undefined,
  );
});

t("a video of the wrong length class, or a picture served as a video, fails", async () => {
  const err = await refused(
    intakeVideo(deps, `${base}/clip.mp4`, { width: 320, height: 240, seconds: 10, sound: true, signal }),
    UpstreamOutputError,
  );
  assert.match(err.message, /lasts 4\.\d\d s where 10 s was asked/);
  await refused(
    intakeVideo(deps, `${base}/out.png`, { width: 320, height: 240, seconds: 4, sound: false, signal }),
    UpstreamOutputError,
  );
});

t("a WAV song becomes an MP3 track with a cover, its length measured", async () => {
  const track = await intakeMusic(deps, {
    audioUrl: `${base}/song.wav`,
    coverUrl: `${base}/cover.jpg`,
    title: "Test Song",
    signal,
  });
  const probe = await engine.probe(track.audio, "a.mp3");
  assert.is(probe.streams.find((s) => s.type === "audio")?.codec, "mp3");
  assert.ok(Math.abs(track.duration - 3) < 0.2, String(track.duration));
  assert.is(track.coverMimeType, "image/png");
  assert.equal(pngSize(track.cover), { width: 512, height: 512 });
  assert.is(track.title, "Test Song");
  assert.is(track.arrangement, null);
});

t("an MP3 song is copied without its tags", async () => {
  const source = files["/song.mp3"]!.body as Uint8Array;
  assert.is(new TextDecoder().decode(source.subarray(0, 3)), "ID3", "the fixture carries a tag");
  const track = await intakeMusic(deps, { audioUrl: `${base}/song.mp3`, title: "t", signal });
  assert.is.not(new TextDecoder().decode(track.audio.subarray(0, 3)), "ID3");
  assert.not.ok(new TextDecoder("latin1").decode(track.audio).includes("upstream.example"));
  assert.ok(Math.abs(track.duration - 3) < 0.2, String(track.duration));
});

t("a song without a cover gets a plain one; HTML as audio and a too-short song fail", async () => {
  const track = await intakeMusic(deps, { audioUrl: `${base}/song.wav`, title: "t", signal });
  assert.equal(pngSize(track.cover), { width: 512, height: 512 });
  await refused(intakeMusic(deps, { audioUrl: `${base}/page.png`, title: "t", signal }), UpstreamOutputError);
  await refused(
    intakeMusic(deps, { audioUrl: `${base}/song.wav`, title: "t", minSeconds: 10, signal }),
    UpstreamOutputError,
  );
});

t.run();
