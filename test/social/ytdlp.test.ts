// The yt-dlp extractor offline: argument building, `-J` parsing with the caps, the mapping of yt-dlp's
// messages to the plain reasons, the extractor choice, and the whole extract() against a stand-in yt-dlp
// (a script that answers like yt-dlp from local files), whose non-H.264 video must come out H.264/AAC.
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ExtractionError, SOCIAL_LIMITS } from "../../contracts/social.ts";
import { createMediaEngine, firstAudio, firstVideo } from "../../lib/media/index.ts";
import { chooseExtractor } from "../../plugins/social/extractor.ts";
import {
  classifyFailure,
  downloadArgs,
  infoArgs,
  parsePostInfo,
  progressOf,
  ytdlpExtractor,
} from "../../plugins/social/ytdlp.ts";
import { rejection } from "../helpers/assert.ts";
import { onAfterAll } from "../helpers/lifecycle.ts";

const t = suite("social yt-dlp extractor");

const single = {
  id: "7300000000000000000",
  title: "Morning routine",
  uploader: "someone",
  duration: 31.5,
  vcodec: "h264",
  requested_formats: [{ filesize: 4_000_000 }, { filesize_approx: 500_000 }],
};
const carousel = {
  _type: "playlist",
  title: "Trip",
  uploader: "traveller",
  entries: [
    { playlist_index: 1, title: "Trip", duration: 10, vcodec: "h264", filesize: 1000 },
    { playlist_index: 2, title: "photo", vcodec: "none" },
    { playlist_index: 3, title: "Trip", duration: 12, formats: [{ vcodec: "avc1.64001F" }], filesize_approx: 2000 },
  ],
};

t("arguments: the link after --, caps on items and size, no local config", () => {
  const a = infoArgs("https://www.tiktok.com/@a/video/1", SOCIAL_LIMITS);
  assert.equal(a.slice(-2), ["--", "https://www.tiktok.com/@a/video/1"]);
  assert.ok(a.includes("--ignore-config"));
  assert.equal(a.slice(a.indexOf("--playlist-items"), a.indexOf("--playlist-items") + 2), ["--playlist-items", "1-10"]);
  const d = downloadArgs("/tmp/x/info.json", "/tmp/x/out", SOCIAL_LIMITS);
  assert.equal(d.slice(d.indexOf("--max-filesize"), d.indexOf("--max-filesize") + 2), [
    "--max-filesize",
    String(200_000_000),
  ]);
  assert.equal(d.slice(d.indexOf("--load-info-json"), d.indexOf("--load-info-json") + 2), [
    "--load-info-json",
    "/tmp/x/info.json",
  ]);
  assert.ok(d.includes("--merge-output-format") && d.includes("--ignore-config"));
  assert.not.ok(
    d.some((x) => x.startsWith("http")),
    "the download reads the info file, not the link",
  );
});

t("-J output: one video, a carousel with a photo skipped", () => {
  assert.equal(parsePostInfo(JSON.stringify(single), SOCIAL_LIMITS), {
    title: "Morning routine",
    uploader: "someone",
    entries: [{ index: 1, duration: 31.5, bytes: 4_500_000 }],
  });
  const c = parsePostInfo(JSON.stringify(carousel), SOCIAL_LIMITS);
  assert.equal(
    c.entries.map((e) => e.index),
    [1, 3],
  );
  assert.is(c.title, "Trip");
});

