// The yt-dlp extractor: the real `social.extract`, used when yt-dlp is installed and selected (extractor.ts).
// Two runs of yt-dlp as a child process: first `-J` reads the post (one item or a carousel cut to 10) so
// the caps (600 s, 200 MB) are checked before a byte of video is fetched; then `--load-info-json` downloads
// exactly what was read, under `--max-filesize`, into a private temp dir. Every video is then made
// browser-playable with the media engine: H.264/AAC streams are remuxed with the index in front, anything
// else is re-encoded. yt-dlp's messages stay in our log; a partner gets one of the plain sentences.
//
// yt-dlp fetches the network itself, so the outbound guard cannot pin its connections; what it is given is
// only a normalized link that passed the host rules (hosts.ts), with `--ignore-config` so no local config
// (proxies, cookies, exec hooks) rides along, and a minimal environment (childEnv): none of the server's
// secrets, no proxy variables (a proxy only when one is passed explicitly).
//
// yt-dlp runs ffmpeg itself to merge the formats it downloaded and to convert thumbnails, on files a remote
// site chose: those runs get the same input rules as our own engine (lib/media/inputs.ts) through
// `--postprocessor-args ffmpeg_i:` (before every input): files only, and only plain media demuxers, so a
// "video" that is really an HLS or DASH manifest cannot make that ffmpeg read a local file or a URL. What
// comes out is then sniffed and opened by the media engine like any upload.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  childEnv,
  cleanUpstreamText,
  type ExtractedItem,
  type ExtractedPost,
  ExtractionError,
  type ExtractRequest,
  firstAudio,
  firstVideo,
  type MediaEngine,
  type Probe,
  type SocialExtractor,
  type SocialLimits,
  sniffImageType,
  sniffMedia,
  UPSTREAM_TEXT_LIMITS,
  VIDEO_CONTAINERS,
} from "mediagate/plugin";
import type { FailureReason } from "./errors.ts";

/** H.264 + AAC in MP4 when the network offers it (no re-encode then), else the best there is. */
export const FORMAT = "bv*[vcodec^=avc1]+ba[acodec^=mp4a]/b[vcodec^=avc1][ext=mp4]/bv*+ba/b";

const COMMON = ["--ignore-config", "--no-warnings", "--no-cache-dir", "--socket-timeout", "30", "--retries", "3"];

/**
 * Demuxers yt-dlp's own ffmpeg runs may use: what sites serve as downloaded files (MP4/MOV, WebM/Matroska,
 * MPEG-TS from HLS downloads, FLV, plain audio) and thumbnails. No playlist, manifest or concat demuxer.
 */
export const YTDLP_FFMPEG_FORMATS = [
  "mov",
  "matroska",
  "webm",
  "mpegts",
  "flv",
  "mp3",
  "aac",
  "ogg",
  "flac",
  "wav",
  "image2",
  "png_pipe",
  "jpeg_pipe",
  "webp_pipe",
];
export const YTDLP_FFMPEG_INPUT_ARGS = [
  "--postprocessor-args",
  `ffmpeg_i:-protocol_whitelist file -format_whitelist ${YTDLP_FFMPEG_FORMATS.join(",")}`,
];

export interface YtdlpNetwork {
  /** A proxy for yt-dlp's requests, only when a deployment configures one (never taken from the environment). */
  proxy?: string;
}

const networkArgs = (network: YtdlpNetwork = {}) => (network.proxy ? ["--proxy", network.proxy] : []);

export function infoArgs(url: string, limits: SocialLimits, network?: YtdlpNetwork): string[] {
  return [
    ...COMMON,
    ...networkArgs(network),
    "--dump-single-json",
    "--yes-playlist",
    "--playlist-items",
    `1-${limits.maxItems}`,
    "--",
    url,
  ];
}

