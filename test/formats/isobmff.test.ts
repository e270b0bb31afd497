// ISO-BMFF boxes: written and read back (plain, uuid, 64-bit sizes, size 0 to the end, nested), and the
// reader's promise on damaged input: it stops at the first box that does not fit, never throws, never loops;
// the first-box check that tells an ISO-BMFF file; the whole-file check for media cut short.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  appendTopLevelBox,
  isIsoBmffFirstBox,
  isoBmffBox,
  isoBmffFirstBox,
  isWholeIsoBmff,
  latin1,
  mp4Boxes,
} from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes } from "./helpers.ts";

const t = suite("formats: isobmff");

const types = (b: Uint8Array, from?: number, to?: number) => [...mp4Boxes(b, from, to)].map((x) => x.type);
const FILE = bytes(
  isoBmffBox("ftyp", bytes("isom", [0, 0, 2, 0])),
  isoBmffBox("moov", isoBmffBox("trak", bytes([1, 2, 3]))),
  isoBmffBox("mdat", new Uint8Array(5)),
);

t("written, then read back, nested boxes too", () => {
  const boxes = [...mp4Boxes(FILE)];
  assert.equal(
    boxes.map((x) => x.type),
    ["ftyp", "moov", "mdat"],
  );
  assert.equal(
    boxes.map((x) => [x.start, x.body, x.end]),
    [
      [0, 8, 16],
      [16, 24, 35],
      [35, 43, 48],
    ],
  );
  const moov = boxes[1]!;
  assert.equal(types(FILE, moov.body, moov.end), ["trak"]);
});

t("a uuid box carries its 16-byte id; appending adds one box at the end", () => {
  const uuid = "be7acfcb-97a9-42e8-9c71-999491e3afac";
  const out = appendTopLevelBox(FILE, "uuid", bytes("<x/>"), uuid);
  const last = [...mp4Boxes(out)].at(-1)!;
  assert.equal([last.type, last.start, last.end], ["uuid", FILE.length, out.length]);
  assert.is(Buffer.from(out.subarray(last.body, last.body + 16)).toString("hex"), uuid.replace(/-/g, ""));
  assert.is(latin1(out, last.body + 16, last.end), "<x/>");
  assert.equal([...out.subarray(0, FILE.length)], [...FILE]);
  assert.throws(() => isoBmffBox("uuid", new Uint8Array(0), "not-a-uuid"), RangeError);
});

t("64-bit sizes and size 0 (to the end)", () => {
  const big = bytes([0, 0, 0, 1], "mdat", [0, 0, 0, 0, 0, 0, 0, 20], [9, 9, 9, 9]);
  assert.equal(
    [...mp4Boxes(big)].map((x) => [x.type, x.body, x.end]),
    [["mdat", 16, 20]],
  );
  const toEnd = bytes(isoBmffBox("ftyp", bytes("isom")), [0, 0, 0, 0], "mdat", [1, 2, 3]);
  assert.equal(
    [...mp4Boxes(toEnd)].map((x) => [x.type, x.end]),
    [
      ["ftyp", 12],
      ["mdat", toEnd.length],
    ],
  );
});

t("damaged input ends the walk: truncation at every length, sizes too small or too large", () => {
  for (let n = 0; n <= FILE.length; n++) {
    const seen = types(FILE.subarray(0, n));
    assert.equal(seen, ["ftyp", "moov", "mdat"].slice(0, seen.length), `file[0:${n}]`);
  }
  for (const size of [1, 2, 7, 0xffffffff]) {
    const b = FILE.slice();
    new DataView(b.buffer).setUint32(16, size); // moov's size
    assert.equal(types(b), ["ftyp"], `size ${size}`);
  }
  const huge64 = bytes([0, 0, 0, 1], "mdat", [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
  assert.equal(types(huge64), []);
  assert.equal(types(new Uint8Array(4096)), ["\0\0\0\0"], "zeros: one box of size 0 to the end, then done");
});

t("an ISO-BMFF file by its first box: ftyp or an old QuickTime box, pnot only when asked, and it must fit", () => {
  assert.equal(isoBmffFirstBox(FILE), [...mp4Boxes(FILE)][0]);
  for (const type of ["moov", "mdat", "wide", "free", "skip"])
    assert.is(isoBmffFirstBox(isoBmffBox(type, new Uint8Array(4)))?.type, type);
  const pnot = bytes(isoBmffBox("pnot", new Uint8Array(12)), isoBmffBox("moov", new Uint8Array(0)));
  assert.is(isoBmffFirstBox(pnot), undefined);
  assert.is(isoBmffFirstBox(pnot, { pnot: true })?.type, "pnot");
  assert.ok(isIsoBmffFirstBox("pnot", { pnot: true }) && !isIsoBmffFirstBox("pnot") && !isIsoBmffFirstBox("RIFF"));
  assert.is(isoBmffFirstBox(bytes("RIFF", [4, 0, 0, 0], "WEBP")), undefined);
  assert.is(isoBmffFirstBox(FILE.subarray(0, 12)), undefined, "a first box past the end");
  assert.is(isoBmffFirstBox(new Uint8Array(0)), undefined);
});

t("a whole file: its boxes fit and one is the moov; cut inside a box, or without a moov, it is not", () => {
  assert.ok(isWholeIsoBmff(FILE));
  // Cut inside ftyp or moov (16 is ftyp alone: no moov), or inside mdat's body (43-47); a cut at a box's end
  // with less than a box header after it (35-42) reads as whole: the check reads boxes, not what they hold.
  for (let n = 1; n < FILE.length; n++)
    assert.is(isWholeIsoBmff(FILE.subarray(0, n)), n >= 35 && n < 43, `cut at ${n}`);
  assert.not.ok(
    isWholeIsoBmff(bytes(isoBmffBox("ftyp", bytes("isom", [0, 0, 2, 0])), isoBmffBox("mdat", new Uint8Array(5)))),
    "no moov",
  );
  assert.not.ok(isWholeIsoBmff(bytes(FILE, [0, 0, 0, 100], "free")), "a box running past the end");
});

t("the real fixtures' top-level boxes", () => {
  assert.equal(types(fixture("video1.mp4")), ["ftyp", "uuid", "moov", "uuid", "free", "mdat"]);
  assert.ok(types(fixture("c.mov")).includes("moov"));
});

t.run();
