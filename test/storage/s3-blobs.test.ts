// BLOB_URL: media files in an S3-compatible bucket, tested against a real S3-protocol server running here
// (s3rver; it checks a request's access key id, not its V4 signature, so a wrong key id stands for wrong
// credentials). The store itself, the variable's parsing and its secrecy, a boot that cannot
// use its bucket, and two hosts with nothing on disk in common serving each other's files.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { BlobStore } from "../../contracts/blobs.ts";
import { loadConfig } from "../../core/config.ts";
import { createKernel } from "../../core/kernel.ts";
import { BootError } from "../../core/registry.ts";
import { ConfigError } from "../../lib/plugin-config.ts";
import account from "../../plugins/account/index.ts";
import { BlobUrlError, describeBlobUrl, parseBlobUrl } from "../../storage/blob-url.ts";
import { checkS3BlobStore, fileBlobStore, memoryBlobStore, s3BlobStore } from "../../storage/blobs.ts";
import { rejection } from "../helpers/assert.ts";
import { isolatedPostgresDatabase, postgresUrl } from "../helpers/backends.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

// s3rver's own credentials.
const KEY = "S3RVER";
const SECRET = "S3RVER";
const BUCKET = "media";

const s3Dir = mkdtempSync(join(tmpdir(), "mediagate-s3rver-"));
const s3 = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory: s3Dir,
  configureBuckets: [{ name: BUCKET, configs: [] }],
});
const { port } = (await s3.run()) as AddressInfo;
const endpoint = `http://127.0.0.1:${port}`;
onAfterAll(async () => {
  await s3.close();
  rmSync(s3Dir, { recursive: true, force: true });
});

const blobUrl = (prefix: string, secret = SECRET, key = KEY) =>
  `s3://${key}:${encodeURIComponent(secret)}@${BUCKET}/${prefix}?endpoint=${encodeURIComponent(endpoint)}`;
// Awaited before any suite is declared: uvu starts running the suites declared before a top-level await, and
// those declared after it then run alongside them (two servers booting during the bucket tests).
const pg = await postgresUrl();
let prefixes = 0;
const freshPrefix = () => `test-${process.pid}-${++prefixes}`;

{
  const t = suite("BLOB_URL");

  t("names a bucket, an optional prefix, an endpoint and a region; credentials are percent-decoded", () => {
    const l = parseBlobUrl(
      "s3://AKIA%2B1:se%2Fcr%40t@my-bucket/deploy/a/?endpoint=http%3A%2F%2F127.0.0.1%3A9000%2F&region=eu-west-1",
    );
    assert.equal(l, {
      bucket: "my-bucket",
      prefix: "deploy/a/",
      endpoint: "http://127.0.0.1:9000",
      region: "eu-west-1",
      accessKeyId: "AKIA+1",
      secretAccessKey: "se/cr@t",
    });
    const aws = parseBlobUrl("s3://k:s@media.example");
    assert.is(aws.endpoint, "https://s3.us-east-1.amazonaws.com");
    assert.is(aws.prefix, "");
  });

  t("a wrong URL stops the boot by name, and never repeats the secret", () => {
    const secret = "do-not-print-me";
    for (const bad of [
      "not a url",
      `https://k:${secret}@bucket`,
      "s3://bucket",
      `s3://k:${secret}@B_a_d`,
      `s3://k:${secret}@bucket?endpoint=ftp://host`,
      `s3://k:${secret}@bucket?endpoint=http://u:p@host`,
      `s3://k:${secret}@bucket?endpont=http://host`,
      `s3://k:${secret}@bucket/%2e%2e%2Fup`,
      `s3://k:${secret}@bucket/a//b`,
      `s3://k:${secret}@bucket?region=EU%20WEST`,
    ]) {
      assert.throws(
        () => parseBlobUrl(bad),
        (e: unknown) => e instanceof BlobUrlError,
        bad,
      );
      let message = "";
      try {
        loadConfig({ BLOB_URL: bad });
      } catch (e) {
        assert.instance(e, ConfigError, bad);
        message = (e as Error).message;
      }
      assert.match(message, /^BLOB_URL /, bad);
      assert.not.match(message, secret, bad);
    }
    assert.not.match(describeBlobUrl(parseBlobUrl(`s3://k:${secret}@bucket?endpoint=http://h`)), secret);
  });

  t.run();
}