export function downloadArgs(
  infoJsonPath: string,
  dir: string,
  limits: SocialLimits,
  network?: YtdlpNetwork,
): string[] {
  return [
    ...COMMON,
    ...networkArgs(network),
    ...YTDLP_FFMPEG_INPUT_ARGS,
    "--load-info-json",
    infoJsonPath,
    "-f",
    FORMAT,
    "--max-filesize",
    String(limits.maxFileBytes),
    "--merge-output-format",
    "mp4",
    "--write-thumbnail",
    "--convert-thumbnails",
    "jpg",
    "--no-part",
    "--no-mtime",
    "--newline",
    "--paths",
    dir,
    "-o",
    "%(playlist_index|1)s.%(ext)s",
    "-o",
    "thumbnail:%(playlist_index|1)s.%(ext)s",
  ];
}

export interface PostInfo {
  title: string;
  uploader: string;
  /** Video entries, in post order. */
  entries: Array<{ index: number; duration: number | null; bytes: number | null }>;
}

const hasVideo = (e: any) =>
  e &&
  (e.vcodec
    ? e.vcodec !== "none"
    : Array.isArray(e.formats)
      ? e.formats.some((f: any) => f.vcodec && f.vcodec !== "none")
      : Boolean(e.url || e.duration));

function chosenBytes(e: any): number | null {
  const parts = Array.isArray(e.requested_formats) ? e.requested_formats : [e];
  let sum = 0;
  for (const p of parts) {
    const n = p.filesize ?? p.filesize_approx;
    if (typeof n !== "number") return null;
    sum += n;
  }
  return sum;
}

/** Reads `yt-dlp -J` output and applies the caps that can be known before downloading. */
export function parsePostInfo(json: string, limits: SocialLimits): PostInfo {
  let info: any;
  try {
    info = JSON.parse(json);
  } catch {
    throw new ExtractionError("failed", "yt-dlp printed no valid JSON");
  }
  const list: any[] =
    info?._type === "playlist" || Array.isArray(info?.entries) ? (info.entries ?? []).filter(Boolean) : [info];
  const entries = list
    .map((e, i) => ({ e, index: typeof e.playlist_index === "number" ? e.playlist_index : i + 1 }))
    .filter(({ e }) => hasVideo(e))
    .slice(0, limits.maxItems)
    .map(({ e, index }) => ({
      index,
      duration: typeof e.duration === "number" ? e.duration : null,
      bytes: chosenBytes(e),
    }));
  if (entries.length === 0) throw new ExtractionError("no_video", "no video entries");
  const seconds = entries.reduce((s, e) => s + (e.duration ?? 0), 0);
  if (seconds > limits.maxSeconds) throw new ExtractionError("too_long", `${seconds} s`);
  if (
    entries.some((e) => (e.bytes ?? 0) > limits.maxFileBytes) ||
    entries.reduce((s, e) => s + (e.bytes ?? 0), 0) > limits.maxJobBytes
  ) {
    throw new ExtractionError("too_large", "over the size cap");
  }
  const first = list[0] ?? {};
  // The post's own text (its author's: anything at all): cleaned like partner input and capped (lib/upstream-text.ts).
  const text = (...values: unknown[]) =>
    cleanUpstreamText(
      String(values.find((v) => typeof v === "string" && v.trim()) ?? "").trim(),
      UPSTREAM_TEXT_LIMITS.title,
    ).trim();
  return {
    title: text(info.title, first.title, info.description, first.description),
    uploader: text(info.uploader, info.channel, info.uploader_id, first.uploader, first.channel, first.uploader_id),
    entries,
  };
}

// yt-dlp's wording, by reason. Login first: "login required" messages often also say "not available".
const PATTERNS: ReadonlyArray<[RegExp, FailureReason]> = [
  [
    /log ?in|sign ?in|--cookies|cookies-from-browser|authenticat|account to view|age[- ]restricted|confirm your age|inappropriate for some users/i,
    "login_required",
  ],
  [/larger than max-filesize|file is larger than/i, "too_large"],
  [
    /no video formats found|there is no video|no video (could be|was) found|does not contain (any )?video|unsupported url|not a video|requested format is not available/i,
    "no_video",
  ],
  [
    /private|been removed|been deleted|does not exist|no longer available|not available|unavailable|content isn't available|http error 404|http error 410|blocked in your country|geo[- ]?restrict/i,
    "unavailable",
  ],
];
/** Failures worth the runtime's retry (the network, the network's rate limit), not the post's fault. */
const TRANSIENT =
  /timed out|timeout|connection (reset|refused|aborted)|temporary failure|name resolution|network is unreachable|http error 5\d\d|http error 429|too many requests|unable to download (webpage|json)/i;

