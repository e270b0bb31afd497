// The source of an extension, prepared before the charge (part 3, POST /extend-music): an owned track (JSON
// form) or an uploaded file (multipart form), measured, with what it decides for the request (model,
// instrumental, and whether the direct path is open).
import {
  ApiError,
  isMediaError,
  type MediaContainer,
  type MediaEngine,
  type MusicModel,
  type OperationContext,
  probeOverBudget,
  sniffMedia,
  type UploadedFile,
} from "mediagate/plugin";
import { MUSIC_ERRORS } from "./errors.ts";
import { LIMITS, UPLOAD_EXTENSIONS } from "./limits.ts";
import { findJob } from "./records.ts";

export interface PreparedSource {
  /** The provider can continue it from its own arrangement (`operation` extend). */
  direct: boolean;
  /** What an owned source imposes (null for uploads: the request decides). */
  model: MusicModel | null;
  instrumental: boolean | null;
  /** Measured duration in seconds. */
  seconds: number;
  arrangement: Record<string, unknown> | null;
  title: string | null;
  /** An owned track: where its audio already is. */
  key?: string;
  /** An upload: the bytes to keep for the job. */
  bytes?: Uint8Array;
  extension: string;
}

export async function ownedSource(ctx: OperationContext, ref: { ref: string; track: number }): Promise<PreparedSource> {
  // Another account's job, a missing one, an unfinished one and a missing variation all answer alike.
  const row = await findJob(ctx.db, ctx.partner.id, ref.ref);
  const track = row?.state === "complete" ? row.tracks[ref.track] : undefined;
  if (!row || !track || !(await ctx.blobs.has(track.audio_key)))
    throw new ApiError(404, MUSIC_ERRORS.sourceUnavailable);
  const direct = track.arrangement !== null;
  // A track that cannot go the direct way is restaged like an upload, under the same length limit.
  if (!direct && track.duration > LIMITS.uploadSeconds) throw new ApiError(400, MUSIC_ERRORS.uploadTooLong);
  return {
    direct,
    model: row.model as MusicModel,
    instrumental: row.instrumental,
    seconds: track.duration,
    arrangement: track.arrangement,
    title: track.title,
    key: track.audio_key,
    extension: "mp3",
  };
}

/**
 * What an upload may be, by its first bytes: the containers of the spec's AAC, FLAC, M4A, MP3, OGG and WAV.
 * The name's extension is only the spec's first rule; a manifest, playlist or any other text named "up.mp3"
 * is refused here, before the engine opens it and before any charge.
 */
const UPLOAD_CONTAINERS: readonly MediaContainer[] = ["aac", "flac", "isobmff", "mp3", "ogg", "wav"];

export async function uploadedSource(
  engine: MediaEngine,
  file: UploadedFile,
  signal?: AbortSignal,
): Promise<PreparedSource> {
  if (file.bytes.byteLength > LIMITS.uploadBytes) throw new ApiError(413, MUSIC_ERRORS.uploadTooLarge);
  const extension = file.filename.toLowerCase().split(".").pop() ?? "";
  if (!file.filename.includes(".") || !(UPLOAD_EXTENSIONS as readonly string[]).includes(extension))
    throw new ApiError(400, MUSIC_ERRORS.uploadExtension);
  if (!sniffMedia(file.bytes, UPLOAD_CONTAINERS)) throw new ApiError(400, MUSIC_ERRORS.uploadUnreadable);
  const name = `source.${extension}`;
  let seconds: number;
  try {
    const probe = await engine.probe(file.bytes, name, { signal, timeoutMs: 60_000 });
    if (!probe.streams.some((s) => s.type === "audio")) throw new ApiError(400, MUSIC_ERRORS.uploadUnreadable);
    // lib/media/budgets.ts before the audio is decoded: a declared length of hours, or cover art of 50,000 x
    // 50,000, is no upload we can use.
    const excess = probeOverBudget(probe);
    if (excess)
      throw new ApiError(400, excess.kind === "duration" ? MUSIC_ERRORS.uploadTooLong : MUSIC_ERRORS.uploadUnreadable);
    seconds = await decodedSeconds(engine, file.bytes, name, signal);
    if (!(seconds > 0)) throw new ApiError(400, MUSIC_ERRORS.uploadUnreadable);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // Damaged or not audio is the caller's 400; our engine failing is a 503 they may retry.
    if (isMediaError(err) && (err.code === "invalid_input" || err.code === "unsupported"))
      throw new ApiError(400, MUSIC_ERRORS.uploadUnreadable);
    throw new ApiError(503, MUSIC_ERRORS.uploadUnprocessable);
  }
  if (seconds > LIMITS.uploadSeconds) throw new ApiError(400, MUSIC_ERRORS.uploadTooLong);
  return {
    direct: false,
    model: null,
    instrumental: null,
    seconds,
    arrangement: null,
    title: null,
    bytes: file.bytes,
    extension,
  };
}

const MEASURE_RATE = 8000;

/**
 * Seconds of audio the file really holds, decoded (to small mono PCM) up to just past the 8-minute limit. A
 * container's stated duration is only an estimate for ADTS AAC and for MP3 without a Xing header, and the
 * limit and `continue_at` must hold for the audio itself.
 */
async function decodedSeconds(
  engine: MediaEngine,
  bytes: Uint8Array,
  name: string,
  signal?: AbortSignal,
): Promise<number> {
  const args = [
    "-i",
    name,
    "-vn",
    "-map",
    "0:a:0",
    "-t",
    String(LIMITS.uploadSeconds + 1),
    "-ac",
    "1",
    "-ar",
    String(MEASURE_RATE),
    "-f",
    "s16le",
    "-acodec",
    "pcm_s16le",
    "measure.pcm",
  ];
  const out = await engine.run(args, {
    inputs: { [name]: bytes },
    outputs: ["measure.pcm"],
    signal,
    timeoutMs: 120_000,
  });
  return Math.round((out["measure.pcm"]!.byteLength / 2 / MEASURE_RATE) * 1000) / 1000;
}
