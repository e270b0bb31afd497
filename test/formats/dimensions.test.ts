// Picture sizes from headers: real files (the shared fixtures, and small animations made by ffmpeg, stored
// here as base64) read as ffprobe reads them; crafted headers declaring bombs read as declared, without
// anything being decoded; files that hide their size behind endless items read as unknown.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { DIMENSION_SCAN_LIMIT, pictureSize } from "../../lib/formats/dimensions.ts";
import { jpegSegment, riffChunk, writePng, writeRiff } from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes } from "./helpers.ts";

const t = suite("formats: picture dimensions");

const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));

// ffmpeg 5.1: testsrc2 12x8, 3 frames at 5 fps (apng, gif, libwebp -loop 0); 14x10 single frames (libwebp, lossy and -lossless 1).
const ANIM_PNG = b64(
  "iVBORw0KGgoAAAANSUhEUgAAAAwAAAAICAIAAABChommAAAACXBIWXMAAAABAAAAAQBPJcTWAAAACGFjVEwAAAADAAAAAM7tusAAAAAaZmNUTAAAAAAAAAAMAAAACAAAAAAAAAAAAAEABQAAEHrwvQAAAFhJREFUeJxj+MvAAEQM/0Do718QgnCAPCBi+P8fhEhRZAdCtrYgBOGAmbYMdnYgNICKQs1A6HGTCRC9q9MDIhUTYSBCV7R1mhtQRRADQwEDA1BR//w6oCIAgTZQX+Ptwx0AAAAaZmNUTAAAAAEAAAABAAAAAQAAAAAAAAAAAAEABQAAylCdOQAAABBmZEFUAAAAAnicY/jLwAAAAvsA/m5zzDQAAAAaZmNUTAAAAAMAAAABAAAAAQAAAAAAAAAAAAEABQAAJ8ZO0AAAABBmZEFUAAAABHicY/jLwAAAAvsA/s6WE+kAAAAASUVORK5CYII=",
);
const ANIM_WEBP = b64(
  "UklGRl4CAABXRUJQVlA4WAoAAAASAAAACwAABwAAQU5JTQYAAAD/////AABBTk1GtgAAAAAAAAAAAAsAAAcAAMgAAABWUDggngAAAPADAJ0BKgwACAACADQlsAJ0RwBkgH6k9ZF+sHo6FKr/zJYejDCDvIAA/u+UeaaCldTf9de4Tv+L9x7TCQvKcXx2DmBepNVdghT7qgqfRV7G5kL65YaSf3cwKdGg7D+b5Teoftjb7flzp7eyN3ohuSAb/LEjP425vb/kz0ZP/XvyKv3H5L/4uRax/4dy67jdaR/1QVFtzBASpkUsAAAAQU5NRrYAAAAAAAAAAAALAAAHAADIAAAAVlA4IJ4AAADwAwCdASoMAAgAAgA0JbACdEcAZIB+pPWRfrB6OhSq/8yWHowwg7yAAP7vlHmmgpXU3/XXuE7/i/ce0wkLynF8dg5gXqTVXYIU+6oKn0VexuZC+uWGkn93MCnRoOw/m+U3qH7Y2+35c6e3sjd6IbkgG/yxIz+Nub2/5M9GT/178ir9x+S/+LkWsf+Hcuu43Wkf9UFRbcwQEqZFLAAAAEFOTUa2AAAAAAAAAAAACwAABwAAyAAAAFZQOCCeAAAA8AMAnQEqDAAIAAIANCWwAnRHAGSAfqT1kX6wejoUqv/Mlh6MMIO8gAD+75R5poKV1N/117hO/4v3HtMJC8pxfHYOYF6k1V2CFPuqCp9FXsbmQvrlhpJ/dzAp0aDsP5vlN6h+2Nvt+XOnt7I3eiG5IBv8sSM/jbm9v+TPRk/9e/Iq/cfkv/i5FrH/h3LruN1pH/VBUW3MEBKmRSwAAAA=",
);
const LOSSLESS_WEBP = b64(
  "UklGRp4BAABXRUJQVlA4TJEBAAAvDUACAAfjILZtVTnX7/f/gQAUoAEdCUQjd7cajiPZVpX7vrvi7tkRJzuW5OAuz85/biTbVqKDu2tMEVHkLILVExLLuLvP/MefhGA/BAGGAtgmkG/NRFQMJhpwto5fRTdxRYE3LHFzvKxcvH9I2p6h6WO7UPmwA9DD90fslc/+aExr8TOZfFHs+cdlEn/aqF8Ll0OtPII5flxxaN7+Z5QcaKB/sAYAkmCAAFIQBVaAEdTmLwkzA3oUjP8QAPvBvjJSuh8izp8YHyQs+pfhXdpsAG37hB8pF97ZDbkHy5HhF95caxlzk18jE/OwGnZupazNX9heI/fJHooSb4vCca1VYBuvEne7Mt8GTsPGF6npQiP2xr7XMrgWAMBMtpuVsWxz2baXXf//F91Tn7CL6P8cAN8F0xjH8805/VcceO80Oj9en68ncOOBO1XWSqe93WoxrzfAFSui/FGVbSbjav6HgpI5RAhKb1guICWb6LUnI0m320K5eL8TFIZjMTqA0t1W6Bd2Wq3VoWSzEVZlclZBCAA=",
);
const LOSSY_WEBP = b64(
  "UklGRsQAAABXRUJQVlA4ILgAAABQAwCdASoOAAoAAgA0JbACdHJJeYB+gHWLeUYUs8rmA1cMAAD+75R61tcf3GOkwVF3Id0PzfI9nJVgqwmv9SA+6cuf7ZK50sbidbkh6+F+/qupvQwUCWv3X5+qjuf/uochZB+cXCa/2QR9QW/5Strp/8qwTM/mjtt+hr9zCbc/xKIZ/xCrb/T8uf7m/4/8Hd/L1D5L4twJ/gjY/bJ3VrlGv8f85PQ/qT86ZJf7r2l+t5T9L/j+5FgA",
);
const ANIM_GIF = b64(
  "R0lGODlhDAAIAPcfMQAAACQAAEgAAGwAAJAAALQAANgAAPwAAAAkACQkAEgkAGwkAJAkALQkANgkAPwkAABIACRIAEhIAGxIAJBIALRIANhIAPxIAABsACRsAEhsAGxsAJBsALRsANhsAPxsAACQACSQAEiQAGyQAJCQALSQANiQAPyQAAC0ACS0AEi0AGy0AJC0ALS0ANi0APy0AADYACTYAEjYAGzYAJDYALTYANjYAPzYAAD8ACT8AEj8AGz8AJD8ALT8ANj8APz8AAAAVSQAVUgAVWwAVZAAVbQAVdgAVfwAVQAkVSQkVUgkVWwkVZAkVbQkVdgkVfwkVQBIVSRIVUhIVWxIVZBIVbRIVdhIVfxIVQBsVSRsVUhsVWxsVZBsVbRsVdhsVfxsVQCQVSSQVUiQVWyQVZCQVbSQVdiQVfyQVQC0VSS0VUi0VWy0VZC0VbS0Vdi0Vfy0VQDYVSTYVUjYVWzYVZDYVbTYVdjYVfzYVQD8VST8VUj8VWz8VZD8VbT8Vdj8Vfz8VQAAqiQAqkgAqmwAqpAAqrQAqtgAqvwAqgAkqiQkqkgkqmwkqpAkqrQkqtgkqvwkqgBIqiRIqkhIqmxIqpBIqrRIqthIqvxIqgBsqiRsqkhsqmxsqpBsqrRsqthsqvxsqgCQqiSQqkiQqmyQqpCQqrSQqtiQqvyQqgC0qiS0qki0qmy0qpC0qrS0qti0qvy0qgDYqiTYqkjYqmzYqpDYqrTYqtjYqvzYqgD8qiT8qkj8qmz8qpD8qrT8qtj8qvz8qgAA/yQA/0gA/2wA/5AA/7QA/9gA//wA/wAk/yQk/0gk/2wk/5Ak/7Qk/9gk//wk/wBI/yRI/0hI/2xI/5BI/7RI/9hI//xI/wBs/yRs/0hs/2xs/5Bs/7Rs/9hs//xs/wCQ/ySQ/0iQ/2yQ/5CQ/7SQ/9iQ//yQ/wC0/yS0/0i0/2y0/5C0/7S0/9i0//y0/wDY/yTY/0jY/2zY/5DY/7TY/9jY//zY/wD8/yT8/0j8/2z8/5D8/7T8/9j8//z8/yH/C05FVFNDQVBFMi4wAwEAAAAh+QQEFAAfACwAAAAADAAIAAAIWQAPHMCB48cPYMAOHcOHTyBBgwiPLWx4AAIECRIAABEgBAIUAwcQQEggAQiQIEKQQBFoUUIEjQKCeBQokqTJIAJUsoQwQYEJLye8REhCE4KCMl4GDDhBKkJAACH5BAUUAAAALAsABwABAAEAAAgEAAEEBAAh+QQFFAAAACwLAAcAAQABAAAIBAABBAQAOw==",
);

