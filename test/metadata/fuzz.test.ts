// The parsers against damaged input: seeded random truncations, byte flips and spliced lengths of every
// image fixture. Each case must come back cleaned or throw DamagedMediaError (the 422 path), nothing else;
// a hang would stop the run (the parsers' loops advance on every step; no wall-clock assert here). When a
// damaged file does come back, the copy must still be no larger than what was sent.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isDamaged } from "../../plugins/metadata/damage.ts";
import { imageFormatOf } from "../../plugins/metadata/image.ts";
import { cleanJpeg } from "../../plugins/metadata/jpeg.ts";
import { cleanPng } from "../../plugins/metadata/png.ts";
import { cleanWebp } from "../../plugins/metadata/webp.ts";
import { IMAGE_FIXTURES, loadFixture, seeded } from "./helpers.ts";

const t = suite("metadata removal: parser fuzzing");
const CASES = 400;
const CLEANERS = [cleanJpeg, cleanPng, cleanWebp];

function mutate(src: Uint8Array, rnd: () => number): Uint8Array {
  const kind = Math.floor(rnd() * 4);
  if (kind === 0) return src.slice(0, Math.floor(rnd() * src.length)); // truncation
  const out = src.slice();
  // Most structure sits in the first few kilobytes: aim there half of the time.
  const at = () => Math.floor((rnd() < 0.5 ? Math.min(src.length, 4096) : src.length) * rnd());
  if (kind === 1) {
    for (let i = 0, n = 1 + Math.floor(rnd() * 8); i < n; i++) {
      const i = at();
      out[i] = out[i]! ^ (1 << Math.floor(rnd() * 8));
    }
  } else if (kind === 2) {
    for (let i = 0, n = 1 + Math.floor(rnd() * 4); i < n; i++)
      out[at()] = [0x00, 0xff, 0x7f, 0x80][Math.floor(rnd() * 4)]!;
  } else {
    // A run of 0xFF / 0x00 (fill bytes, huge lengths, zero lengths).
    const start = at();
    out.fill(rnd() < 0.5 ? 0xff : 0x00, start, Math.min(out.length, start + 1 + Math.floor(rnd() * 8)));
  }
  return out;
}

async function survive(
  input: Uint8Array,
  clean: (b: Uint8Array) => Promise<{ bytes: Uint8Array }>,
  what: string,
): Promise<"ok" | "damaged"> {
  try {
    const out = await clean(input);
    assert.ok(out.bytes.length <= input.length, `${what}: grew`);
    return "ok";
  } catch (err) {
    if (isDamaged(err)) return "damaged";
    throw new Error(`${what}: threw ${String(err)}`);
  }
}

for (const [index, name] of IMAGE_FIXTURES.entries()) {
  t(`${name}: ${CASES} mutations end cleaned or damaged`, async () => {
    const src = loadFixture(name);
    const clean = imageFormatOf(src)!.clean;
    const rnd = seeded(0x5eed + index);
    const seen = { ok: 0, damaged: 0 };
    for (let i = 0; i < CASES; i++) seen[await survive(mutate(src, rnd), clean, `${name} case ${i}`)]++;
    // The mutations reach the structure, not only the pixels (in a PNG every byte is under a CRC, so there
    // nearly every mutation is damage; JPEG and WebP scan data is not checked and comes back).
    assert.ok(seen.damaged > CASES / 10, JSON.stringify(seen));
    if (!name.endsWith(".png")) assert.ok(seen.ok > 0, JSON.stringify(seen));
  });

  t(`${name}: every other parser refuses it as damaged, never anything else`, async () => {
    const src = loadFixture(name);
    for (const clean of CLEANERS) {
      if (clean === imageFormatOf(src)!.clean) continue;
      assert.is(await survive(src, clean, `${name} through ${clean.name}`), "damaged");
    }
  });
}

t("every truncation of a small fixture, byte by byte", async () => {
  const src = loadFixture("libpng-test_with_url.png");
  for (let n = 0; n < src.length; n++) await survive(src.subarray(0, n), cleanPng, `png[0:${n}]`);
  const webp = loadFixture("test_xmp.webp");
  for (let n = 0; n < webp.length; n += 7) await survive(webp.subarray(0, n), cleanWebp, `webp[0:${n}]`);
  const jpeg = loadFixture("earth_apollo17.jpg");
  for (let n = 0; n < 30_000; n += 13)
    assert.is(await survive(jpeg.subarray(0, n), cleanJpeg, `jpeg[0:${n}]`), "damaged");
});

t.run();
