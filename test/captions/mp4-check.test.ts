// uploads/mp4-check.ts: what passes as a captionable MP4 before any charge, on real files from the media engine
// (moov at the end, moov first, fragmented with an empty moov, audio only) and on built ones (sizes,
// defects, durations), whole or read across parts without being joined.
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  type ByteSource,
  bytesSource,
  checkMp4,
  PartChanged,
  partsSource,
} from "../../plugins/captions/uploads/mp4-check.ts";
import { box, ftyp, headerFor, mdatHeader, moov, realMp4, syntheticMp4 } from "./uploads-mp4.ts";

const MAX = 1800;
const check = (bytes: Uint8Array, maxSeconds = MAX) => checkMp4(bytesSource(bytes), { maxSeconds });
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.byteLength);
  return out;
};
/** `bytes` split into parts of `size`, read through partsSource, counting reads and the most held at once. */
function split(bytes: Uint8Array, size: number) {
  const stats = { reads: 0 };
  const parts = [];
  for (let at = 0; at < bytes.byteLength; at += size) {
    const slice = bytes.slice(at, at + size);
    parts.push({ size: slice.byteLength, read: async () => (stats.reads++, slice) });
  }
  return { src: partsSource(parts), stats };
}

const t = suite("mp4-check");

t("real MP4s from the media engine: moov last, moov first, fragmented, with audio", async () => {
  for (const movflags of [undefined, "+faststart", "frag_keyframe+empty_moov+default_base_moof"]) {
    const file = await realMp4(3, { audio: true, movflags });
    const verdict = await check(file);
    assert.ok(verdict.ok, `${movflags}: ${JSON.stringify(verdict)}`);
    if (verdict.ok) assert.ok(Math.abs(verdict.seconds - 3) < 0.2, `${movflags}: ${verdict.seconds}`);
    // The same verdict across parts of a few KB.
    const { src } = split(file, 4096);
    const parted = await checkMp4(src, { maxSeconds: MAX });
    assert.equal(parted, verdict, String(movflags));
    // Over a cap of 2 s: too long, fragmented or not.
    assert.equal(await check(file, 2), { ok: false, reason: "tooLong" }, String(movflags));
  }
});

t("an audio-only MP4 has no video", async () => {
  assert.equal(await check(await realMp4(1, { audioOnly: true })), { ok: false, reason: "noVideo" });
  assert.equal(await check(syntheticMp4(5000, { seconds: 4, tracks: ["soun"] })), { ok: false, reason: "noVideo" });
});

t("built files: the duration from the headers, the 1800 s cap", async () => {
  assert.equal(await check(syntheticMp4(10_000, { seconds: 12.5 })), { ok: true, seconds: 12.5 });
  assert.equal(await check(syntheticMp4(10_000, { seconds: 1800 })), { ok: true, seconds: 1800 });
  assert.equal(await check(syntheticMp4(10_000, { seconds: 1800.5 })), { ok: false, reason: "tooLong" });
  assert.equal(await check(syntheticMp4(10_000, { seconds: 3, tracks: ["soun", "vide"] })), { ok: true, seconds: 3 });
  // moov after the media (not fast-started).
  const tail = moov({ seconds: 7 });
  assert.equal(await check(concat(ftyp(), mdatHeader(100), new Uint8Array(100), tail)), { ok: true, seconds: 7 });
  // A 64-bit mdat size.
  const big = concat(
    ftyp(),
    moov({ seconds: 2 }),
    (() => {
      const h = new Uint8Array(16 + 50);
      const v = new DataView(h.buffer);
      v.setUint32(0, 1), h.set(new TextEncoder().encode("mdat"), 4), v.setBigUint64(8, 66n);
      return h;
    })(),
  );
  assert.equal(await check(big), { ok: true, seconds: 2 });
  // A last box of size 0 runs to the end of the file.
  const open = concat(
    ftyp(),
    moov({ seconds: 2 }),
    new Uint8Array([0, 0, 0, 0, 0x6d, 0x64, 0x61, 0x74]),
    new Uint8Array(500),
  );
  assert.equal(await check(open), { ok: true, seconds: 2 });
});