const be32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const le24 = (n: number) => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255];
const le16 = (n: number) => [n & 255, (n >>> 8) & 255];
const ihdr = (w: number, h: number) => ({
  type: "IHDR",
  data: Uint8Array.from([...be32(w), ...be32(h), 8, 6, 0, 0, 0]),
});
const IEND = { type: "IEND", data: new Uint8Array(0) };
const IDAT = { type: "IDAT", data: new Uint8Array(4) };

t("real files read as ffprobe reads them", () => {
  assert.equal(pictureSize(fixture("C.jpg")), { format: "jpeg", width: 2048, height: 1365, frames: 1 });
  assert.equal(pictureSize(fixture("earth_apollo17.jpg")), { format: "jpeg", width: 375, height: 375, frames: 1 });
  assert.equal(pictureSize(fixture("sample1.png")), { format: "png", width: 1024, height: 683, frames: 1 });
  assert.equal(pictureSize(fixture("libpng-test_with_url.png")), { format: "png", width: 91, height: 69, frames: 1 });
  assert.equal(pictureSize(fixture("test_xmp.webp")), { format: "webp", width: 128, height: 128, frames: 1 });
  assert.equal(pictureSize(LOSSY_WEBP), { format: "webp", width: 14, height: 10, frames: 1 });
  assert.equal(pictureSize(LOSSLESS_WEBP), { format: "webp", width: 14, height: 10, frames: 1 });
});

