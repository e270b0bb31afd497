// The download job: `pending` until the extractor's files are checked, measured and stored, then `complete`
// (or `failed` with a plain sentence). It runs on the kernel's job runtime with no charge, so a crash is
// handled like any job's: a dead worker's attempt is retried, and once attempts run out the job fails
// with the generic sentence; a retry overwrites the same blob keys.
//
// The caps are checked here on what the extractor returned, whatever it promised: the extractor stops
// early when it can (it knows a post's length before downloading), the plugin holds the line.
import {
  cleanUpstreamText,
  type ExtractedItem,
  ExtractionError,
  firstAudio,
  firstVideo,
  isTransient,
  JobFailure,
  type JobKindDeclaration,
  type JobRunContext,
  type MediaEngine,
  oneStepStates,
  PRIVATE_KEY_PREFIX,
  SOCIAL_LIMITS,
  sniffImageType,
  UPSTREAM_TEXT_LIMITS,
} from "mediagate/plugin";
import { FAILURE_SENTENCES, type FailureReason } from "./errors.ts";
import type { Platform } from "./hosts.ts";
import type { DownloadOutput, StoredFile } from "./records.ts";

export interface DownloadInput {
  url: string;
  platform: Platform;
  /** ISO time the files may be removed (the record's `expires_at`). */
  expires_at: string;
}

const fail = (reason: FailureReason) => new JobFailure(FAILURE_SENTENCES[reason]);
const round2 = (n: number) => Math.round(n * 100) / 100;

interface Measured {
  video: Uint8Array;
  cover: Uint8Array;
  coverType: "image/jpeg" | "image/png";
  duration: number;
  width: number;
  height: number;
  coverWidth: number;
  coverHeight: number;
  hasAudio: boolean;
}

async function measure(
  ctx: JobRunContext,
  engine: MediaEngine,
  item: ExtractedItem,
  secondsSoFar: number,
): Promise<Measured> {
  if (item.video.byteLength > SOCIAL_LIMITS.maxFileBytes) throw fail("too_large");
  let probe;
  try {
    probe = await engine.probe(item.video, "video.mp4", { signal: ctx.signal });
  } catch (err) {
    if (ctx.signal.aborted || isTransient(err)) throw err;
    ctx.log.warn(`social ${ctx.jobId}: extracted video unreadable: ${(err as Error).message}`);
    throw fail("failed");
  }
  const video = firstVideo(probe);
  if (!video?.width || !video.height) throw fail("no_video");
  if (video.codec !== "h264") {
    // The contract promises H.264; an extractor that broke it is our bug, not the partner's post.
    ctx.log.error(`social ${ctx.jobId}: extractor returned ${video.codec}, not h264`);
    throw fail("failed");
  }
  if (secondsSoFar + probe.durationSeconds > SOCIAL_LIMITS.maxSeconds) throw fail("too_long");

  let cover = item.cover?.bytes ?? null;
  let coverType = cover ? sniffImageType(cover, ["image/jpeg", "image/png"]) : null;
  if (!cover || !coverType) {
    // No usable cover from the network: the first frame stands in.
    const out = await engine.run(["-i", "video.mp4", "-frames:v", "1", "-q:v", "3", "cover.jpg"], {
      inputs: { "video.mp4": item.video },
      outputs: ["cover.jpg"],
      signal: ctx.signal,
      timeoutMs: 60_000,
    });
    cover = out["cover.jpg"]!;
    coverType = "image/jpeg";
  }
  const coverProbe = await engine.probe(cover, coverType === "image/png" ? "cover.png" : "cover.jpg", {
    signal: ctx.signal,
  });
  const picture = coverProbe.streams.find((s) => s.type === "video");
  return {
    video: item.video,
    cover,
    coverType,
    duration: probe.durationSeconds,
    width: video.width,
    height: video.height,
    coverWidth: picture?.width ?? 0,
    coverHeight: picture?.height ?? 0,
    hasAudio: firstAudio(probe) !== undefined,
  };
}