{
  const t = suite("blobs in an S3-compatible bucket");

  t("bytes go in and come back exactly; has, remove and keys; a missing key reads null", async () => {
    const store = s3BlobStore(parseBlobUrl(blobUrl(freshPrefix())));
    const every = Uint8Array.from({ length: 1024 }, (_, i) => i % 256);
    await store.put("images/abc/one.png", every, { contentType: "image/png" });
    await store.put("video/x.mp4", new Uint8Array([0, 0, 0, 0x18]));
    assert.equal(await store.get("images/abc/one.png"), every);
    assert.ok(await store.has("video/x.mp4"));
    assert.is(await store.get("images/abc/none.png"), null);
    assert.not.ok(await store.has("images/abc/none.png"));
    assert.equal(
      (await store.keys()).sort(),
      ["images/abc/one.png", "video/x.mp4"],
      "one object per file: no metadata objects beside them",
    );
    await store.remove("video/x.mp4");
    assert.is(await store.get("video/x.mp4"), null);
    assert.equal(await store.keys(), ["images/abc/one.png"]);
  });

  t("a scoped store and another prefix see only their own keys", async () => {
    const a = s3BlobStore(parseBlobUrl(blobUrl(freshPrefix())));
    const b = s3BlobStore(parseBlobUrl(blobUrl(freshPrefix())));
    await a.scoped("images").put("k.png", new Uint8Array([1]));
    await b.put("images/k.png", new Uint8Array([2]));
    assert.equal(await a.get("images/k.png"), new Uint8Array([1]));
    assert.equal(await b.get("images/k.png"), new Uint8Array([2]));
    assert.equal(await a.scoped("images").keys(), ["k.png"]);
    assert.equal(await a.keys(), ["images/k.png"]);
  });

  t(
    "the boot check passes on a usable bucket and fails by name on a wrong secret or bucket, without the secret",
    async () => {
      const good = parseBlobUrl(blobUrl(freshPrefix()));
      await checkS3BlobStore(good, s3BlobStore(good));
      assert.equal(await s3BlobStore(good).keys(), [], "the check leaves nothing behind");
      const secret = "some-secret-value";
      for (const bad of [
        parseBlobUrl(blobUrl(freshPrefix(), secret, "UNKNOWNKEY")),
        { ...good, bucket: "no-such-bucket", secretAccessKey: secret },
      ]) {
        const err = await rejection(checkS3BlobStore(bad, s3BlobStore(bad)));
        assert.match((err as Error).message, /^BLOB_URL: cannot use s3:\/\//);
        assert.not.match((err as Error).message, secret);
      }
    },
  );

  t("a kernel whose bucket refuses its credentials does not boot", async () => {
    const secret = "some-secret-value";
    const err = await rejection(
      createKernel({
        config: loadConfig({
          LOG_LEVEL: "silent",
          BLOB_URL: blobUrl(freshPrefix(), secret, "UNKNOWNKEY"),
          DATA_DIR: mkdtempSync(join(tmpdir(), "mediagate-s3-boot-")),
        }),
        plugins: [account],
      }),
    );
    assert.instance(err, BootError);
    assert.match((err as Error).message, /^BLOB_URL: cannot use/);
    assert.not.match((err as Error).message, secret);
  });

  t.run();
}

// Reading a file as it is sent (the media route): the same answers from every store.
{
  const t = suite("blobs opened for reading, on every store");
  const read = async (stream: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(stream).arrayBuffer());
  const stores: Array<[string, () => BlobStore]> = [
    ["memory", () => memoryBlobStore()],
    ["file", () => fileBlobStore(mkdtempSync(join(tmpdir(), "mediagate-blobs-open-")))],
    ["s3", () => s3BlobStore(parseBlobUrl(blobUrl(freshPrefix())))],
  ];
  for (const [name, make] of stores) {
    t(`${name}: size, the whole file, a range, the last byte; none for a missing key or a key outside`, async () => {
      const store = make().scoped("video");
      const data = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 7) % 251);
      await store.put("abc/clip.mp4", data);
      const file = (await store.open("abc/clip.mp4"))!;
      assert.is(file.size, data.length);
      assert.equal(await read(await file.read()), data);
      assert.equal(await read(await file.read({ start: 1000, end: 70_999 })), data.subarray(1000, 71_000));
      assert.equal(await read(await file.read({ start: data.length - 1, end: data.length - 1 })), data.subarray(-1));
      assert.is(await store.open("abc/none.mp4"), null);
      assert.is(await store.open("abc"), null, "a folder is not a file");
      assert.is(await store.open("../video/abc/clip.mp4"), null);
    });
  }
  t("file: a removed file leaves nothing on disk (its content type's metadata item included)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mediagate-blobs-remove-"));
    const store = fileBlobStore(dir).scoped("images");
    await store.put("abc/one.png", new Uint8Array([1, 2, 3]), { contentType: "image/png" });
    assert.equal(readdirSync(join(dir, "blobs", "images", "abc")).sort(), ["one.png", "one.png$"]);
    await store.remove("abc/one.png");
    assert.equal(
      existsSync(join(dir, "blobs", "images", "abc")) ? readdirSync(join(dir, "blobs", "images", "abc")) : [],
      [],
    );
    rmSync(dir, { recursive: true, force: true });
  });
  t.run();
}