/** The plain reason of a failed yt-dlp run, or null when it looks transient (the job is retried). */
export function classifyFailure(output: string): FailureReason | null {
  const lines = output.split("\n").filter((l) => /error|warning/i.test(l));
  const text = (lines.length ? lines : [output]).join("\n");
  for (const [pattern, reason] of PATTERNS) if (pattern.test(text)) return reason;
  if (TRANSIENT.test(text)) return null;
  return "failed";
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const MAX_STDOUT = 32 * 1024 * 1024;

/** Runs yt-dlp; killed on abort or after `timeoutMs`. Output beyond the caps is dropped, not buffered. */
export function runYtdlp(
  binary: string,
  args: string[],
  options: { signal: AbortSignal; timeoutMs: number; cwd?: string; onLine?(line: string): void },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) return reject(options.signal.reason);
    // Only PATH (yt-dlp finds ffmpeg there), a HOME and TMPDIR of its own, a UTF-8 locale and unbuffered
    // output (progress lines arrive as written): no secret and no proxy of the server's environment.
    const env = childEnv({ dir: options.cwd, extra: { PYTHONUNBUFFERED: "1" } });
    const child = spawn(binary, args, { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let pending = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      if (stdout.length < MAX_STDOUT) stdout += chunk;
      if (options.onLine) {
        pending += chunk;
        const lines = pending.split("\n");
        pending = lines.pop()!;
        for (const l of lines) options.onLine(l);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-64 * 1024);
    });
    const kill = () => child.kill("SIGKILL");
    const timer = setTimeout(kill, options.timeoutMs);
    options.signal.addEventListener("abort", kill, { once: true });
    child.on("error", (err) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", kill);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", kill);
      if (options.signal.aborted) return reject(options.signal.reason);
      resolve({ code, stdout, stderr });
    });
  });
}

/** ffmpeg arguments making `in` browser-playable: copy H.264/AAC, re-encode anything else. */
export function playableArgs(probe: Probe, input: string, output: string): string[] {
  const video = firstVideo(probe);
  const audio = firstAudio(probe);
  const copyVideo = video?.codec === "h264";
  const copyAudio = !audio || audio.codec === "aac";
  return [
    "-i",
    input,
    "-map",
    "0:v:0",
    "-map",
    "0:a:0?",
    "-dn",
    "-sn",
    ...(copyVideo
      ? ["-c:v", "copy"]
      : [
          "-c:v",
          "libx264",
          "-preset",
          "veryfast",
          "-crf",
          "23",
          "-pix_fmt",
          "yuv420p",
          "-vf",
          "scale=trunc(iw/2)*2:trunc(ih/2)*2",
        ]),
    ...(audio ? (copyAudio ? ["-c:a", "copy"] : ["-c:a", "aac", "-b:a", "128k", "-ac", "2"]) : []),
    "-map_metadata",
    "-1",
    "-movflags",
    "+faststart",
    output,
  ];
}

const VIDEO_EXT = new Set(["mp4", "webm", "mkv", "mov", "m4v"]);
const IMAGE_EXT = new Set(["jpg", "jpeg", "png"]);

/** yt-dlp's `[download]  42.0% of ...` lines as a fraction. */
export function progressOf(line: string): number | null {
  const m = /^\[download\]\s+(\d+(?:\.\d+)?)%/.exec(line.trim());
  return m ? Number(m[1]) / 100 : null;
}