t("-J output: the caps before downloading", () => {
  const reason = (info: unknown) => {
    try {
      parsePostInfo(JSON.stringify(info), SOCIAL_LIMITS);
      return "ok";
    } catch (err) {
      return err instanceof ExtractionError ? err.reason : "other";
    }
  };
  assert.is(reason({ ...single, duration: 601 }), "too_long");
  assert.is(
    reason({
      ...carousel,
      entries: [
        { duration: 300, vcodec: "h264" },
        { duration: 301, vcodec: "h264" },
      ],
    }),
    "too_long",
  );
  assert.is(reason({ ...single, requested_formats: [{ filesize: 210_000_000 }] }), "too_large");
  assert.is(reason({ _type: "playlist", entries: [{ vcodec: "none" }] }), "no_video");
  assert.is(reason({ ...single, duration: 600 }), "ok");
  assert.is(
    reason({ _type: "playlist", entries: Array.from({ length: 14 }, () => ({ duration: 5, vcodec: "h264" })) }),
    "ok",
  );
  assert.is(
    parsePostInfo(
      JSON.stringify({
        _type: "playlist",
        entries: Array.from({ length: 14 }, () => ({ duration: 5, vcodec: "h264" })),
      }),
      SOCIAL_LIMITS,
    ).entries.length,
    10,
  );
  assert.throws(
    () => parsePostInfo("not json{", SOCIAL_LIMITS),
    (e: unknown) => e instanceof ExtractionError && e.reason === "failed",
  );
});

t("yt-dlp's messages map to the plain reasons; network trouble is retried", () => {
  const cases: Array<[string, string | null]> = [
    [
      "ERROR: [Instagram] Cxyz: Requested content is not available, rate-limit reached or login required. Use --cookies",
      "login_required",
    ],
    ["ERROR: [facebook] 123: This video is only available for registered users. Sign in", "login_required"],
    ["ERROR: [TikTok] 1: This post may not be comfortable for some audiences. Log in for access", "login_required"],
    ["ERROR: [Instagram] Cxyz: There is no video in this post", "no_video"],
    ["ERROR: No video formats found!", "no_video"],
    ["ERROR: Unsupported URL: https://www.facebook.com/someone", "no_video"],
    ["ERROR: [TikTok] 1: Video not available, status code 10204", "unavailable"],
    ["ERROR: [facebook] 1: This video has been removed", "unavailable"],
    ["[download] File is larger than max-filesize (300000000 bytes > 209715200 bytes). Aborting.", "too_large"],
    [
      "ERROR: [TikTok] 1: Unable to download webpage: <urlopen error [Errno -3] Temporary failure in name resolution>",
      null,
    ],
    ["ERROR: unable to download video data: HTTP Error 503: Service Unavailable", "unavailable"],
    ["ERROR: [facebook] 1: Connection reset by peer", null],
    ["ERROR: something nobody has seen before", "failed"],
  ];
  for (const [text, reason] of cases) assert.is(classifyFailure(text), reason, text);
  assert.is(progressOf("[download]  42.5% of   10.00MiB at  1.00MiB/s ETA 00:05"), 0.425);
  assert.is(progressOf("[Merger] Merging formats"), null);
});

t("the extractor choice: sandbox by default, yt-dlp when asked and present, a clear boot error otherwise", () => {
  assert.equal(chooseExtractor({}), { kind: "sandbox" });
  assert.equal(chooseExtractor({ SOCIAL_EXTRACTOR: "auto", PATH: "/nonexistent" }), { kind: "sandbox" });
  assert.equal(chooseExtractor({ SOCIAL_EXTRACTOR: "yt-dlp", SOCIAL_YTDLP_PATH: "/opt/yt-dlp" }), {
    kind: "yt-dlp",
    binary: "/opt/yt-dlp",
  });
  assert.throws(() => chooseExtractor({ SOCIAL_EXTRACTOR: "yt-dlp", PATH: "/nonexistent" }), /yt-dlp is not on PATH/);
  assert.throws(() => chooseExtractor({ SOCIAL_EXTRACTOR: "youtube" }), /SOCIAL_EXTRACTOR/);
});

// A stand-in yt-dlp: `-J` prints the post's JSON; the download copies local files into --paths.
const FAKE = `#!/usr/bin/env node
const fs = require("fs"), path = require("path");
const cfg = JSON.parse(fs.readFileSync(path.join(__dirname, "fake.json"), "utf8"));
const args = process.argv.slice(2);
if (args.includes("--dump-single-json")) {
  if (cfg.infoError) { process.stderr.write(cfg.infoError + "\\n"); process.exit(1); }
  process.stdout.write(JSON.stringify(cfg.info)); process.exit(0);
}
const dir = args[args.indexOf("--paths") + 1];
fs.mkdirSync(dir, { recursive: true });
process.stdout.write("[download]  50.0% of 1.00MiB\\n");
for (const [name, from] of Object.entries(cfg.files)) fs.copyFileSync(from, path.join(dir, name));
process.stdout.write("[download] 100% of 1.00MiB\\n");
`;

