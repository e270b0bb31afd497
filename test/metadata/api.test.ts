// POST /remove-metadata through app.fetch on every database backend: the clean-copy record, only the
// cleaned copy stored for 7 days (and swept after), service URLs read from storage, every error of the
// spec's table with its text, the daily quotas, the pause and the busy slot, and videos on both engines.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { setPaused } from "../../core/pauses.ts";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { createOutboundGuard } from "../../lib/outbound/index.ts";
import account from "../../plugins/account/index.ts";
import { METADATA_ERRORS } from "../../plugins/metadata/errors.ts";
import { imageFormatOf } from "../../plugins/metadata/image.ts";
import metadata from "../../plugins/metadata/index.ts";
import { removeMetadataOperation } from "../../plugins/metadata/operations.ts";
import { VIDEO_SLOT_KEY, VIDEO_SLOTS } from "../../plugins/metadata/slots.ts";
import { createTestKernel, graphql, type TestKernel } from "../../testkit/index.ts";
import { databaseBackends, isolatedPostgresDatabase } from "../helpers/backends.ts";
import { rowCount } from "../helpers/row-count.ts";
import { ENGINE_MODES, loadFixture } from "./helpers.ts";

const BIG = new Uint8Array(20 * 1024 * 1024 + 1);
const server = createServer((req, res) => {
  const path = req.url ?? "/";
  const files: Record<string, Uint8Array> = {
    "/earth.jpg": loadFixture("earth_apollo17.jpg"),
    "/video1.mp4": loadFixture("video1.mp4"),
    "/c.mov": loadFixture("c.mov"),
    "/big.jpg": BIG,
    "/junk.mp4": new Uint8Array(Buffer.from("not a video at all")),
  };
  if (path === "/slow.mp4") return; // never answers
  const body = files[path];
  if (!body) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, { "content-length": String(body.length) });
  res.end(body);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const LIMITS = { rate_limits: { "POST /remove-metadata": 100_000 } };
const b64 = (name: string) => Buffer.from(loadFixture(name)).toString("base64");
const DAY = 24 * 3600 * 1000;

async function kernelFor(
  backend: { name: string },
  extra: { env?: Record<string, string>; plugin?: typeof metadata; privateUrls?: boolean } = {},
): Promise<TestKernel> {
  return createTestKernel({
    plugins: [account, extra.plugin ?? metadata],
    databaseUrl: backend.name === "postgres" ? await isolatedPostgresDatabase() : undefined,
    env: { MEDIA_ENGINE: ENGINE_MODES[0]!, ...extra.env },
    outbound: extra.privateUrls === false ? undefined : createOutboundGuard({ allowPrivate: true }),
  });
}

const db = (tk: TestKernel) => tk.kernel.database.kysely as any;
const retained = (tk: TestKernel) => rowCount(tk, "retained_blobs");

for (const backend of await databaseBackends()) {
  const t = suite(`POST /remove-metadata (${backend.name})`);
  let tk: TestKernel;
  let strict: TestKernel; // the deployment's default guard: public https only
  let key: string;
  t.before(async () => {
    tk = await kernelFor(backend);
    strict = await kernelFor(backend, { privateUrls: false });
    key = (await tk.partner({ limits: LIMITS })).key;
  });
  t.after(async () => {
    await tk.close();
    await strict.close();
  });
  const post = (body: unknown, k = key, kernel = tk) => kernel.request("POST", "/remove-metadata", { key: k, body });

  t("image_base64: the clean-copy record, and the stored copy is the cleaned bytes", async () => {
    const res = await post({ image_base64: b64("C.jpg") });
    assert.is(res.status, 200, JSON.stringify(res.body));
    const expected = await imageFormatOf(loadFixture("C.jpg"))!.clean(loadFixture("C.jpg"));
    const { request_id, image_url, ...record } = res.body;
    assert.type(request_id, "string");
    assert.equal(record, {
      format: "jpeg",
      content_type: "image/jpeg",
      removed: ["c2pa"],
      c2pa_found: true,
      bytes_in: loadFixture("C.jpg").length,
      bytes_out: expected.bytes.length,
      expires_at: "2026-11-08 12:00:00",
    });
    assert.match(image_url, /^http:\/\/localhost:3000\/media\/metadata\/clean\/[0-9a-f]{32}\.jpg$/);
    const media = await tk.request("GET", new URL(image_url).pathname);
    assert.is(media.status, 200);
    const row = await db(tk)
      .selectFrom("metadata_removals")
      .selectAll()
      .where("request_id", "=", request_id)
      .executeTakeFirstOrThrow();
    assert.is(row.status, 200);
  });

  t("image_url (public URL) and a service URL read back from storage; a missing one is 404", async () => {
    const res = await post({ image_url: `${base}/earth.jpg` });
    assert.is(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.removed, ["exif", "xmp", "iptc"]);
    const again = await post({ image_url: res.body.image_url });
    assert.is(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.removed, []);
    assert.is(again.body.bytes_in, res.body.bytes_out);
    const gone = await post({
      image_url: "http://localhost:3000/media/metadata/clean/00000000000000000000000000000000.jpg",
    });
    assert.equal([gone.status, gone.body.error], [404, METADATA_ERRORS.imageNotFound]);
    const goneVideo = await post({
      video_url: "http://localhost:3000/media/metadata/clean/00000000000000000000000000000000.mp4",
    });
    assert.equal([goneVideo.status, goneVideo.body.error], [404, METADATA_ERRORS.videoNotFound]);
  });

  t("only the cleaned copy is kept, for 7 days: the sweeper removes it after", async () => {
    const before = await retained(tk);
    const res = await post({ image_base64: b64("sample1.png") });
    assert.is(res.status, 200);
    assert.is(await retained(tk), before + 1, "one file stored: the copy");
    tk.clock.advance(7 * DAY - 1000);
    await tk.kernel.retention.sweep();
    assert.is((await tk.request("GET", new URL(res.body.image_url).pathname)).status, 200);
    tk.clock.advance(2000);
    await tk.kernel.retention.sweep();
    assert.is((await tk.request("GET", new URL(res.body.image_url).pathname)).status, 404);
    const stale = await post({ image_url: res.body.image_url });
    assert.equal([stale.status, stale.body.error], [404, METADATA_ERRORS.imageNotFound]);
  });

  t("400s with the spec's texts", async () => {
    const cases: Array<[unknown, string, TestKernel?]> = [
      [{}, METADATA_ERRORS.exactlyOne],
      [{ image_url: `${base}/earth.jpg`, video_url: `${base}/video1.mp4` }, METADATA_ERRORS.exactlyOne],
      [{ image_base64: "@@not base64@@" }, METADATA_ERRORS.invalidImageBase64],
      [{ image_base64: 42 }, METADATA_ERRORS.invalidImageBase64],
      [{ image_url: "http://example.com/a.jpg" }, METADATA_ERRORS.imageUrlHttps, strict],
      [{ image_url: "https://127.0.0.1/a.jpg" }, METADATA_ERRORS.imageUrlHttps, strict],
      [{ image_url: "ftp://example.com/a.jpg" }, METADATA_ERRORS.invalidImageUrl("ftp://example.com/a.jpg"), strict],
      [
        { image_url: "https://user@example.com/a.jpg" },
        METADATA_ERRORS.invalidImageUrl("https://user@example.com/a.jpg"),
        strict,
      ],
      [{ video_url: "http://example.com/a.mp4" }, METADATA_ERRORS.videoUrlHttps, strict],
      [
        { video_url: "https://exämple.com/a.mp4" },
        METADATA_ERRORS.invalidVideoUrl("https://exämple.com/a.mp4"),
        strict,
      ],
      [{ image_url: `${base}/missing.jpg` }, METADATA_ERRORS.imageFetch],
      [{ video_url: `${base}/missing.mp4` }, METADATA_ERRORS.videoFetch],
    ];
    for (const [body, error, kernel] of cases) {
      const k = kernel ? (await kernel.partner({ limits: LIMITS })).key : key;
      const res = await post(body, k, kernel);
      assert.equal([res.status, res.body.error], [400, error], JSON.stringify(body));
    }
  });

  t("413, 415 and 422; a damaged file stores nothing", async () => {
    const over = Buffer.alloc(20 * 1024 * 1024 + 3).toString("base64");
    assert.equal(await post({ image_base64: over }).then((r) => [r.status, r.body.error]), [
      413,
      METADATA_ERRORS.imageBase64TooLarge,
    ]);
    assert.equal(await post({ image_base64: over + "A".repeat(400_000) }).then((r) => [r.status, r.body.error]), [
      413,
      METADATA_ERRORS.imageBase64TooLarge,
    ]);
    assert.equal(await post({ image_url: `${base}/big.jpg` }).then((r) => [r.status, r.body.error]), [
      413,
      METADATA_ERRORS.imageTooLarge,
    ]);
    assert.equal(
      await post({ image_base64: Buffer.from("GIF89a....").toString("base64") }).then((r) => [r.status, r.body.error]),
      [415, METADATA_ERRORS.unsupportedImage],
    );
    assert.equal(await post({ video_url: `${base}/junk.mp4` }).then((r) => [r.status, r.body.error]), [
      415,
      METADATA_ERRORS.unsupportedVideo,
    ]);
    assert.equal(await post({ video_url: `${base}/earth.jpg` }).then((r) => [r.status, r.body.error]), [
      415,
      METADATA_ERRORS.unsupportedVideo,
    ]);
    const before = await retained(tk);
    const jpeg = loadFixture("earth_apollo17.jpg");
    const damaged = Buffer.from(jpeg.subarray(0, jpeg.length - 500)).toString("base64");
    assert.equal(await post({ image_base64: damaged }).then((r) => [r.status, r.body.error]), [
      422,
      METADATA_ERRORS.imageDamaged,
    ]);
    const webp = new Uint8Array(loadFixture("test_xmp.webp"));
    new DataView(webp.buffer).setUint32(4, webp.length * 2, true);
    assert.equal(
      await post({ image_base64: Buffer.from(webp).toString("base64") }).then((r) => [r.status, r.body.error]),
      [422, METADATA_ERRORS.imageDamaged],
    );
    assert.is(await retained(tk), before, "nothing stored");
  });

  t("403 when the account's feature is off", async () => {
    const off = await tk.partner({ features: { metadata_removal: false }, limits: LIMITS });
    const res = await post({ image_base64: b64("C.jpg") }, off.key);
    assert.equal([res.status, res.body.error], [403, KERNEL_ERRORS.featureDisabled("metadata_removal")]);
  });

  t("daily quotas: 200 image and 50 video attempts per 24 hours, failures counted, kinds apart", async () => {
    const p = (await tk.partner({ limits: LIMITS })).key;
    const junk = { image_base64: Buffer.from("plain text").toString("base64") };
    for (let i = 0; i < 200; i++) assert.is((await post(junk, p)).status, 415);
    const over = await post({ image_base64: b64("C.jpg") }, p);
    assert.equal([over.status, over.body.error], [429, METADATA_ERRORS.imageQuota]);
    // Videos have their own budget.
    for (let i = 0; i < 50; i++) assert.is((await post({ video_url: `${base}/junk.mp4` }, p)).status, 415);
    const overVideo = await post({ video_url: `${base}/video1.mp4` }, p);
    assert.equal([overVideo.status, overVideo.body.error], [429, METADATA_ERRORS.videoQuota]);
    // Refused attempts do not count: a day later the budget is whole again.
    tk.clock.advance(25 * 3600 * 1000);
    assert.is((await post({ image_base64: b64("C.jpg") }, p)).status, 200);
  });

  t("503 when paused (every account) and when the video slots are taken", async () => {
    await setPaused(tk.kernel.database.kysely, "metadata_removal", true);
    const paused = await post({ image_base64: b64("C.jpg") });
    assert.equal([paused.status, paused.body.error], [503, METADATA_ERRORS.paused]);
    await setPaused(tk.kernel.database.kysely, "metadata_removal", false);
    assert.is((await post({ image_base64: b64("C.jpg") })).status, 200);

    // Other processes' holders, as the shared counters see them.
    const bucket = `${VIDEO_SLOT_KEY}:${Math.floor(tk.clock.now() / 300_000)}`;
    await tk.kernel.counters.increment(bucket, 600_000, VIDEO_SLOTS);
    const busy = await post({ video_url: `${base}/video1.mp4` });
    assert.equal([busy.status, busy.body.error], [503, METADATA_ERRORS.videoBusy]);
    await tk.kernel.counters.increment(bucket, 600_000, -VIDEO_SLOTS);
    assert.is((await post({ video_url: `${base}/video1.mp4` })).status, 200);
  });

  t("GraphQL reaches the same operation", async () => {
    const sdl = await graphql(tk, `{ __schema { mutationType { fields { name } } } }`, undefined, { key });
    const name = sdl.data.__schema.mutationType.fields
      .map((f: any) => f.name)
      .find((n: string) => /remove.?metadata/i.test(n));
    assert.ok(name, "a removeMetadata mutation");
  });

  t.run();
}

// Videos through the endpoint on each engine (the cleaner's own tests cover the bytes in depth).
for (const mode of ENGINE_MODES) {
  const t = suite(`POST /remove-metadata video_url (${mode} engine)`);
  let tk: TestKernel;
  let key: string;
  t.before(async () => {
    tk = await kernelFor(
      { name: "pglite" },
      {
        env: { MEDIA_ENGINE: mode },
        plugin: { ...metadata, operations: [removeMetadataOperation({ downloadTimeoutMs: 5_000 })] },
      },
    );
    key = (await tk.partner({ limits: LIMITS })).key;
  });
  t.after(() => tk.close());

  t("MP4 with C2PA and XMP, MOV stays MOV; a service video URL works too", async () => {
    const mp4 = await tk.request("POST", "/remove-metadata", { key, body: { video_url: `${base}/video1.mp4` } });
    assert.is(mp4.status, 200, JSON.stringify(mp4.body));
    assert.equal(
      [mp4.body.format, mp4.body.content_type, mp4.body.removed, mp4.body.c2pa_found],
      ["mp4", "video/mp4", ["c2pa", "xmp", "other"], true],
    );
    assert.match(mp4.body.video_url, /\.mp4$/);
    assert.is(mp4.body.image_url, undefined);
    const mov = await tk.request("POST", "/remove-metadata", { key, body: { video_url: `${base}/c.mov` } });
    assert.equal(
      [mov.status, mov.body.format, mov.body.content_type, mov.body.removed],
      [200, "mov", "video/quicktime", ["other"]],
    );
    const again = await tk.request("POST", "/remove-metadata", { key, body: { video_url: mp4.body.video_url } });
    assert.equal([again.status, again.body.removed], [200, []]);
  });

  t("the download deadline (30 s in production) answers the fetch text", async () => {
    const res = await tk.request("POST", "/remove-metadata", { key, body: { video_url: `${base}/slow.mp4` } });
    assert.equal([res.status, res.body.error], [400, METADATA_ERRORS.videoFetch]);
  });

  t("a truncated video is 422 and nothing is stored", async () => {
    const before = await retained(tk);
    const stored = loadFixture("video1.mp4").subarray(0, 500_000);
    // Through storage: a file of ours that was cut short.
    const cut = `clean/${"0c".repeat(16)}.mp4`; // a name /media serves: 128 random bits
    await tk.kernel.blobs.put(`metadata/${cut}`, stored);
    const res = await tk.request("POST", "/remove-metadata", {
      key,
      body: { video_url: `http://localhost:3000/media/metadata/${cut}` },
    });
    assert.equal([res.status, res.body.error], [422, METADATA_ERRORS.videoDamaged]);
    assert.is(await retained(tk), before);
  });

  t.run();
}

{
  const t = suite("remove-metadata test server");
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  t("closes", () => {});
  t.run();
}