export function ytdlpExtractor(options: {
  binary: string;
  media: () => MediaEngine;
  timeoutMs?: number;
  network?: YtdlpNetwork;
}): SocialExtractor {
  const timeoutMs = options.timeoutMs ?? 20 * 60_000;
  const failWith = (res: RunResult, step: string) => {
    const reason = classifyFailure(`${res.stderr}\n${res.stdout.slice(-4000)}`);
    if (reason === null)
      throw new Error(`yt-dlp ${step} failed (exit ${res.code}), transient: ${res.stderr.slice(-500)}`);
    throw new ExtractionError(reason, `yt-dlp ${step} failed (exit ${res.code}): ${res.stderr.slice(-500)}`);
  };

  return {
    async extract(req: ExtractRequest): Promise<ExtractedPost> {
      const dir = await mkdtemp(join(tmpdir(), "mediagate-social-"));
      try {
        const info = await runYtdlp(options.binary, infoArgs(req.url, req.limits, options.network), {
          signal: req.signal,
          timeoutMs: 120_000,
          cwd: dir,
        });
        if (info.code !== 0) failWith(info, "info");
        const post = parsePostInfo(info.stdout, req.limits);
        await req.onProgress(0.1);

        const infoPath = join(dir, "info.json");
        await writeFile(infoPath, info.stdout);
        const out = join(dir, "out");
        const download = await runYtdlp(options.binary, downloadArgs(infoPath, out, req.limits, options.network), {
          signal: req.signal,
          timeoutMs,
          cwd: dir,
          onLine: (line) => {
            const p = progressOf(line);
            if (p !== null) void Promise.resolve(req.onProgress(0.1 + p * 0.6)).catch(() => {});
          },
        });
        if (download.code !== 0) failWith(download, "download");

        const names = await readdir(out).catch(() => [] as string[]);
        const byIndex = new Map<number, { video?: string; cover?: string }>();
        for (const name of names) {
          const m = /^(\d+)\.([a-z0-9]+)$/i.exec(name);
          if (!m) continue;
          const slot = byIndex.get(Number(m[1])) ?? {};
          const ext = m[2]!.toLowerCase();
          if (VIDEO_EXT.has(ext)) slot.video = name;
          else if (IMAGE_EXT.has(ext)) slot.cover = name;
          byIndex.set(Number(m[1]), slot);
        }
        const engine = options.media();
        const items: ExtractedItem[] = [];
        const found = [...byIndex.entries()]
          .filter(([, s]) => s.video)
          .sort(([a], [b]) => a - b)
          .slice(0, req.limits.maxItems);
        // --max-filesize skips an oversized file with exit code 0: nothing on disk then, and yt-dlp said why.
        if (found.length === 0)
          failWith({ ...download, stderr: `ERROR: ${download.stdout}\n${download.stderr}` }, "download");
        let total = 0;
        for (const [n, [, slot]] of found.entries()) {
          const raw = new Uint8Array(await readFile(join(out, slot.video!)));
          const ext = slot.video!.split(".").pop()!;
          // What the site served is judged by its bytes: anything but a video container (a manifest, a page)
          // never reaches the engine.
          if (!sniffMedia(raw, VIDEO_CONTAINERS))
            throw new ExtractionError("failed", `download ${slot.video} is not a video container`);
          const probe = await engine.probe(raw, `in.${ext}`, { signal: req.signal });
          const seconds = probe.durationSeconds;
          const playable = (
            await engine.run(playableArgs(probe, `in.${ext}`, "out.mp4"), {
              inputs: { [`in.${ext}`]: raw },
              outputs: ["out.mp4"],
              signal: req.signal,
              durationSeconds: seconds,
              timeoutMs,
            })
          )["out.mp4"]!;
          total += playable.byteLength;
          if (playable.byteLength > req.limits.maxFileBytes || total > req.limits.maxJobBytes)
            throw new ExtractionError("too_large", "over the size cap after conversion");
          const coverBytes = slot.cover ? new Uint8Array(await readFile(join(out, slot.cover))) : null;
          const mimeType = coverBytes ? sniffImageType(coverBytes, ["image/jpeg", "image/png"]) : null;
          items.push({ video: playable, cover: coverBytes && mimeType ? { bytes: coverBytes, mimeType } : null });
          await req.onProgress(0.7 + ((n + 1) / found.length) * 0.3);
        }
        return { title: post.title, uploader: post.uploader, items };
      } finally {
        await rm(dir, { recursive: true, force: true }).catch(() => {});
      }
    },
  };
}
