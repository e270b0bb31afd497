// POST /upscale-image end to end through app.fetch with the job workers, on every database backend: real PNGs
// of factor x the displayed size, tier prices on every account tier, polling at /image-status and the
// /images list, sources by base64, URL and service URL, every 400/413/402 before any charge, refunds.

import { suite } from "uvu";
import * as assert from "uvu/assert";
import { KERNEL_ERRORS } from "../../lib/errors.ts";
import { loadVips } from "../../lib/media/index.ts";
import { encodePng, pngInfo } from "../../plugins/images/png.ts";
import { UPSCALE_ERRORS } from "../../plugins/upscale/errors.ts";
import { UPSCALE_COSTS } from "../../plugins/upscale/prices.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { assertAnswer, assertFields } from "../helpers/assert.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { testKernel } from "../helpers/kernel-suite.ts";
import { balance, ledgerSum, mediaBytes } from "../helpers/partner-reads.ts";
import { fixture } from "../media/util.ts";
import { assertNothingChanged, count, fileServer, imageEnd, partner, replaceSource, upscaleOptions } from "./util.ts";

const JPEG = fixture("earth_apollo17.jpg"); // 375x375, EXIF + XMP
const WIDE = fixture("C.jpg"); // 2048x1365
const ALPHA = fixture("libpng-test_with_url.png"); // 91x69 RGBA
const WEBP = fixture("test_xmp.webp"); // 128x128
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