export const downloadJob: JobKindDeclaration<DownloadInput> = {
  ...oneStepStates("pending", "complete", "failed"),
  failError: FAILURE_SENTENCES.failed,
  retries: 1,
  // A 600-second post may need a full re-encode after its download.
  timeoutSeconds: 1800,
  concurrency: 2,
  async run(ctx) {
    const { url, platform } = ctx.input;
    const extractor = ctx.capability("social.extract");
    let lastPercent = -1;
    const onProgress = async (fraction: number) => {
      const percent = Math.floor(Math.max(0, Math.min(1, fraction)) * 80);
      if (percent <= lastPercent) return;
      lastPercent = percent;
      await ctx.progress(percent, "Downloading");
    };

    let post;
    try {
      post = await extractor.extract({ url, platform, limits: SOCIAL_LIMITS, signal: ctx.signal, onProgress });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (err instanceof ExtractionError) {
        ctx.log.info(`social ${ctx.jobId}: ${err.reason}: ${err.message}`);
        throw fail(err.reason);
      }
      throw err; // unexpected: the runtime retries, then fails with the generic sentence
    }
    const items = post.items.slice(0, SOCIAL_LIMITS.maxItems);
    if (items.length === 0) throw fail("no_video");

    await ctx.progress(85, "Checking files");
    const engine = ctx.capability("media");
    const measured: Measured[] = [];
    let seconds = 0;
    let bytes = 0;
    for (const item of items) {
      const m = await measure(ctx, engine, item, seconds);
      seconds += m.duration;
      bytes += m.video.byteLength + m.cover.byteLength;
      if (bytes > SOCIAL_LIMITS.maxJobBytes) throw fail("too_large");
      measured.push(m);
    }

    await ctx.progress(95, "Storing files");
    const expiresAt = new Date(ctx.input.expires_at);
    const files: StoredFile[] = [];
    const several = measured.length > 1;
    for (const [n, m] of measured.entries()) {
      const stem = `${platform}-${ctx.jobId}${several ? `-${n + 1}` : ""}`;
      const videoIdx = files.length;
      const coverExt = m.coverType === "image/png" ? "png" : "jpg";
      // Fixed keys: a retry after a crash overwrites what the lost attempt wrote. Private: `/media` never
      // serves them (docs/architecture.md "Media links"), only the authenticated file path does, to the owning account.
      const videoKey = `${PRIVATE_KEY_PREFIX}downloads/${ctx.jobId}/${videoIdx}.mp4`;
      const coverKey = `${PRIVATE_KEY_PREFIX}downloads/${ctx.jobId}/${videoIdx + 1}.${coverExt}`;
      await ctx.blobs.put(videoKey, m.video, { contentType: "video/mp4", expiresAt });
      await ctx.blobs.put(coverKey, m.cover, { contentType: m.coverType, expiresAt });
      files.push({
        idx: videoIdx,
        kind: "video",
        key: videoKey,
        content_type: "video/mp4",
        download_name: `${stem}.mp4`,
        bytes: m.video.byteLength,
        width: m.width,
        height: m.height,
        duration_sec: round2(m.duration),
        has_audio: m.hasAudio,
      });
      files.push({
        idx: videoIdx + 1,
        kind: "cover",
        for_idx: videoIdx,
        key: coverKey,
        content_type: m.coverType,
        download_name: `${stem}-cover.${coverExt}`,
        bytes: m.cover.byteLength,
        width: m.coverWidth,
        height: m.coverHeight,
      });
    }
    const output: DownloadOutput = {
      media_kind: "video",
      // Whatever extractor found them, a post's texts are upstream text: cleaned before they are stored.
      title: cleanUpstreamText(post.title, UPSTREAM_TEXT_LIMITS.title),
      uploader: cleanUpstreamText(post.uploader, UPSTREAM_TEXT_LIMITS.title),
      duration_sec: round2(seconds),
      width: measured[0]!.width,
      height: measured[0]!.height,
      has_audio: measured.some((m) => m.hasAudio),
      bytes,
      files,
    };
    return { state: "complete", output: { ...output } };
  },
};
