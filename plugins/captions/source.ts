// A caption job's source file as the media engine takes it: one of the account's videos (read through the
// `captionable.videos` collection), an upload's one stored file, or a chunked upload's parts streamed in order
// (never concatenated in memory on the native engine). Also what the job learns about it once (size, rate,
// duration), kept on the row so re-burns need no probe.
import {
  type CaptionableVideo,
  displaySize,
  type EngineInput,
  firstAudio,
  firstVideo,
  type JobRunContext,
  type MediaEngine,
  type OperationContext,
  probeOverBudget,
  type SpokenRecord,
} from "mediagate/plugin";
import { type CaptionRow, mediaOf, type SourceMedia, sourceKeysOf } from "./records.ts";

export class SourceGone extends Error {}

/**
 * One of the partner's videos, whichever area made it (video, animation, upscale, merge, Omni, Script Runner:
 * each contributes its finder to `captionable.videos`), or null when no area has it for this account (a
 * missing id and another account's read the same: 404). Ids are unique across the service, so the areas are
 * asked in turn and the first answer is the only one.
 */
export async function findVideo(
  ctx: Pick<OperationContext, "db" | "contributions">,
  partnerId: string,
  jobId: string,
): Promise<CaptionableVideo | null> {
  for (const area of ctx.contributions("captionable.videos")) {
    const video = await area.find(ctx.db, partnerId, jobId);
    if (video) return video;
  }
  return null;
}

export interface OpenedSource {
  input: EngineInput;
  bytes: number;
  spoken: SpokenRecord | null;
}

export async function openSource(
  ctx: Pick<JobRunContext, "db" | "blobs" | "contributions" | "partnerId">,
  row: CaptionRow,
): Promise<OpenedSource> {
  if (row.source_kind === "video") {
    const video = await findVideo(ctx, ctx.partnerId, row.source_video_job_id!);
    const bytes = video?.complete ? await video.read() : null;
    if (!bytes) throw new SourceGone();
    return { input: bytes, bytes: bytes.byteLength, spoken: video!.spoken ?? null };
  }
  const keys = sourceKeysOf(row);
  if (keys.length === 1) {
    const bytes = await ctx.blobs.get(keys[0]!);
    if (!bytes) throw new SourceGone();
    return { input: bytes, bytes: bytes.byteLength, spoken: null };
  }
  for (const key of keys) if (!(await ctx.blobs.has(key))) throw new SourceGone();
  const size = Number(row.source_bytes);
  const blobs = ctx.blobs;
  return {
    bytes: size,
    spoken: null,
    input: {
      size,
      async *chunks() {
        for (const key of keys) {
          const part = await blobs.get(key);
          if (!part) throw new SourceGone();
          yield part;
        }
      },
    },
  };
}

/** Size, frame rate and duration of the source, from the row when known, else probed. */
export async function sourceMedia(
  engine: MediaEngine,
  row: CaptionRow,
  source: OpenedSource,
  signal: AbortSignal,
): Promise<SourceMedia> {
  const known = mediaOf(row);
  if (known) return known;
  const probe = await engine.probe(source.input, "source.mp4", { signal });
  const size = displaySize(probe);
  if (!size) throw new Error("the source has no video stream");
  // lib/media/budgets.ts before the burn decodes a frame (a header may declare 16K or 100,000 fps).
  const excess = probeOverBudget(probe);
  if (excess) throw new Error(`the source is over the media budget: ${excess.reason}`);
  return {
    width: size.width,
    height: size.height,
    fps: firstVideo(probe)?.fps ?? 25,
    duration: probe.durationSeconds,
    audio: firstAudio(probe)?.codec ?? null,
  };
}
