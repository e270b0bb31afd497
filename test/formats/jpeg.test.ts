// JPEG marker segments: a hand-made file with every kind of marker (fill bytes, stuffed and restart bytes in
// the scan, data after EOI), each structural refusal, truncation at every length, real fixtures.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { isJpeg, JPEG_EOI, JPEG_SOS, jpegSegment, jpegSegments, latin1 } from "../../lib/formats/index.ts";
import { fixture } from "../media/util.ts";
import { bytes, readsOrDamaged, throwsDamaged } from "./helpers.ts";

const t = suite("formats: jpeg");

const seg = (marker: number, payload: string | number[]) => jpegSegment(marker, bytes(payload));
const SCAN = [0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56]; // entropy data with a stuffed byte and a restart marker
const head = [0xff, 0xd8];
const frame = [seg(0xdb, [0, 1, 2, 3]), seg(0xc0, [8, 0, 1, 0, 1, 1, 1, 0x11, 0])];
const JPEG = bytes(
  head,
  seg(0xe0, "JFIF\0\x01\x01\0\0\x01\0\x01\0\0"),
  seg(0xe1, "Exif\0\0MM\0*"),
  [0xff, 0xff], // fill bytes before the next marker
  seg(0xfe, "a comment"),
  ...frame,
  seg(JPEG_SOS, [1, 1, 0, 0, 0x3f, 0]),
  SCAN,
  [0xff, JPEG_EOI],
  [0xff, 0xd8, 0x99, 0x99], // a second (MPF) image after EOI
);
const walk = (b: Uint8Array) => [...jpegSegments(b)];

t("segments tile the file from SOI to EOI, the scan's data with its SOS", () => {
  assert.ok(isJpeg(JPEG));
  const segs = walk(JPEG);
  assert.equal(
    segs.map((s) => s.marker),
    [0xe0, 0xe1, 0xfe, 0xdb, 0xc0, JPEG_SOS, JPEG_EOI],
  );
  assert.is(segs[0]!.start, 2);
  for (let i = 1; i < segs.length; i++) assert.is(segs[i]!.start, segs[i - 1]!.end);
  assert.is(segs.at(-1)!.end, JPEG.length - 4, "what follows EOI is left to the caller");
  const [app0, exif, com] = segs;
  assert.is(latin1(JPEG, app0!.body, app0!.body + 5), "JFIF\0");
  assert.is(latin1(JPEG, exif!.body, exif!.bodyEnd), "Exif\0\0MM\0*");
  assert.is(com!.end - com!.start, 2 + 4 + "a comment".length, "the fill bytes belong to the COM segment");
  const sos = segs[5]!;
  assert.equal([...JPEG.subarray(sos.bodyEnd, sos.end)], SCAN);
});

t("structural faults are refused", () => {
  throwsDamaged(() => walk(bytes([0x89, 0x50])), "no SOI");
  throwsDamaged(() => walk(bytes(head, [0x00, 0x01])), "no marker");
  throwsDamaged(() => walk(bytes(head, [0xff, 0xd8])), "a second SOI");
  throwsDamaged(
    () => walk(bytes(head, seg(JPEG_SOS, [1, 1, 0, 0, 0x3f, 0]), SCAN, [0xff, JPEG_EOI])),
    "a scan before the frame header",
  );
  throwsDamaged(() => walk(bytes(head, ...frame, [0xff, JPEG_EOI])), "no scan");
  throwsDamaged(() => walk(bytes(head, ...frame, seg(JPEG_SOS, [1]), SCAN)), "scan data without an end");
  throwsDamaged(() => walk(bytes(head, [0xff, 0xe1, 0x00, 0x01])), "a length under 2");
  throwsDamaged(() => walk(bytes(head, [0xff, 0xe1, 0xff, 0xff, 1, 2])), "a length past the end");
});

t("truncated at every length: damaged, never anything else", () => {
  const end = JPEG.length - 4;
  for (let n = 0; n < end; n++) throwsDamaged(() => walk(JPEG.subarray(0, n)), `jpeg[0:${n}]`);
  assert.is(
    readsOrDamaged(() => walk(JPEG.subarray(0, end)), "up to EOI"),
    "ok",
  );
});

t("the writer's length limit", () => {
  assert.is(jpegSegment(0xe1, new Uint8Array(0xfffd)).length, 0xfffd + 4);
  assert.throws(() => jpegSegment(0xe1, new Uint8Array(0xfffe)), RangeError);
});

t("the real fixtures walk to EOI", () => {
  for (const name of ["C.jpg", "earth_apollo17.jpg"]) {
    const b = fixture(name);
    const segs = walk(b);
    assert.is(segs.at(-1)!.marker, JPEG_EOI, name);
    assert.ok(
      segs.some((s) => s.marker === JPEG_SOS),
      name,
    );
    for (let i = 1; i < segs.length; i++) assert.is(segs[i]!.start, segs[i - 1]!.end, name);
  }
});

t.run();