t("animations: their frames counted (APNG acTL, WebP ANMF, GIF image descriptors)", () => {
  assert.equal(pictureSize(ANIM_PNG), { format: "png", width: 12, height: 8, frames: 3 });
  assert.equal(pictureSize(ANIM_WEBP), { format: "webp", width: 12, height: 8, frames: 3 });
  assert.equal(pictureSize(ANIM_GIF), { format: "gif", width: 12, height: 8, frames: 3 });
});

t("bomb headers read as declared, nothing decoded", () => {
  assert.equal(pictureSize(writePng([ihdr(50_000, 50_000), IDAT, IEND])), {
    format: "png",
    width: 50_000,
    height: 50_000,
    frames: 1,
  });
  const apng = writePng([
    ihdr(1000, 1000),
    { type: "acTL", data: Uint8Array.from([...be32(1_000_000), ...be32(0)]) },
    IDAT,
    IEND,
  ]);
  assert.equal(pictureSize(apng), { format: "png", width: 1000, height: 1000, frames: 1_000_000 });
  // JPEG: an APP0 before the frame header (skipped by its length), SOF2 of 65,000 x 60,000.
  const jpeg = bytes(
    [0xff, 0xd8],
    jpegSegment(0xe0, bytes("JFIF\0", [1, 1, 0, 0, 1, 0, 1, 0, 0])),
    jpegSegment(
      0xc2,
      Uint8Array.from([8, 60_000 >> 8, 60_000 & 255, 65_000 >> 8, 65_000 & 255, 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]),
    ),
    [0xff, 0xd9],
  );
  assert.equal(pictureSize(jpeg), { format: "jpeg", width: 65_000, height: 60_000, frames: 1 });
  // WebP VP8X: a 16384 x 16384 canvas, still and animated (ANMF chunks counted).
  const vp8x = (flags: number) => riffChunk("VP8X", Uint8Array.from([flags, 0, 0, 0, ...le24(16383), ...le24(16383)]));
  assert.equal(pictureSize(writeRiff("WEBP", [vp8x(0)])), { format: "webp", width: 16384, height: 16384, frames: 1 });
  const frames = Array.from({ length: 500 }, () => riffChunk("ANMF", new Uint8Array(16)));
  assert.equal(pictureSize(writeRiff("WEBP", [vp8x(0x02), riffChunk("ANIM", new Uint8Array(6)), ...frames])), {
    format: "webp",
    width: 16384,
    height: 16384,
    frames: 500,
  });
  // GIF: a 10 x 10 screen, 20,000 frames of 1 x 1 with one empty data sub-block each, one reaching 4000 x 3000.
  const frame = (x: number, y: number) => [0x2c, ...le16(x), ...le16(y), ...le16(1), ...le16(1), 0, 2, 1, 0, 0];
  const gif = bytes(
    "GIF89a",
    [...le16(10), ...le16(10), 0, 0, 0],
    ...Array.from({ length: 20_000 }, () => frame(0, 0)),
    frame(3999, 2999),
    [0x3b],
  );
  assert.equal(pictureSize(gif), { format: "gif", width: 4000, height: 3000, frames: 20_001 });
});

t("headers hidden behind endless items, or unreadable, are unknown", () => {
  const many = Array.from({ length: DIMENSION_SCAN_LIMIT + 1 }, () => ({ type: "tEXt", data: new Uint8Array(0) }));
  assert.is(pictureSize(writePng([ihdr(100, 100), ...many, IDAT, IEND])), null);
  const comments = Array.from({ length: DIMENSION_SCAN_LIMIT + 1 }, () => jpegSegment(0xfe, new Uint8Array(0)));
  assert.is(
    pictureSize(bytes([0xff, 0xd8], ...comments, jpegSegment(0xc0, Uint8Array.from([8, 0, 10, 0, 10, 1, 1, 0x11, 0])))),
    null,
  );
  assert.is(pictureSize(bytes([0xff, 0xd8, 0xff, 0xda, 0, 2])), null, "a scan before any frame header");
  assert.is(pictureSize(writePng([ihdr(0, 100), IDAT, IEND])), null, "zero width");
  assert.is(
    pictureSize(writeRiff("WEBP", [riffChunk("VP8 ", new Uint8Array(10))])),
    null,
    "VP8 without its start code",
  );
  assert.is(pictureSize(bytes("not a picture at all")), null);
  assert.is(pictureSize(new Uint8Array(0)), null);
  // Truncated after the header: what it declares is what a decoder would try to make.
  assert.equal(pictureSize(writePng([ihdr(20_000, 20_000)])), {
    format: "png",
    width: 20_000,
    height: 20_000,
    frames: 1,
  });
});

t.run();