t("what is not an MP4 we can read", async () => {
  const notMp4 = { ok: false, reason: "notMp4" };
  const good = syntheticMp4(4000, { seconds: 2 });
  assert.equal(await check(new Uint8Array(0)), notMp4);
  assert.equal(await check(new TextEncoder().encode("<html><body>hello</body></html>")), notMp4);
  assert.equal(await check(new Uint8Array(5000).fill(0xff)), notMp4);
  // Cut short: the mdat claims more than there is.
  assert.equal(await check(good.subarray(0, 3000)), notMp4);
  // Extra bytes after the last box (8 or more: a box that is not there).
  assert.equal(await check(concat(good, new Uint8Array(64))), notMp4);
  // A tail shorter than a box header is ignored.
  assert.equal((await check(concat(good, new Uint8Array(3)))).ok, true);
  // No ftyp; media before the ftyp; no moov; no media; two moovs; no mvhd; zero duration.
  const m = moov({ seconds: 2 });
  assert.equal(await check(concat(m, mdatHeader(10), new Uint8Array(10))), notMp4);
  assert.equal(await check(concat(mdatHeader(10), new Uint8Array(10), ftyp(), m)), notMp4);
  assert.equal(await check(concat(ftyp(), mdatHeader(10), new Uint8Array(10))), notMp4);
  assert.equal(await check(concat(ftyp(), m)), notMp4);
  assert.equal(await check(concat(ftyp(), m, m, mdatHeader(0))), notMp4);
  assert.equal(await check(concat(ftyp(), box("moov"), mdatHeader(0))), notMp4);
  assert.equal(await check(syntheticMp4(4000, { seconds: 0 })), notMp4);
  // A box inside moov that overruns its parent.
  const broken = moov({ seconds: 2 });
  new DataView(broken.buffer).setUint32(8, 0x7fffffff);
  assert.equal(await check(concat(ftyp(), broken, mdatHeader(0))), notMp4);
  // A moov above the cap is refused without being read.
  assert.equal(await checkMp4(bytesSource(good), { maxSeconds: MAX, maxBoxBytes: 100 }), notMp4);
  // Leading free space before ftyp is fine (QuickTime writes `wide`).
  assert.equal((await check(concat(box("free", new Uint8Array(4)), good))).ok, true);
});

t("across parts: only the header boxes are read, one part held at a time, a vanished part is an error", async () => {
  // 64 MB in 8 MB parts, moov first: the walk reads part 0 (headers) and the part of the file's end only.
  const total = 64 * 1024 * 1024;
  const header = headerFor(total, { seconds: 100 });
  const partSize = 8 * 1024 * 1024;
  let reads = 0;
  const parts = Array.from({ length: total / partSize }, (_, i) => ({
    size: partSize,
    read: async () => {
      reads++;
      const out = new Uint8Array(partSize);
      if (i === 0) out.set(header);
      return out;
    },
  }));
  const src: ByteSource = partsSource(parts);
  assert.is(src.size, total);
  assert.equal(await checkMp4(src, { maxSeconds: MAX }), { ok: true, seconds: 100 });
  assert.ok(reads <= 2, `reads ${reads}`);

  // A moov that straddles two parts is read from both.
  const file = concat(
    ftyp(),
    moov({ seconds: 9, tracks: ["soun", "vide", "text"] }),
    mdatHeader(1000),
    new Uint8Array(1000),
  );
  for (const size of [17, 100, 333])
    assert.equal(await checkMp4(split(file, size).src, { maxSeconds: MAX }), { ok: true, seconds: 9 });

  const gone = partsSource([
    {
      size: 10,
      read: async () => {
        throw new PartChanged();
      },
    },
  ]);
  try {
    await checkMp4(gone, { maxSeconds: MAX });
    assert.unreachable("a vanished part must throw");
  } catch (err) {
    assert.instance(err, PartChanged);
  }
  const shrunk = partsSource([{ size: 4000, read: async () => new Uint8Array(10) }]);
  try {
    await checkMp4(shrunk, { maxSeconds: MAX });
    assert.unreachable("a part of the wrong size must throw");
  } catch (err) {
    assert.instance(err, PartChanged);
  }
});

t.run();
