// Video metadata removal on both engines: the fixtures' C2PA, XMP and tags are found and gone, the picture
// and sound packets are the same bytes (ffmpeg stream hashes), MOV stays MOV, MP4 gets its index in front,
// and a truncated file is damaged.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { mp4Boxes } from "../../lib/formats/index.ts";
import { createMediaEngine, type MediaEngine, mp4MetadataCategories } from "../../lib/media/index.ts";
import { DamagedMediaError } from "../../plugins/metadata/damage.ts";
import { cleanVideo, hasMultiEditList, videoContainerOf } from "../../plugins/metadata/video.ts";
import { contains, ENGINE_MODES, loadFixture, VIDEO_FIXTURES } from "./helpers.ts";

const EXPECTED: Record<string, { removed: string[]; format: string }> = {
  "video1.mp4": { removed: ["c2pa", "xmp", "other"], format: "mp4" },
  "c.mov": { removed: ["other"], format: "mov" },
};

/** ffmpeg's per-stream SHA-256 of the packets (as a player would read them, or raw when edits are ignored). */
function streamHashes(bytes: Uint8Array, ignoreEdits: boolean): string[] {
  const dir = mkdtempSync(join(tmpdir(), "metadata-video-"));
  try {
    const file = join(dir, "in.bin");
    writeFileSync(file, bytes);
    const out = execFileSync(
      "ffmpeg",
      [
        "-v",
        "error",
        ...(ignoreEdits ? ["-ignore_editlist", "1"] : []),
        "-i",
        file,
        "-map",
        "0",
        "-c",
        "copy",
        "-f",
        "streamhash",
        "-",
      ],
      { encoding: "utf8" },
    );
    return out.trim().split("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function tags(bytes: Uint8Array): string {
  const dir = mkdtempSync(join(tmpdir(), "metadata-video-"));
  try {
    writeFileSync(join(dir, "f"), bytes);
    return execFileSync(
      "ffprobe",
      ["-v", "error", "-show_entries", "format_tags:stream_tags:chapters", "-of", "json", join(dir, "f")],
      { encoding: "utf8" },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const native = ENGINE_MODES.includes("native");

for (const mode of ENGINE_MODES) {
  const t = suite(`metadata removal: video (${mode})`);
  let engine: MediaEngine;
  t.before(() => {
    engine = createMediaEngine({ mode });
  });
  t.after(() => engine.close());

  t("every video fixture is known here", () => {
    assert.ok(VIDEO_FIXTURES.length >= 2);
    for (const f of VIDEO_FIXTURES) assert.ok(EXPECTED[f], f);
  });

  for (const name of VIDEO_FIXTURES) {
    t(`${name}: metadata found and gone, packets unchanged, container kept`, async () => {
      const input = loadFixture(name);
      const container = videoContainerOf(input)!;
      assert.is(container.format, EXPECTED[name]!.format);
      const out = await cleanVideo(engine, input, container);
      assert.equal(out.removed, EXPECTED[name]!.removed);
      assert.equal(mp4MetadataCategories(out.bytes), []);
      assert.not.ok(contains(out.bytes, "jumb") || contains(out.bytes, "c2pa"), "C2PA bytes left");
      assert.not.ok(contains(out.bytes, "<x:xmpmeta"), "XMP left");
      const top = [...mp4Boxes(out.bytes)].map((b) => b.type);
      assert.ok(
        top.indexOf("moov") >= 0 && top.indexOf("moov") < top.indexOf("mdat"),
        `index in front: ${top.join(",")}`,
      );
      const brand = Buffer.from(out.bytes.subarray(8, 12)).toString("latin1");
      assert.is(brand === "qt  ", container.format === "mov", `brand ${brand}`);
      if (native) {
        const raw = await hasMultiEditList(input);
        const before = streamHashes(input, raw).filter((l) => /,(v|a),/.test(l));
        assert.equal(streamHashes(out.bytes, raw), before);
        const left = JSON.parse(tags(out.bytes));
        // The ftyp brands are the container's structure, which ffprobe lists among the tags.
        const formatTags = Object.keys(left.format?.tags ?? {}).filter(
          (k) => !["major_brand", "minor_version", "compatible_brands"].includes(k),
        );
        assert.equal(formatTags, []);
        for (const s of left.streams ?? [])
          assert.not.ok(
            Object.keys(s.tags ?? {}).some((k) => !["language", "handler_name", "vendor_id"].includes(k)),
            JSON.stringify(s.tags),
          );
        assert.equal(left.chapters ?? [], []);
      }
    });
  }

  t("a truncated video is damaged; so is one with no picture or sound", async () => {
    const input = loadFixture("video1.mp4");
    for (const cut of [0.3, 0.7, 0.95]) {
      const part = input.subarray(0, Math.floor(input.length * cut));
      try {
        await cleanVideo(engine, part, videoContainerOf(part)!);
        assert.unreachable(`cut at ${cut} accepted`);
      } catch (err) {
        assert.instance(err, DamagedMediaError, String(err));
      }
    }
    const onlyFtyp = input.subarray(0, [...mp4Boxes(input)][0]!.end);
    try {
      await cleanVideo(engine, onlyFtyp, videoContainerOf(onlyFtyp)!);
      assert.unreachable("ftyp alone accepted");
    } catch (err) {
      assert.instance(err, DamagedMediaError, String(err));
    }
  });

  t.run();
}

{
  const t = suite("metadata removal: video containers");
  t("MP4 and MOV are told apart by their bytes; anything else is not a video", async () => {
    assert.is(videoContainerOf(loadFixture("video1.mp4"))!.format, "mp4");
    assert.is(videoContainerOf(loadFixture("c.mov"))!.format, "mov");
    assert.is(videoContainerOf(loadFixture("C.jpg")), null);
    assert.is(videoContainerOf(loadFixture("sample1.mp3")), null);
    assert.is(videoContainerOf(new Uint8Array(4)), null);
    assert.ok(await hasMultiEditList(loadFixture("c.mov")));
    assert.not.ok(await hasMultiEditList(loadFixture("video1.mp4")));
  });
  t.run();
}
