// References as signed links (plugins/upstreams/references.ts, lib/signed-media.ts): a file stored in the
// upstreams plugin's private folder is served through the real HTTP app only by its signed link, until the
// link expires; a changed signature, a changed expiry, or another file's path under the same signature answers
// 404. Small files may go inline as data URIs; released and expired files are removed.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { CapabilityName } from "../../contracts/index.ts";
import { type CapabilityHost, definePlugin } from "../../core/plugin.ts";
import { PLUGIN_API_VERSION } from "../../core/plugin-version.ts";
import { signMediaKey, verifyMediaKey } from "../../lib/signed-media.ts";
import {
  REFERENCE_GRACE_SECONDS,
  REFERENCE_TTL_SECONDS,
  type ReferenceLinks,
  ReferenceMissingError,
  ReferenceTypeError,
  referenceDeps,
  referenceLinks,
} from "../../plugins/upstreams/references.ts";
import { createTestKernel, type TestKernel } from "../../testkit/index.ts";
import { rejection } from "../helpers/assert.ts";

const t = suite("upstream references: signed, expiring links to one file");

// Real PNG and MP4 signatures: the extension (and so the served type) comes from the bytes.
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2]);
const MP4 = new Uint8Array([0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 9, 9]);

const CAP = "test.references" as CapabilityName;
let host: CapabilityHost | undefined;
// The gateway's own plugin name, so the files land where the real plugin's do.
const upstreams = definePlugin({
  name: "upstreams",
  apiVersion: `^${PLUGIN_API_VERSION}`,
  provides: {
    [CAP]: (h: CapabilityHost) => {
      host = h;
      return {};
    },
  },
});

let tk: TestKernel;
let refs: ReferenceLinks;

t.before(async () => {
  tk = await createTestKernel({
    plugins: [upstreams],
    env: { PUBLIC_URL: "https://media.example.test", UPSTREAM_CALLBACK_SECRET: "s".repeat(40) },
  });
  refs = referenceLinks(referenceDeps(host!));
});

t.after(async () => {
  await tk.close();
});

const get = async (url: string) => {
  const res = await tk.fetch(new Request(url));
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
};

t("the signed link serves the file through /media with its type, never cached", async () => {
  const ref = await refs.put(PNG);
  assert.match(ref.url, /^https:\/\/media\.example\.test\/media\/upstreams\/private\/refs\/[0-9a-f]{32}\.png\?/);
  const url = new URL(ref.url);
  assert.is(Number(url.searchParams.get("expires")), Math.floor(tk.clock.now() / 1000) + REFERENCE_TTL_SECONDS);
  const res = await get(ref.url);
  assert.is(res.status, 200);
  assert.equal(res.bytes, PNG);
  assert.is(res.headers.get("content-type"), "image/png");
  assert.is(res.headers.get("cache-control"), "private, no-store");
  const video = await refs.put(MP4);
  assert.match(video.url, /\.mp4\?/);
  assert.is((await get(video.url)).headers.get("content-type"), "video/mp4");
});

t("without the signature, or with a changed signature or expiry, the private file is not served", async () => {
  const ref = await refs.put(PNG);
  const url = new URL(ref.url);
  assert.is((await get(`${url.origin}${url.pathname}`)).status, 404);
  const signature = url.searchParams.get("signature")!;
  const flipped = (signature[0] === "0" ? "1" : "0") + signature.slice(1);
  const tampered = new URL(ref.url);
  tampered.searchParams.set("signature", flipped);
  assert.is((await get(tampered.href)).status, 404);
  const later = new URL(ref.url);
  later.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600));
  assert.is((await get(later.href)).status, 404);
  assert.is((await get(ref.url)).status, 200);
});

t("another file's path under the same signature is refused", async () => {
  const a = new URL((await refs.put(PNG)).url);
  const b = new URL((await refs.put(PNG)).url);
  assert.is((await get(`${b.origin}${b.pathname}${a.search}`)).status, 404);
  assert.is((await get(b.href)).status, 200);
});

t("an expired link is refused; the sweeper removes the file after the grace period", async () => {
  const ref = await refs.put(PNG, { ttlSeconds: 60 });
  assert.is((await get(ref.url)).status, 200);
  tk.clock.advance(60_000);
  assert.is((await get(ref.url)).status, 404);
  const blobs = host!.blobs.scoped("upstreams");
  assert.ok(await blobs.has(ref.key!));
  tk.clock.advance(REFERENCE_GRACE_SECONDS * 1000 + 1000);
  await tk.kernel.retention.sweep();
  assert.not.ok(await blobs.has(ref.key!));
});

t("release deletes the files at once; a data URI stores nothing", async () => {
  const blobs = host!.blobs.scoped("upstreams");
  const ref = await refs.put(PNG);
  await refs.release([ref.key, null]);
  assert.not.ok(await blobs.has(ref.key!));
  assert.is((await get(ref.url)).status, 404);
  const before = (await blobs.keys()).length;
  const inline = await refs.put(PNG, { dataUriMaxBytes: 1000 });
  assert.is(inline.key, null);
  assert.is(inline.url, `data:image/png;base64,${Buffer.from(PNG).toString("base64")}`);
  assert.is((await blobs.keys()).length, before);
  // Over the limit: a link after all.
  assert.ok((await refs.put(PNG, { dataUriMaxBytes: 4 })).key);
});

t("a request's references: bytes and uploads are re-hosted, a partner's URL passes as given", async () => {
  const frame = await refs.prepare({ bytes: MP4, url: "https://partner.example/clip.mp4" });
  assert.match(frame.url, /\/media\/upstreams\/private\/refs\/[0-9a-f]{32}\.mp4\?expires=/);
  const upload = await refs.prepare({ read: async () => PNG });
  assert.equal((await get(upload.url)).bytes, PNG);
  assert.equal(await refs.prepare({ url: "https://partner.example/cat.png" }), {
    url: "https://partner.example/cat.png",
    key: null,
  });
  assert.instance(await rejection(refs.prepare({ read: async () => null })), ReferenceMissingError);
});

t("bytes that are no media file are refused", async () => {
  assert.instance(await rejection(refs.put(new TextEncoder().encode("<html></html>"))), ReferenceTypeError);
});

t("a signature holds only under the secret it was made with, for the key and expiry it names", () => {
  const now = Date.UTC(2026, 10, 1);
  const { query } = signMediaKey("a".repeat(40), "upstreams/private/refs/x.png", 60, now);
  const params = new URLSearchParams(query);
  assert.ok(verifyMediaKey("a".repeat(40), "upstreams/private/refs/x.png", params, now));
  assert.not.ok(verifyMediaKey("b".repeat(40), "upstreams/private/refs/x.png", params, now));
  assert.not.ok(verifyMediaKey("a".repeat(40), "upstreams/private/refs/y.png", params, now));
  assert.not.ok(verifyMediaKey("a".repeat(40), "upstreams/private/refs/x.png", params, now + 60_000));
  assert.throws(() => signMediaKey(undefined, "k", 0, now), RangeError);
  assert.throws(() => signMediaKey(undefined, "k", 86_401, now), RangeError);
});

t.run();