// Two hosts: separate DATA_DIRs (nothing on disk in common), one Postgres, one bucket. An image made through
// one is served, byte for byte, by the other's media route, and neither wrote a blob to its own disk.
{
  const t = suite("blobs shared by two hosts");
  const servers: ServerProcess[] = [];
  const dirs: string[] = [];
  t.after(async () => {
    for (const s of servers.splice(0)) await s.stop();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  (pg ? t : t.skip)("a file made on one host is served by the other", async () => {
    const ADMIN = "adm_LdpAVfOgMzmwqlGDZd3i280ENn4uy45QsgCCLMYF";
    const database = await isolatedPostgresDatabase();
    const url = blobUrl(freshPrefix());
    const start = async () => {
      const dir = mkdtempSync(join(tmpdir(), "mediagate-s3-host-"));
      dirs.push(dir);
      const s = await startServer({
        DATA_DIR: dir,
        DATABASE_URL: database,
        BLOB_URL: url,
        ADMIN_TOKEN: ADMIN,
        SANDBOX_LATENCY_MS: "0",
        LOG_LEVEL: "warn",
      });
      servers.push(s);
      return s;
    };
    // One after the other: s3rver (the local S3 stand-in) answered 500 once when both hosts' boot checks wrote
    // and deleted their probe objects in the same folder at the same moment, a race of its file store.
    const one = await start();
    const two = await start();
    const headers = (auth: string) => ({
      authorization: `Bearer ${auth}`,
      "user-agent": "mediagate-s3-test/1.0",
      "content-type": "application/json",
    });
    const created = await (
      await fetch(`${one.url}/api/v1/admin/partners`, {
        method: "POST",
        headers: headers(ADMIN),
        body: JSON.stringify({ name: "S3", credits: 100 }),
      })
    ).json();
    const key: string = created.api_key;
    const submit = await fetch(`${one.url}/api/v1/partner/generate-image`, {
      method: "POST",
      headers: headers(key),
      body: JSON.stringify({ prompt: "a lighthouse", model: "image-b-2" }),
    });
    assert.is(submit.status, 202);
    const id: string = (await submit.json()).public_ids[0];
    let status: { status: string; image_url?: string } = { status: "pending" };
    for (
      const until = Date.now() + 60_000;
      status.status === "pending" && Date.now() < until;
      await new Promise((r) => setTimeout(r, 200))
    ) {
      status = await (await fetch(`${one.url}/api/v1/partner/image-status/${id}`, { headers: headers(key) })).json();
    }
    assert.is(status.status, "success", JSON.stringify(status));
    const path = new URL(status.image_url!).pathname;
    const fromOne = new Uint8Array(await (await fetch(one.url + path)).arrayBuffer());
    const res = await fetch(two.url + path);
    assert.is(res.status, 200);
    assert.is(res.headers.get("content-type"), "image/png");
    assert.equal(new Uint8Array(await res.arrayBuffer()), fromOne);
    const part = await fetch(two.url + path, { headers: { range: "bytes=100-1099" } });
    assert.is(part.status, 206);
    assert.is(part.headers.get("content-range"), `bytes 100-1099/${fromOne.length}`);
    assert.equal(new Uint8Array(await part.arrayBuffer()), fromOne.subarray(100, 1100));
    assert.ok(fromOne.length > 1000);
    const stored = await s3BlobStore(parseBlobUrl(url)).get(decodeURIComponent(path.slice("/media/".length)));
    assert.equal(stored, fromOne);
    for (const dir of dirs)
      assert.not.ok(readdirSync(dir).includes("blobs") && readdirSync(join(dir, "blobs")).length, `${dir} holds blobs`);
  });

  t.run();
}
