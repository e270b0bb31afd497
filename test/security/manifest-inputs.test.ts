// Issue 14, item 3: manifests, lists, subtitles and XML disguised as media, through the API, on both media
// engines (MEDIA_ENGINE=native when ffmpeg is on PATH, and wasm). Each one names a real, readable audio file on
// the server's disk (test/media/hostile.ts). Every request is refused with the plugin's own 4xx before any
// charge: no job, no ledger row, no kept file, the balance as it was; and the local file's bytes appear in no
// answer and no stored file. Before the fix, native ffmpeg opened an `extend-music` upload "up.mp3" that was
// a DASH manifest, read the local file through it and accepted it as the partner's audio (202, charged).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createMediaEngine } from "../../lib/media/index.ts";
import account from "../../plugins/account/index.ts";
import images from "../../plugins/images/index.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import { METADATA_ERRORS as ME } from "../../plugins/metadata/errors.ts";
import metadata from "../../plugins/metadata/index.ts";
import { MUSIC_ERRORS as MU } from "../../plugins/music/errors.ts";
import music from "../../plugins/music/index.ts";
import musicSandbox from "../../plugins/music/sandbox.ts";
import { UPSCALE_ERRORS as UE } from "../../plugins/upscale/errors.ts";
import upscale from "../../plugins/upscale/index.ts";
import video from "../../plugins/video/index.ts";
import videoSandbox from "../../plugins/video/sandbox.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { balance } from "../helpers/partner-reads.ts";
import { rowCount as count } from "../helpers/row-count.ts";
import { disguisedInputs, SECRET_MARKER, secretFiles } from "../media/hostile.ts";
import { ENGINE_MODES } from "../media/util.ts";

const maker = createMediaEngine({ mode: ENGINE_MODES[0]! });
const secret = await secretFiles(maker);
await maker.close();
const DISGUISES = disguisedInputs(secret.dir);

const server = createServer((req, res) => {
  const m = /^\/d\/([a-z0-9-]+)\.(mp4|png|mp3)$/.exec(req.url ?? "");
  const body = m ? DISGUISES[m[1]!] : undefined;
  if (!body) return void res.writeHead(404).end();
  res
    .writeHead(200, {
      "content-type": m![2] === "png" ? "image/png" : m![2] === "mp3" ? "audio/mpeg" : "video/mp4",
      "content-length": String(body.byteLength),
    })
    .end(body);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const OPERATIONS = [
  "POST /extend-music",
  "POST /upscale-video",
  "POST /upscale-image",
  "POST /remove-metadata",
  "GET /credits",
];
const LIMITS = { rate_limits: Object.fromEntries(OPERATIONS.map((o) => [o, 100_000])) };

/** Where a slice of `needle` shows up in `hay`. */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  return (
    Buffer.from(hay.buffer, hay.byteOffset, hay.byteLength).indexOf(
      Buffer.from(needle.buffer, needle.byteOffset, needle.byteLength),
    ) >= 0
  );
}

// A stretch of the secret's coded audio (past its header), and its marker: neither may show up anywhere.
const SECRET_SLICES = [secret.marker, secret.m4a.subarray(secret.m4a.byteLength - 600, secret.m4a.byteLength - 400)];

// The embedded database for every engine: what is read here is files and answers, not a database backend.
const EMBEDDED = { name: "pglite" } as const;

for (const mode of ENGINE_MODES) {
  const t = suite(`media disguised as media, through the API (MEDIA_ENGINE=${mode})`);
  const tk = suiteKernel(t, EMBEDDED, {
    plugins: [account, musicSandbox, music, imagesSandbox, images, videoSandbox, video, upscale, metadata],
    env: {
      MEDIA_ENGINE: mode,
      ALLOW_PRIVATE_URLS: "1",
      PUBLIC_URL: "https://media.example.test",
      SANDBOX_LATENCY_MS: "5",
    },
  });

  t("each disguise is refused with the plugin's 4xx, nothing charged, and the local file is nowhere", async () => {
    const { key, id } = await tk.partner({ credits: 10_000, limits: LIMITS });
    const before = await balance(tk, key);
    const answers: string[] = [];
    let n = 0;
    const expect = (what: string, res: { status: number; body: any }, status: number, error: string) => {
      answers.push(JSON.stringify(res.body));
      assert.equal([res.status, res.body?.error], [status, error], `${what}: ${JSON.stringify(res.body)}`);
    };
    for (const [name, bytes] of Object.entries(DISGUISES)) {
      const form = new FormData();
      form.set("parameters", JSON.stringify({ continue_at: 1, prompt: "go on" }));
      form.set("audio", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "audio/mpeg" }), "up.mp3");
      expect(
        `extend-music ${name}`,
        await tk.request("POST", "/extend-music", {
          key,
          headers: { "idempotency-key": `manifest-${mode}-${n++}` },
          body: form,
        }),
        400,
        MU.uploadUnreadable,
      );
      expect(
        `upscale-video ${name}`,
        await tk.request("POST", "/upscale-video", { key, body: { video_url: `${base}/d/${name}.mp4` } }),
        400,
        UE.videoFormat,
      );
      expect(
        `upscale-image ${name}`,
        await tk.request("POST", "/upscale-image", { key, body: { image_url: `${base}/d/${name}.png` } }),
        400,
        UE.imageFormat,
      );
      expect(
        `remove-metadata video ${name}`,
        await tk.request("POST", "/remove-metadata", { key, body: { video_url: `${base}/d/${name}.mp4` } }),
        415,
        ME.unsupportedVideo,
      );
      expect(
        `remove-metadata image ${name}`,
        await tk.request("POST", "/remove-metadata", { key, body: { image_url: `${base}/d/${name}.png` } }),
        415,
        ME.unsupportedImage,
      );
    }
    assert.is((await tk.request("GET", "/credits", { key })).body.credits_remaining, before, "nothing charged");
    assert.is(await count(tk, "jobs"), 0, "no job");
    assert.is(await count(tk, "retained_blobs"), 0, "no file kept");
    const ledger = await (tk.kernel.database.kysely as any)
      .selectFrom("ledger")
      .select("id")
      .where("partner_id", "=", id)
      .execute();
    assert.is(ledger.length, 1, "only the purchase in the ledger");
    for (const text of answers)
      assert.not.ok(
        text.includes(SECRET_MARKER) || text.includes(secret.dir),
        `an answer names the local file: ${text}`,
      );
    for (const k of await tk.kernel.blobs.keys()) {
      const stored = await tk.kernel.blobs.get(k);
      for (const slice of SECRET_SLICES)
        assert.not.ok(stored && contains(stored, slice), `stored file ${k} carries the local file's bytes`);
    }
  });

  t.run();
}

// After every suite (uvu runs them in order once this module is done).
const done = suite("manifest inputs: clean up");
done("the local files and the file server go away", async () => {
  await secret.remove();
  await new Promise<void>((r) => server.close(() => r()));
});
done.run();
