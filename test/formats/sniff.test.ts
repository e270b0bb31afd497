// Image types by signature: the real fixtures, the choice among accepted types, and look-alikes that are not
// images (a RIFF that is not WebP, a PNG signature cut short, an ISO-BMFF file).
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { sniffImageType } from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes } from "./helpers.ts";

const t = suite("formats: sniff");

t("the fixtures by their bytes", () => {
  assert.is(sniffImageType(fixture("C.jpg")), "image/jpeg");
  assert.is(sniffImageType(fixture("sample1.png")), "image/png");
  assert.is(sniffImageType(fixture("test_xmp.webp")), "image/webp");
  assert.is(sniffImageType(fixture("video1.mp4")), null);
});

t("only the accepted types", () => {
  assert.is(sniffImageType(fixture("test_xmp.webp"), ["image/jpeg", "image/png"]), null);
  assert.is(sniffImageType(fixture("sample1.png"), ["image/jpeg", "image/png"]), "image/png");
});

t("look-alikes", () => {
  assert.is(sniffImageType(bytes("RIFF", [4, 0, 0, 0], "WAVE")), null);
  assert.is(sniffImageType(bytes([0x89], "PNG")), null);
  assert.is(sniffImageType(new Uint8Array(0)), null);
});

t.run();
