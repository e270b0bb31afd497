// libvips (wasm-vips) image work on the real-world fixtures: probing, resizing and converting. (Metadata removal
// is byte surgery on the shared format readers: test/metadata/surgery.test.ts and test/formats/.)
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  convertImage,
  createMediaEngine,
  type ImageFormat,
  isMediaError,
  loadVips,
  probeImage,
  resizeImage,
  withVips,
} from "../../lib/media/index.ts";
import { fixture } from "./util.ts";

const t = suite("media images (wasm-vips)");

const FIXTURES: Array<[string, ImageFormat, number, number, boolean]> = [
  ["earth_apollo17.jpg", "jpeg", 375, 375, false],
  ["C.jpg", "jpeg", 2048, 1365, false],
  ["sample1.png", "png", 1024, 683, false],
  ["libpng-test_with_url.png", "png", 91, 69, true],
  ["test_xmp.webp", "webp", 128, 128, false],
];

/** A JPEG whose EXIF orientation says "rotate 90° clockwise to display" (stored 60x40, shown 40x60). */
const rotatedJpeg = () =>
  withVips("failed", (vips, track) => {
    const img = track(
      track(vips.Image.black(60, 40, { bands: 3 }))
        .add([200, 30, 30])
        .cast("uchar"),
    );
    const copy = track(img.copy());
    copy.setInt("orientation", 6);
    copy.setString("exif-ifd0-Artist", "Someone Private");
    return copy.writeToBuffer(".jpg", { Q: 90 });
  });

t("loads once and is shared with the engines", async () => {
  const a = await loadVips();
  const engine = createMediaEngine({ mode: "wasm" });
  assert.is(await engine.vips(), a);
  await engine.close();
  assert.match(String(a.version()), /^8\./);
});

t("probes the fixtures", async () => {
  for (const [name, format, width, height, alpha] of FIXTURES) {
    const p = await probeImage(fixture(name));
    assert.equal(
      [p.format, p.width, p.height, p.hasAlpha, p.orientation, p.pages],
      [format, width, height, alpha, 1, 1],
      name,
    );
  }
  const earth = await probeImage(fixture("earth_apollo17.jpg"));
  assert.ok(earth.hasExif && earth.hasXmp && earth.hasIptc && earth.hasIccProfile);
  const rotated = await probeImage(await rotatedJpeg());
  assert.equal([rotated.width, rotated.height, rotated.orientation], [40, 60, 6]);
});

t("bad image bytes are a MediaError (422)", async () => {
  for (const bytes of [new Uint8Array(100).fill(1), fixture("C.jpg").subarray(0, 10)]) {
    try {
      await probeImage(bytes);
      assert.unreachable();
    } catch (e) {
      assert.ok(isMediaError(e) && e.code === "invalid_input" && e.status === 422, String(e));
      assert.not.match((e as Error).message, /vips/i);
    }
  }
});

t("resizes inside a box, covers a box, stretches, enlarges and converts", async () => {
  const c = fixture("C.jpg");
  const inside = await resizeImage(c, { width: 512, height: 512 });
  assert.equal([inside.width, inside.height, inside.format], [512, 341, "jpeg"]);
  assert.equal([(await probeImage(inside.bytes)).width, (await probeImage(inside.bytes)).format], [512, "jpeg"]);
  const cover = await resizeImage(c, { width: 200, height: 200, fit: "cover", format: "webp" });
  assert.equal([cover.width, cover.height, (await probeImage(cover.bytes)).format], [200, 200, "webp"]);
  const fill = await resizeImage(c, { width: 300, height: 100, fit: "fill", format: "png" });
  assert.equal([fill.width, fill.height], [300, 100]);
  const up = await resizeImage(fixture("earth_apollo17.jpg"), { width: 750 });
  assert.equal([up.width, up.height], [750, 750]);
  const noUp = await resizeImage(fixture("earth_apollo17.jpg"), { width: 750, enlarge: false });
  assert.equal([noUp.width, noUp.height], [375, 375]);
  // Alpha survives PNG → WebP, and JPEG output flattens it.
  const logo = fixture("libpng-test_with_url.png");
  assert.ok((await probeImage((await convertImage(logo, "webp")).bytes)).hasAlpha);
  assert.not.ok((await probeImage((await convertImage(logo, "jpeg")).bytes)).hasAlpha);
  // Resized output carries no EXIF/XMP, and is upright.
  const r = await resizeImage(await rotatedJpeg(), { width: 20 });
  const p = await probeImage(r.bytes);
  assert.equal([p.width, p.height, p.orientation, p.hasExif], [20, 30, 1, false]);
  try {
    await resizeImage(c, {});
    assert.unreachable();
  } catch (e) {
    assert.ok(isMediaError(e) && e.code === "failed");
  }
});

t.run();
