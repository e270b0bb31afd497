// Image generation end to end through app.fetch, with the job workers running, on every database backend:
// validation before charge, prices per tier, the sandbox's real PNG, media serving, failure and refund.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import account from "../../plugins/account/index.ts";
import { IMAGE_ERRORS } from "../../plugins/images/errors.ts";
import images from "../../plugins/images/index.ts";
import { encodePng, metadataChunks, pngInfo } from "../../plugins/images/png.ts";
import imagesSandbox from "../../plugins/images/sandbox.ts";
import type { TestKernel } from "../../testkit/index.ts";
import { databaseBackends } from "../helpers/backends.ts";
import { errorBody } from "../helpers/error-body.ts";
import { suiteKernel } from "../helpers/kernel-suite.ts";
import { newestListed } from "../helpers/newest-listed.ts";
import { ledgerSum } from "../helpers/partner-reads.ts";
import { notPending, pollStatus } from "../helpers/poll-status.ts";

const EXIFTOOL = ["/usr/bin/exiftool", "/usr/local/bin/exiftool"].find((p) => existsSync(p));

/** The EXIF and XMP tags exiftool reads in a PNG (call only when EXIFTOOL is there). */
function exifAndXmp(png: Uint8Array): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), "mg-img-"));
  writeFileSync(join(dir, "a.png"), png);
  return JSON.parse(
    execFileSync(EXIFTOOL!, ["-j", "-XMP:all", "-EXIF:all", join(dir, "a.png")], { encoding: "utf8" }),
  )[0];
}

const waitFor = (tk: TestKernel, key: string, id: string | number, timeoutMs = 30_000) =>
  pollStatus(tk, key, `/image-status/${id}`, notPending, timeoutMs);

async function fetchMedia(tk: TestKernel, url: string, headers: Record<string, string> = {}) {
  const path = new URL(url).pathname;
  return tk.request("GET", path, { headers });
}