function solidPng(width: number, height: number): Uint8Array {
  return encodePng(width, height, new Uint8Array(width * height * 3).fill(90), 3);
}
const GIF = Uint8Array.from(Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64"));

const status = imageEnd;
/** POST /upscale-image of a picture sent as base64, with any other fields. */
const upscaleBase64 = (tk: TestKernel, key: string, image: Uint8Array, more: Record<string, unknown> = {}) =>
  tk.request("POST", "/upscale-image", { key, body: { image_base64: b64(image), ...more } });

for (const backend of await databaseBackends()) {
  const t = suite(`upscale-image on ${backend.name}`);
  const tk = testKernel(t, backend, upscaleOptions());

  t("a base64 JPEG becomes a real PNG twice its size, polled at image-status and listed", async () => {
    const { key, id } = await partner(tk, { credits: 100 });
    const res = await upscaleBase64(tk, key, JPEG, { partner_job_id: "up/1" });
    assertAnswer(
      res,
      202,
      "credits_remaining credits_used generation_id job_id output partner_job_id public_id request_id status upscale_factor",
    );
    assert.is(res.body.status, "pending");
    assert.is(res.body.upscale_factor, 2); // the default
    assert.equal(res.body.output, { width: 750, height: 750, tier: "2K" });
    assert.is(res.body.credits_used, 8); // 2K: standard 7, api_plus10 ceil(7.7)
    assert.is(res.body.credits_remaining, 92);
    assert.is(res.body.public_id, res.body.job_id);
    assert.match(res.body.public_id, /^svc-[0-9a-f]{8}$/);
    assert.ok(Number.isInteger(res.body.generation_id));
    assert.is(res.body.partner_job_id, "up/1");

    const done = await status(tk, key, res.body.public_id);
    assert.is(done.status, "success", JSON.stringify(done));
    assert.is(done.generation_id, res.body.generation_id);
    assert.is(done.model, "upscale-2x");
    assert.is(done.resolution, "2K");
    assert.is(done.aspect_ratio, "1:1");
    assert.is(done.metadata_removed, false);
    assert.ok(done.image_url.startsWith("https://media.example.test/media/images/"));
    assert.equal((await status(tk, key, res.body.generation_id)).image_url, done.image_url);
    const png = await mediaBytes(tk, done.image_url);
    assert.equal(pngInfo(png), { width: 750, height: 750, colorType: 2 });
    const served = await tk.request("GET", new URL(done.image_url).pathname);
    assert.is(served.headers.get("content-type"), "image/png");

    const list = await tk.request("GET", "/images", { key });
    assert.is(list.body.total, 1);
    const rec = list.body.images[0];
    assert.is(rec.public_id, res.body.public_id);
    assert.is(rec.model_used, "upscale-2x");
    assert.is(rec.status, "success");
    assert.is(rec.credits_used, 8);
    assert.is(rec.image_url, done.image_url);
    assert.equal(rec.ref_image_urls, []);
    assert.is(await ledgerSum(tk, id), 92);
    // The source is gone once the job has its output.
    assert.is(await count(tk, "retained_blobs"), 0);
  });

  t("the 8K tier: 4x of a 2048 px JPEG is a real 8192 px PNG", async () => {
    const { key } = await partner(tk, { credits: 100 });
    const res = await upscaleBase64(tk, key, WIDE, { upscale_factor: 4 });
    assert.equal(res.body.output, { width: 8192, height: 5460, tier: "8K" });
    assert.is(res.body.credits_used, 31);
    const done = await status(tk, key, res.body.public_id);
    assert.is(done.status, "success", JSON.stringify(done));
    assert.is(done.resolution, "8K");
    assert.equal(pngInfo(await mediaBytes(tk, done.image_url)), { width: 8192, height: 5460, colorType: 2 });
  });

  t("factor 1 enhances at the same size: other pixels, close to the source, crisper edges", async () => {
    const { key } = await partner(tk, { credits: 100 });
    const res = await upscaleBase64(tk, key, JPEG, { upscale_factor: 1 });
    assert.equal(res.body.output, { width: 375, height: 375, tier: "2K" });
    const done = await status(tk, key, res.body.public_id);
    const out = await mediaBytes(tk, done.image_url);
    assert.equal(pngInfo(out), { width: 375, height: 375, colorType: 2 });
    const vips = await loadVips();
    const a = vips.Image.newFromBuffer(JPEG).colourspace("b-w").cast("float");
    const b = vips.Image.newFromBuffer(out).colourspace("b-w").cast("float");
    const diff = a.subtract(b).abs().avg();
    assert.ok(diff > 0.05 && diff < 6, `mean difference ${diff}`);
    const laplace = vips.Image.newMatrix(3, 3, [0, -1, 0, -1, 4, -1, 0, -1, 0]);
    const edges = (i: typeof a) => i.conv(laplace).abs().avg();
    assert.ok(edges(b) > edges(a) * 1.05, `edge energy ${edges(a)} -> ${edges(b)}`);
  });

  t("sources by URL (PNG with alpha, WebP) and by service URL; the record names the URL", async () => {
    const server = await fileServer({ "/alpha.png": ALPHA, "/pic.webp": WEBP });
    try {
      const { key } = await partner(tk, { credits: 200 });
      const url = `${server.base}/alpha.png`;
      const alpha = await tk.request("POST", "/upscale-image", { key, body: { image_url: url, upscale_factor: 4 } });
      assert.is(alpha.status, 202, JSON.stringify(alpha.body));
      assert.equal(alpha.body.output, { width: 364, height: 276, tier: "2K" });
      const alphaDone = await status(tk, key, alpha.body.public_id);
      assert.equal(pngInfo(await mediaBytes(tk, alphaDone.image_url)), { width: 364, height: 276, colorType: 6 });

      const webp = await tk.request("POST", "/upscale-image", {
        key,
        body: { image_url: `${server.base}/pic.webp`, upscale_factor: 4 },
      });
      const webpDone = await status(tk, key, webp.body.public_id);
      assert.equal(pngInfo(await mediaBytes(tk, webpDone.image_url)), { width: 512, height: 512, colorType: 2 });

      // An upscale of our own output: read from storage, no network (the host does not even resolve).
      const again = await tk.request("POST", "/upscale-image", {
        key,
        body: { image_url: webpDone.image_url, upscale_factor: 2 },
      });
      assert.is(again.status, 202, JSON.stringify(again.body));
      assert.equal(again.body.output, { width: 1024, height: 1024, tier: "2K" });
      const againDone = await status(tk, key, again.body.generation_id);
      assert.equal(pngInfo(await mediaBytes(tk, againDone.image_url)), { width: 1024, height: 1024, colorType: 2 });

      const list = await tk.request("GET", "/images", { key });
      assert.equal(
        list.body.images.map((i: any) => i.ref_image_urls),
        [[webpDone.image_url], [`${server.base}/pic.webp`], [url]],
      );
    } finally {
      await server.close();
    }
  });

  t("every refusal answers the spec's text before any charge and changes nothing", async () => {
    const tooBig = new Uint8Array(10_000_001);
    tooBig.set(JPEG.subarray(0, 4));
    const server = await fileServer({
      "/big.jpg": tooBig,
      "/moved.jpg": (_req, res) => void res.writeHead(302, { location: "/pic.jpg" }).end(),
      "/gif.gif": GIF,
    });
    try {
      const { key, id } = await partner(tk, { credits: 100 });
      const cases: Array<[Record<string, unknown>, number, string]> = [
        [{}, 400, UPSCALE_ERRORS.exactlyOneSource],
        [{ image_url: "", image_base64: null }, 400, UPSCALE_ERRORS.exactlyOneSource],
        [{ image_url: `${server.base}/gif.gif`, image_base64: b64(JPEG) }, 400, UPSCALE_ERRORS.exactlyOneSource],
        [{ image_base64: b64(JPEG), upscale_factor: 3 }, 400, UPSCALE_ERRORS.factor],
        [{ image_base64: b64(JPEG), upscale_factor: "2" }, 400, UPSCALE_ERRORS.factor],
        [{ image_base64: b64(JPEG), upscale_factor: 2.5 }, 400, UPSCALE_ERRORS.factor],
        [{ image_base64: b64(JPEG), partner_job_id: "no spaces" }, 400, KERNEL_ERRORS.invalidPartnerJobId],
        [{ image_base64: "not base64!" }, 400, UPSCALE_ERRORS.imageBase64],
        [{ image_base64: 42 }, 400, UPSCALE_ERRORS.imageBase64],
        [{ image_base64: b64(GIF) }, 400, UPSCALE_ERRORS.imageFormat],
        [
          { image_base64: b64(new TextEncoder().encode("hello, not an image at all")) },
          400,
          UPSCALE_ERRORS.imageFormat,
        ],
        [{ image_base64: b64(JPEG.subarray(0, 40)) }, 400, UPSCALE_ERRORS.imageFormat],
        [{ image_base64: b64(solidPng(4097, 8)) }, 400, UPSCALE_ERRORS.over8K],
        [{ image_base64: b64(solidPng(8193, 2)), upscale_factor: 1 }, 400, UPSCALE_ERRORS.over8K],
        [{ image_base64: b64(new Uint8Array(10_000_001)) }, 413, UPSCALE_ERRORS.imageTooLarge],
        [{ image_base64: "A".repeat(Math.ceil((21 * 1024 * 1024 * 4) / 3)) }, 413, UPSCALE_ERRORS.base64TooLarge],
        [{ image_url: 42 }, 400, UPSCALE_ERRORS.imageUrl],
        [{ image_url: "ftp://example.com/a.png" }, 400, UPSCALE_ERRORS.imageUrl],
        [{ image_url: "https://user@example.com/a.png" }, 400, UPSCALE_ERRORS.imageUrl],
        [{ image_url: `${server.base}/missing.png` }, 400, UPSCALE_ERRORS.imageFetch],
        [{ image_url: `${server.base}/moved.jpg` }, 400, UPSCALE_ERRORS.imageFetch],
        [{ image_url: `${server.base}/gif.gif` }, 400, UPSCALE_ERRORS.imageFormat],
        [{ image_url: `${server.base}/big.jpg` }, 413, UPSCALE_ERRORS.imageTooLarge],
        [
          { image_url: "https://media.example.test/media/images/svc-00000000-nothing.png" },
          400,
          UPSCALE_ERRORS.imageFetch,
        ],
      ];
      for (const [body, code, text] of cases) {
        const res = await tk.request("POST", "/upscale-image", { key, body });
        const label = JSON.stringify(body).slice(0, 120);
        assert.is(res.status, code, `${label}: ${JSON.stringify(res.body).slice(0, 200)}`);
        assert.is(res.body.error, text, label);
        await assertNothingChanged(tk, id, key, 100, label);
      }
    } finally {
      await server.close();
    }
  });

  t("a 402 carries credits_remaining and keeps no file", async () => {
    const { key, id } = await partner(tk, { credits: 7 });
    const res = await upscaleBase64(tk, key, JPEG);
    assert.is(res.status, 402);
    assert.equal(errorBody(res), { error: "Insufficient credits. Need 8 credits.", credits_remaining: 7 });
    await assertNothingChanged(tk, id, key, 7, "402");
  });

  t.run();

  {
    const f = suite(`upscale-image failure on ${backend.name}`);
    const tk = testKernel(f, backend, upscaleOptions({ start: false }));

    f("output tiers 2K, 4K and 8K on every account tier; a custom account without the rate gets a 400", async () => {
      const prices = { api_plus10: [8, 16, 31], standard: [7, 14, 28], custom: [5, 10, 20] } as const;
      const rates = { upscale: { image: { per_image_by_output_tier: { "2K": 5, "4K": 10, "8K": 20 } } } };
      for (const [tier, expected] of Object.entries(prices)) {
        const { key, id } = await partner(tk, { credits: 1000, tier: tier as any });
        if (tier === "custom") await tk.kernel.accounts.update(id, { customRates: rates } as any);
        const got: number[] = [];
        // No workers in this suite: the jobs stay pending.
        const ids: string[] = [];
        for (const [factor, tierName, size] of [
          [1, "2K", [2048, 1365]],
          [2, "4K", [4096, 2730]],
          [4, "8K", [8192, 5460]],
        ] as const) {
          const res = await upscaleBase64(tk, key, WIDE, { upscale_factor: factor });
          assert.is(res.status, 202, `${tier} ${factor}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.output, { width: size[0], height: size[1], tier: tierName });
          got.push(res.body.credits_used);
          ids.push(res.body.public_id);
        }
        assert.equal(got, [...expected], tier);
        assert.is(await balance(tk, key), 1000 - expected.reduce((a, b) => a + b, 0));
        const pending = await tk.request("GET", `/image-status/${ids[2]}`, { key });
        assert.equal(pending.body, {
          request_id: pending.body.request_id,
          status: "pending",
          generation_id: pending.body.generation_id,
          progress: 0,
        });
      }
      const { key, id } = await partner(tk, { credits: 1000, tier: "custom" });
      await tk.kernel.accounts.update(id, {
        customRates: { upscale: { image: { per_image_by_output_tier: { "2K": 5 } } } },
      } as any);
      const refused = await upscaleBase64(tk, key, WIDE, { upscale_factor: 2 });
      assert.is(refused.status, 400);
      assert.is(await balance(tk, key), 1000);
      assert.equal((await tk.request("GET", "/credits", { key })).body.costs.upscale, UPSCALE_COSTS.upscale);
    });

    f("a job that cannot finish fails with the sanitized text and refunds", async () => {
      const { key, id } = await partner(tk, { credits: 100 });
      const res = await upscaleBase64(tk, key, JPEG);
      assert.is(res.status, 202);
      // The kept source is damaged past its header before any worker reads it.
      await replaceSource(tk, res.body.job_id, solidPng(10, 10).subarray(0, 60));
      await tk.kernel.start();
      const done = await status(tk, key, res.body.public_id);
      assertFields(done, "error generation_id request_id status");
      assert.is(done.status, "failed");
      assert.is(done.error, UPSCALE_ERRORS.failed);
      assert.is(await balance(tk, key), 100);
      assert.is(await ledgerSum(tk, id), 100);
      const list = await tk.request("GET", "/images", { key });
      assert.is(list.body.images[0].status, "failed");
      assert.is(list.body.images[0].image_url, null);
      assert.is(await count(tk, "retained_blobs"), 0);
    });

    f.run();
  }
}