const engine = createMediaEngine({ mode: "auto" });
onAfterAll(() => engine.close());

function fakeYtdlp(config: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "fake-ytdlp-"));
  const bin = join(dir, "yt-dlp");
  writeFileSync(bin, FAKE);
  chmodSync(bin, 0o755);
  writeFileSync(join(dir, "fake.json"), JSON.stringify(config));
  return bin;
}

const request = (url: string) => ({
  url,
  platform: "tiktok" as const,
  limits: SOCIAL_LIMITS,
  signal: new AbortController().signal,
  onProgress: () => {},
});

t(
  "extract(): a non-H.264 download comes out H.264/AAC with the index in front; the thumbnail is the cover",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "fake-media-"));
    // MPEG-4 Part 2 video with MP3 sound: both need re-encoding for browsers.
    const src = await engine.run(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=15:duration=1",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=1",
        "-c:v",
        "mpeg4",
        "-c:a",
        "libmp3lame",
        "-shortest",
        "src.mkv",
      ],
      { outputs: ["src.mkv"] },
    );
    writeFileSync(join(dir, "src.mkv"), src["src.mkv"]!);
    const thumb = await engine.run(["-f", "lavfi", "-i", "color=c=red:size=64x48", "-frames:v", "1", "t.jpg"], {
      outputs: ["t.jpg"],
    });
    writeFileSync(join(dir, "t.jpg"), thumb["t.jpg"]!);
    const bin = fakeYtdlp({
      info: { ...single, duration: 1 },
      files: { "1.mkv": join(dir, "src.mkv"), "1.jpg": join(dir, "t.jpg") },
    });

    const post = await ytdlpExtractor({ binary: bin, media: () => engine }).extract(
      request("https://www.tiktok.com/@a/video/1"),
    );
    assert.is(post.title, "Morning routine");
    assert.is(post.uploader, "someone");
    assert.is(post.items.length, 1);
    const probe = await engine.probe(post.items[0]!.video, "v.mp4");
    assert.is(firstVideo(probe)?.codec, "h264");
    assert.is(firstAudio(probe)?.codec, "aac");
    const moov = Buffer.from(post.items[0]!.video).indexOf("moov");
    const mdat = Buffer.from(post.items[0]!.video).indexOf("mdat");
    assert.ok(moov > 0 && moov < mdat, "faststart: moov before mdat");
    assert.is(post.items[0]!.cover?.mimeType, "image/jpeg");
  },
);

t("extract(): yt-dlp's refusal becomes the plain reason; a too-long post downloads nothing", async () => {
  const login = fakeYtdlp({
    infoError: "ERROR: [Instagram] x: Requested content is not available, rate-limit reached or login required",
    files: {},
  });
  const err = await rejection(
    ytdlpExtractor({ binary: login, media: () => engine }).extract(request("https://www.instagram.com/p/x/")),
  );
  assert.instance(err, ExtractionError);
  assert.is(err.reason, "login_required");
  const long = fakeYtdlp({ info: { ...single, duration: 900 }, files: { "1.mp4": "/nonexistent" } });
  const err2 = await rejection(
    ytdlpExtractor({ binary: long, media: () => engine }).extract(request("https://www.tiktok.com/@a/video/1")),
  );
  assert.is(err2.reason, "too_long");
  const skipped = fakeYtdlp({ info: single, files: {} });
  const err3 = await rejection(
    ytdlpExtractor({ binary: skipped, media: () => engine }).extract(request("https://www.tiktok.com/@a/video/1")),
  );
  assert.instance(err3, ExtractionError);
});

t.run();