for (const backend of await databaseBackends()) {
  const t = suite(`images on ${backend.name}`);
  // One kernel for the suite: every test has partners of its own, and reads only their images, jobs and ledger.
  const tk = suiteKernel(t, backend, {
    plugins: [account, imagesSandbox, images],
    start: true,
    env: { SANDBOX_LATENCY_MS: "40", PUBLIC_URL: "https://media.example.test" },
  });

  t("generates a real PNG of the implied size, served with its headers", async () => {
    const { key, id } = await tk.partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "A red fox in the snow", model: "image-b-2", aspect_ratio: "16:9", partner_job_id: "job/1" },
    });
    assert.is(res.status, 202, JSON.stringify(res.body));
    assert.is(res.body.credits_used, 21); // image-b-2 1K: standard 19, api_plus10 ceil(20.9)
    assert.is(res.body.credits_remaining, 79);
    assert.ok(/^req_/.test(res.body.request_id));
    assert.equal(res.body.generation_ids, [res.body.generation_id]);
    assert.equal(res.body.public_ids, [res.body.public_id]);
    assert.match(res.body.public_id, /^svc-[0-9a-f]{8}$/);

    const done = await waitFor(tk, key, res.body.generation_id);
    assert.is(done.body.status, "success");
    assert.is(done.body.model, "Image B 2");
    assert.is(done.body.aspect_ratio, "16:9");
    assert.is(done.body.resolution, "1K");
    assert.is(done.body.prompt, "A red fox in the snow");
    assert.is(done.body.metadata_removed, false);
    assert.ok(done.body.image_url.startsWith("https://media.example.test/media/images/"));
    const byPublic = await tk.request("GET", `/image-status/${res.body.public_id}`, { key });
    assert.equal(byPublic.body.image_url, done.body.image_url);

    const media = await fetchMedia(tk, done.body.image_url);
    assert.is(media.status, 200);
    assert.is(media.headers.get("content-type"), "image/png");
    assert.ok(media.headers.get("cache-control")!.includes("max-age"));
    const bytes = new Uint8Array(Buffer.from(media.body, "latin1"));
    void bytes;
    const raw = await tk.kernel.blobs.get(new URL(done.body.image_url).pathname.slice("/media/".length));
    assert.ok(raw);
    assert.is(Number(media.headers.get("content-length")), raw!.byteLength);
    assert.equal(pngInfo(raw!), { width: 1024, height: 576, colorType: 2 });
    assert.ok(metadataChunks(raw!).includes("eXIf") && metadataChunks(raw!).includes("iTXt"));

    const range = await fetchMedia(tk, done.body.image_url, { range: "bytes=0-7" });
    assert.is(range.status, 206);
    assert.is(range.headers.get("content-range"), `bytes 0-7/${raw!.byteLength}`);
    assert.is(range.headers.get("content-length"), "8");
    const outside = await fetchMedia(tk, done.body.image_url, { range: `bytes=${raw!.byteLength}-` });
    assert.is(outside.status, 416);
    const missing = await tk.request("GET", "/media/images/nothing-here.png");
    assert.equal(errorBody(missing), { error: "Not found" });
    assert.is(missing.status, 404);
    const traversal = await tk.request("GET", "/media/images/..%2F..%2Fpasswd");
    assert.is(traversal.status, 404);

    if (EXIFTOOL) {
      const tags = exifAndXmp(raw!);
      assert.is(tags.ImageDescription, "A red fox in the snow");
      assert.ok(String(tags.DigitalSourceType).includes("trainedAlgorithmicMedia"));
    }

    await newestListed(tk, key, "/images", "images", 1, {
      partner_job_id: "job/1",
      model_used: "image-b-2",
      status: "success",
      credits_used: 21,
      image_url: done.body.image_url,
    });
    assert.is(await ledgerSum(tk, id), 79);
  });

  t("strip_metadata stores a file without EXIF/XMP and says so from the file", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "clean", model: "image-b-2", strip_metadata: true },
    });
    const done = await waitFor(tk, key, res.body.public_id);
    assert.is(done.body.metadata_removed, true);
    const raw = await tk.kernel.blobs.get(new URL(done.body.image_url).pathname.slice("/media/".length));
    assert.equal(metadataChunks(raw!), []);
    if (EXIFTOOL) {
      const tags = exifAndXmp(raw!);
      assert.is(tags.ImageDescription, undefined);
      assert.is(tags.DigitalSourceType, undefined);
    }
  });

  t("same request, same picture; another prompt, another picture", async () => {
    const { key } = await tk.partner({ credits: 200 });
    const ids: string[] = [];
    for (const prompt of ["a lighthouse", "a lighthouse", "a windmill"]) {
      const res = await tk.request("POST", "/generate-image", { key, body: { prompt, model: "image-b-2" } });
      ids.push(res.body.public_id);
    }
    const files = [];
    for (const id of ids) {
      const done = await waitFor(tk, key, id);
      files.push(
        Buffer.from(
          (await tk.kernel.blobs.get(new URL(done.body.image_url).pathname.slice("/media/".length)))!,
        ).toString("hex"),
      );
    }
    assert.is(files[0], files[1]);
    assert.is.not(files[0], files[2]);
  });

  t("quantity: one charge rounded once, one job per image, shares sum to the charge", async () => {
    const { key, id } = await tk.partner({ credits: 200 });
    const res = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "four cats", model: "image-a-pro", quantity: 4, quality: "4K", aspect_ratio: "9:16" },
    });
    assert.is(res.status, 202);
    assert.is(res.body.credits_used, 97); // 4 x 22 = 88 standard, ceil(96.8)
    assert.is(res.body.generation_ids.length, 4);
    assert.is(res.body.public_ids.length, 4);
    assert.not.ok("generation_id" in res.body);
    for (const gid of res.body.generation_ids) {
      const done = await waitFor(tk, key, gid, 60_000);
      assert.is(done.body.status, "success");
    }
    const raw = await tk.kernel.blobs.get(
      new URL(
        (await tk.request("GET", `/image-status/${res.body.generation_ids[0]}`, { key })).body.image_url,
      ).pathname.slice("/media/".length),
    );
    assert.equal(pngInfo(raw!), { width: 2304, height: 4096, colorType: 2 });
    const ledger = await tk.request("GET", "/transactions", { key });
    assert.is(ledger.body.transactions.filter((t: any) => t.type === "usage").length, 1);
    const list = await tk.request("GET", "/images", { key });
    assert.is(
      list.body.images.reduce((n: number, i: any) => n + i.credits_used, 0),
      97,
    );
    assert.is(await ledgerSum(tk, id), 103);
  });

  t("[sandbox:fail] fails the job with a sanitized error and one refund", async () => {
    const { key, id } = await tk.partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "boom [sandbox:fail]", model: "image-b-2" },
    });
    assert.is(res.body.credits_remaining, 79);
    const done = await waitFor(tk, key, res.body.generation_id);
    assert.is(done.body.status, "failed");
    assert.is(done.body.error, IMAGE_ERRORS.failed);
    assert.not.ok(/sandbox|provider|primary/i.test(done.body.error));
    const me = await tk.request("GET", "/me", { key });
    assert.is(me.body.credits_remaining, 100);
    const ledger = await tk.request("GET", "/transactions", { key });
    assert.is(ledger.body.transactions.filter((t: any) => t.type === "refund").length, 1);
    assert.is(await ledgerSum(tk, id), 100);
  });

  t("a transient failure moves to the model's second provider", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const withFallback = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "flaky [sandbox:flaky]", model: "image-b-2" },
    });
    assert.is((await waitFor(tk, key, withFallback.body.generation_id)).body.status, "success");
    const without = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "flaky [sandbox:flaky]", model: "image-b-2-5-flare" },
    });
    assert.is((await waitFor(tk, key, without.body.generation_id)).body.status, "failed");
  });

  t("transparent background on image-b-2-5 gives an RGBA PNG", async () => {
    const { key } = await tk.partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "a bottle", model: "image-b-2-5-sunburst", background: "transparent", aspect_ratio: "9:8" },
    });
    const done = await waitFor(tk, key, res.body.generation_id);
    const raw = await tk.kernel.blobs.get(new URL(done.body.image_url).pathname.slice("/media/".length));
    assert.equal(pngInfo(raw!), { width: 1024, height: 912, colorType: 6 });
  });

  t("every invalid request answers the spec's text and changes nothing", async () => {
    // More cases than the 10/min the spec allows; refused requests still count against it.
    const { key, id } = await tk.partner({ credits: 100, limits: { rate_limits: { "POST /generate-image": 100 } } });
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, "Please provide a prompt"],
      [{ prompt: "  " }, 400, "Please provide a prompt"],
      [
        { prompt: "x", model: "image-z" },
        400,
        "Invalid model. Allowed: image-a-pro, image-b-2, image-b-2-5-flare, image-b-2-5-sunburst",
      ],
      [{ prompt: "x", aspect_ratio: "21:9" }, 400, "Invalid aspect_ratio. Allowed: 1:1, 9:16, 16:9, 3:4, 4:3"],
      [{ prompt: "x", model: "image-b-2", aspect_ratio: "4:3" }, 400, "Invalid aspect_ratio. Allowed: 1:1, 16:9, 9:16"],
      [
        { prompt: "x", model: "image-b-2-5-flare", aspect_ratio: "9:8", quality: "2K" },
        400,
        IMAGE_ERRORS.oneKOnly("9:8"),
      ],
      [
        { prompt: "x", model: "image-b-2", quality: "4K", aspect_ratio: "1:1" },
        400,
        IMAGE_ERRORS.impossible("image-b-2", "4K", "1:1"),
      ],
      [{ prompt: "x", model: "image-b-2", quality: "4K" }, 400, IMAGE_ERRORS.impossible("image-b-2", "4K", "1:1")],
      [{ prompt: "x", quality: "1K" }, 400, "Invalid quality. Allowed: 2K, 4K"],
      [{ prompt: "x", strip_metadata: "yes" }, 400, "strip_metadata must be true or false"],
      [{ prompt: "x", strip_metadata: null }, 400, "strip_metadata must be true or false"],
      [{ prompt: "x", quantity: 5 }, 400, IMAGE_ERRORS.invalidQuantity],
      [
        { prompt: "x", reference_image_urls: ["http://example.com/a.png"] },
        400,
        "Invalid reference image URL: http://example.com/a.png",
      ],
      [
        { prompt: "x", reference_image_urls: ["https://user@example.com/a.png"] },
        400,
        "Invalid reference image URL: https://user@example.com/a.png",
      ],
      [{ prompt: "x", model: "image-b-2-5-flare", background: "glass" }, 400, IMAGE_ERRORS.invalidBackground],
      [
        { prompt: "x", partner_job_id: "bad id!" },
        400,
        "partner_job_id must be 1-64 characters: letters, digits, '-', '/' or '_'",
      ],
      [
        { prompt: "x", ref_images: [{ base64: "A".repeat(28_000_000), mime_type: "image/png" }] },
        413,
        "ref_images[].base64 too large (max 20 MB each)",
      ],
      ["not json", 400, "Request body must be JSON"],
    ];
    for (const [body, status, error] of cases) {
      const res = await tk.request("POST", "/generate-image", { key, body });
      assert.is(res.status, status, JSON.stringify(body).slice(0, 100));
      assert.is(res.body.error, error);
    }
    // Ignored by other models, so not an error there.
    assert.is(
      (
        await tk.request("POST", "/generate-image", {
          key,
          body: { prompt: "x", model: "image-b-2", background: "glass" },
        })
      ).status,
      202,
    );
    const jobs = await tk.kernel.database.kysely.selectFrom("jobs").select("id").where("partner_id", "=", id).execute();
    assert.is(jobs.length, 1);
    assert.is(await ledgerSum(tk, id), 79);
  });

  t("402 with credits_remaining, and custom tier without a rate answers 400", async () => {
    const { key } = await tk.partner({ credits: 16 });
    const res = await tk.request("POST", "/generate-image", { key, body: { prompt: "x" } });
    assert.is(res.status, 402);
    assert.equal(errorBody(res), { error: "Insufficient credits. Need 17 credits.", credits_remaining: 16 });
    // Reference uploads are written before the charge (the job may read them at once); a refused charge
    // removes the ones it created, and leaves an identical file another request stored.
    const ref = (n: number) => ({
      base64: Buffer.from(encodePng(2, 2, new Uint8Array(12).fill(n), 3)).toString("base64"),
      mime_type: "image/png",
    });
    const refKeys = async () => (await tk.kernel.blobs.keys()).filter((k) => k.startsWith("images/refs/")).sort();
    const rich = await tk.partner({ credits: 100 });
    assert.is(
      (await tk.request("POST", "/generate-image", { key: rich.key, body: { prompt: "x", ref_images: [ref(1)] } }))
        .status,
      202,
    );
    const kept = await refKeys();
    assert.is(kept.length, 1);
    const refused = await tk.request("POST", "/generate-image", {
      key,
      body: { prompt: "x", ref_images: [ref(1), ref(2)] },
    });
    assert.is(refused.status, 402);
    assert.equal(await refKeys(), kept, "another request's reference stays, and no file from a refused request");
    const custom = await tk.partner({ credits: 100, tier: "custom" });
    const c = await tk.request("POST", "/generate-image", { key: custom.key, body: { prompt: "x" } });
    assert.is(c.status, 400);
    const std = await tk.partner({ credits: 100, tier: "standard" });
    assert.is(
      (await tk.request("POST", "/generate-image", { key: std.key, body: { prompt: "x", quantity: 2 } })).body
        .credits_used,
      30,
    );
  });

  t("another partner's image is 404, like a missing one", async () => {
    const a = await tk.partner({ credits: 100 });
    const b = await tk.partner({ credits: 100 });
    const res = await tk.request("POST", "/generate-image", {
      key: a.key,
      body: { prompt: "mine", model: "image-b-2" },
    });
    for (const id of [res.body.generation_id, res.body.public_id, "999999", "svc-00000000", "abc"]) {
      const other = await tk.request("GET", `/image-status/${id}`, { key: b.key });
      assert.is(other.status, 404);
      assert.equal(errorBody(other), { error: "Not found" });
    }
    assert.is((await tk.request("GET", "/images", { key: b.key })).body.total, 0);
  });

  t("200 concurrent requests of one account all end; balance equals the ledger", async () => {
    const { key, id } = await tk.partner({
      credits: 10_000,
      limits: { rate_limits: { "POST /generate-image": 1000, "GET /image-status/<gen_id>": 1_000_000 } },
    });
    // Every tenth fails in the sandbox, so refunds race with charges. 16:9 (1024x576, the same price as 1:1)
    // for a smaller picture: 180 renders are most of the test's time.
    const bodies = Array.from({ length: 200 }, (_, i) => ({
      prompt: `${i % 10 === 0 ? "[sandbox:fail] " : ""}tile ${i}`,
      model: "image-b-2",
      aspect_ratio: "16:9",
    }));
    const submitted = await Promise.all(bodies.map((body) => tk.request("POST", "/generate-image", { key, body })));
    assert.equal(
      submitted.map((r) => r.status),
      bodies.map(() => 202),
    );
    assert.is(new Set(submitted.map((r) => r.body.generation_id)).size, 200);

    // One query until every job has ended (200 pollers at once were a load of their own), then each status once.
    const running = () =>
      tk.kernel.database.kysely
        .selectFrom("jobs")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("partner_id", "=", id)
        .where("finished_at", "is", null)
        .executeTakeFirstOrThrow();
    for (const until = Date.now() + 180_000; Number((await running()).n) > 0; ) {
      if (Date.now() > until) throw new Error(`${(await running()).n} of 200 jobs still running`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const ended = await Promise.all(submitted.map((r) => waitFor(tk, key, r.body.generation_id, 30_000)));
    const statuses = ended.map((r) => r.body.status);
    assert.is(statuses.filter((s) => s === "failed").length, 20);
    assert.is(statuses.filter((s) => s === "success").length, 180);

    const rows = await tk.kernel.database.kysely
      .selectFrom("ledger")
      .select(["type", "amount"])
      .where("partner_id", "=", id)
      .execute();
    assert.is(rows.filter((r) => r.type === "usage").length, 200);
    assert.is(rows.filter((r) => r.type === "refund").length, 20);
    const balance = await tk.kernel.accounts.balance(id);
    assert.is(balance, await ledgerSum(tk, id));
    assert.is(balance, 10_000 - 180 * 21);
  });

  t.run();
}
