// Submitting an Omni clip: what POST /omni/video, batch sections (../batch) and repaired prompts (../improve)
// share. Character images, voices and base64 reference images are copied with the job at submit (private
// keys): deleting a character or voice afterwards does not change a clip already asked for.
import {
  ApiError,
  IMAGE_EXT,
  mediaToken,
  type OperationContext,
  type PluginDb,
  PRIVATE_KEY_PREFIX,
} from "mediagate/plugin";
import { OMNI_ERRORS } from "../errors.ts";
import {
  frameSize,
  type OmniAspectRatio,
  type OmniDuration,
  type OmniModel,
  type OmniResolution,
  omniVideoPrice,
} from "../prices.ts";
import { type CharacterRecord, type CharacterVoice, VIDEOS_TABLE } from "../records.ts";
import type { OmniJobInput, PreparedOmniVideo } from "./types.ts";

interface Upload {
  key: string;
  bytes: Uint8Array;
  contentType: string;
}

/** Files a submit writes before its charge (the job may start at once) and removes if the charge is refused. */
export class PendingUploads {
  readonly list: Upload[] = [];
  readonly prefix = `${PRIVATE_KEY_PREFIX}inputs/${mediaToken()}`;
  add(name: string, bytes: Uint8Array, contentType: string): string {
    const key = `${this.prefix}/${name}`;
    this.list.push({ key, bytes, contentType });
    return key;
  }
  async write(ctx: OperationContext) {
    for (const u of this.list) await ctx.blobs.put(u.key, u.bytes, { contentType: u.contentType });
  }
  async remove(ctx: OperationContext) {
    for (const u of this.list) await ctx.blobs.remove(u.key).catch(() => {});
  }
}

/** A character as the job keeps it: its image copied under the submit's private prefix. */
export async function characterSnapshot(
  ctx: OperationContext,
  c: CharacterRecord,
  uploads: PendingUploads,
  n: number,
): Promise<OmniJobInput["characters"][number]> {
  const bytes = await ctx.blobs.get(c.image_key);
  if (!bytes) throw new ApiError(400, OMNI_ERRORS.charactersNotFound);
  const mime = c.image_mime as keyof typeof IMAGE_EXT;
  const key = uploads.add(`character-${n}.${IMAGE_EXT[mime] ?? "img"}`, bytes, c.image_mime);
  // The identity description: the name when the partner gave none (spec "Omni character").
  return {
    id: c.character_id,
    name: c.name,
    description: c.description || c.name,
    image: { key, mime_type: c.image_mime },
    voice: c.voice,
  };
}

export interface VideoRecordFields {
  model: OmniModel;
  prompt: string;
  character_ids: string[];
  voice_ids: string[];
  first_frame_url: string | null;
  last_frame_url: string | null;
  duration: OmniDuration;
  aspect_ratio: OmniAspectRatio;
  resolution: OmniResolution;
  reference_video: boolean;
  /** The job's input, kept with the record: prompt repair resubmits it with the new prompt. */
  input: OmniJobInput;
  batch_id?: string | null;
  section_index?: number | null;
  section_id?: string | null;
  section_title?: string | null;
}

export async function insertVideoRecord(trx: PluginDb, jobId: string, partnerId: string, f: VideoRecordFields) {
  await trx
    .insertInto(VIDEOS_TABLE)
    .values({
      ...f,
      job_id: jobId,
      partner_id: partnerId,
      character_ids: JSON.stringify(f.character_ids),
      voice_ids: JSON.stringify(f.voice_ids),
      input: JSON.stringify(f.input),
    })
    .execute();
}

/** The job input of a prepared request, its files added to `uploads`. */
async function jobInput(ctx: OperationContext, req: PreparedOmniVideo, uploads: PendingUploads): Promise<OmniJobInput> {
  const { width, height } = frameSize(req.resolution, req.aspectRatio);
  const characters = [];
  for (const [i, c] of req.characters.entries()) characters.push(await characterSnapshot(ctx, c, uploads, i + 1));
  const images = req.images.map((img, i) => {
    const mime = img.mimeType as keyof typeof IMAGE_EXT;
    return {
      key: uploads.add(`image-${i + 1}.${IMAGE_EXT[mime] ?? "img"}`, img.bytes, img.mimeType),
      mime_type: img.mimeType,
    };
  });
  const ref = req.referenceVideo;
  return {
    model: req.model,
    width,
    height,
    seconds: req.duration,
    seed: req.seed,
    strip_metadata: req.stripMetadata,
    first_frame_url: req.firstFrameUrl,
    last_frame_url: req.lastFrameUrl,
    characters,
    voices: req.voices satisfies CharacterVoice[],
    image_urls: req.imageUrls,
    images,
    // As downloaded, with its window: the job cuts it (references.ts).
    reference_video: ref
      ? {
          key: uploads.add("reference-source.bin", ref.bytes, "application/octet-stream"),
          seconds: Math.round((ref.end - ref.start) * 100) / 100,
          url: ref.url,
          start: ref.start,
          end: ref.end,
        }
      : null,
    callback_url: req.callbackUrl,
  };
}

/** Charges and queues one Omni clip of a prepared request; nothing stays behind when the charge is refused. */
export async function submitVideo(ctx: OperationContext, req: PreparedOmniVideo, credits: number, description: string) {
  const uploads = new PendingUploads();
  const input = await jobInput(ctx, req, uploads);
  await uploads.write(ctx);
  try {
    return await ctx.submitJob({
      kind: "video",
      state: "processing",
      credits,
      partnerJobId: req.partnerJobId,
      callbackUrl: req.callbackUrl,
      input: { ...input },
      description,
      insufficientCredits: OMNI_ERRORS.videoInsufficient,
      insertRecords: (trx, [jobId]) =>
        insertVideoRecord(trx, jobId!, ctx.partner.id, {
          model: req.model,
          prompt: req.prompt,
          character_ids: req.characters.map((c) => c.character_id),
          voice_ids: req.voices.map((v) => v.id),
          first_frame_url: req.firstFrameUrl,
          last_frame_url: req.lastFrameUrl,
          duration: req.duration,
          aspect_ratio: req.aspectRatio,
          resolution: req.resolution,
          reference_video: req.referenceVideo !== null,
          input,
        }),
    });
  } catch (err) {
    await uploads.remove(ctx);
    throw err;
  }
}

/** The clip's price for this account: a custom account without a rate gets its 400 here, before any download. */
export const priceOf = (
  ctx: OperationContext,
  req: Pick<PreparedOmniVideo, "resolution" | "duration">,
  referenceVideo: boolean,
) =>
  ctx.priceFor({
    ...omniVideoPrice(req.resolution, req.duration, referenceVideo),
    customRateMissing: OMNI_ERRORS.customNoRate,
  });
