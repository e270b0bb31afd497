// Characters: POST/GET/DELETE /omni/characters. Creation is synchronous and charged (30 standard basis, 33 on
// api_plus10), not counted in the in-flight cap.
//
// Order of POST: pause (503), the body's rules (400), the image's size (413), kind and pixel budget (400, by
// its header: lib/media/budgets.ts), the URL image fetched through the outbound guard (400 when it cannot be
// had, is no image or is over the budget), the voice (400), the price (a custom account without a rate: 400);
// then the image is stored and the charge, the job row and the character row commit in one transaction; a
// refused charge (402) removes the stored image again.
//
// Choices where the spec is silent, written down here:
// - The character's id is its creation job's id (a `svc-` id, unique with every other).
// - `image_url` in every answer is our media link of the stored image (the spec: "hosted reference image"),
//   whichever way the image came; a URL image is fetched once, at creation.
// - `description` empty means the name is the identity (the video job uses it so); both are kept as sent,
//   the name trimmed.
// - DELETE removes the row and the image; videos already submitted keep their own copy (../videos/submit.ts).
// - A storage failure before the charge is a 502 with nothing charged; there is no failure after it.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  checkPicture,
  decodeImageBase64,
  IMAGE_EXT,
  imageKind,
  isOutboundError,
  type OutboundGuard,
  operation,
  type VideoFrame,
} from "mediagate/plugin";
import { z } from "zod";
import { charged } from "../answer-fields.ts";
import { OMNI_ERRORS } from "../errors.ts";
import { libraryDeleteOperation, libraryListOperation } from "../library.ts";
import { characterPrice, LIMITS, OMNI_FEATURE, OMNI_PAUSE } from "../prices.ts";
import {
  CHARACTERS_TABLE,
  type CharacterRecord,
  type CharacterVoice,
  findVoices,
  insertCharacter,
  timestamp,
} from "../records.ts";
import { CreateCharacterInput } from "./input.ts";

/** Characters as a library: DELETE removes the row and its image. */
const CHARACTER_LIBRARY = { table: CHARACTERS_TABLE, id: "character_id", file: "image_key" };
const IMAGE_FETCH_TIMEOUT_MS = 30_000;

const voiceObject = z
  .object({ id: z.string(), name: z.string(), base_voice: z.string(), base_voice_name: z.string() })
  .nullable();

const characterShape = z.object({
  character_id: z.string(),
  partner_job_id: z.string().nullable(),
  name: z.string(),
  description: z.string(),
  image_url: z.string(),
  voice_id: z.string().nullable(),
  voice: voiceObject,
  created_at: z.string(),
});

const voiceView = (v: CharacterVoice | null) =>
  v ? { id: v.id, name: v.name, base_voice: v.base_voice, base_voice_name: v.base_voice_name } : null;

const createCharacter = operation({
  method: "POST",
  path: "/omni/characters",
  status: 201,
  feature: OMNI_FEATURE,
  summary: "Create a reusable character from a reference image",
  input: CreateCharacterInput,
  // A 20 MB image is about 28 MB of base64; the decoded size is checked exactly below.
  maxBodyBytes: 30_000_000,
  bodyTooLarge: OMNI_ERRORS.imageTooLarge,
  output: characterShape.omit({ voice: true, created_at: true }).extend(charged),
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.unavailable);
    const req = ctx.input;
    let image: VideoFrame;
    if ("base64" in req.image) {
      const decoded = decodeImageBase64(req.image.base64, LIMITS.imageMaxBytes);
      if (!decoded.ok)
        throw decoded.reason === "too_large"
          ? new ApiError(413, OMNI_ERRORS.imageTooLarge)
          : new ApiError(400, OMNI_ERRORS.invalidImageBase64);
      // Over the pixel budget (lib/media/budgets.ts) is an image we cannot use: the spec's text for one.
      if (!checkPicture(decoded.image.bytes).ok) throw new ApiError(400, OMNI_ERRORS.invalidImageBase64);
      image = decoded.image;
    } else {
      image = await fetchImage(ctx.capability("outbound"), req.image.url, ctx.request.signal);
    }
    const voices = req.voiceId ? await findVoices(ctx.db, ctx.partner.id, [req.voiceId]) : [];
    if (!voices) throw new ApiError(400, OMNI_ERRORS.voicesNotFound);
    const voice = voices[0] ?? null;
    const credits = ctx.priceFor({ ...characterPrice(), customRateMissing: OMNI_ERRORS.customNoRate });

    const key = `characters/${randomBytes(16).toString("hex")}.${IMAGE_EXT[image.mimeType as keyof typeof IMAGE_EXT] ?? "img"}`;
    try {
      await ctx.blobs.put(key, image.bytes, { contentType: image.mimeType });
    } catch (err) {
      ctx.log.warn(`omni character image not stored: ${err instanceof Error ? err.message : String(err)}`);
      throw new ApiError(502, OMNI_ERRORS.characterFailed);
    }
    try {
      const job = await ctx.submitJob({
        kind: "character",
        state: "created",
        terminal: true,
        credits,
        partnerJobId: req.partnerJobId,
        description: `Omni character: ${req.name.slice(0, 120)}`,
        insufficientCredits: OMNI_ERRORS.characterInsufficient,
        insertRecords: (trx, [jobId]) =>
          insertCharacter(trx, {
            character_id: jobId!,
            partner_id: ctx.partner.id,
            partner_job_id: req.partnerJobId,
            name: req.name,
            description: req.description,
            image_key: key,
            image_mime: image.mimeType,
            voice_id: voice?.id ?? null,
            voice,
            credits_used: credits,
          }),
      });
      return {
        character_id: job.jobId,
        partner_job_id: req.partnerJobId,
        name: req.name,
        description: req.description,
        image_url: ctx.mediaUrl(key),
        voice_id: voice?.id ?? null,
        credits_used: job.creditsUsed,
        credits_remaining: job.creditsRemaining,
      };
    } catch (err) {
      // A refused charge (402, a custom rate's 400) leaves nothing behind.
      await ctx.blobs.remove(key).catch(() => {});
      throw err;
    }
  },
});

/** The image at a URL, through the outbound guard, before any charge; every failure is the partner's 400. */
async function fetchImage(guard: OutboundGuard, url: string, signal: AbortSignal): Promise<VideoFrame> {
  const checked = guard.checkUrl(url);
  if (!checked.ok) throw new ApiError(400, OMNI_ERRORS.invalidImageUrl(checked.reason));
  let body: Uint8Array;
  try {
    body = (
      await guard.fetch(checked.url, { maxBytes: LIMITS.imageMaxBytes, timeoutMs: IMAGE_FETCH_TIMEOUT_MS, signal })
    ).body;
  } catch (err) {
    if (signal.aborted) throw err;
    if (!isOutboundError(err)) throw err;
    const reason =
      err.kind === "too_large"
        ? "larger than 20 MB"
        : err.kind === "http_status"
          ? `the server answered ${err.status}`
          : err.kind === "timeout"
            ? "timed out"
            : err.kind === "not_public"
              ? "not a public address"
              : "could not be downloaded";
    throw new ApiError(400, OMNI_ERRORS.invalidImageUrl(reason));
  }
  const mimeType = imageKind(body);
  if (!mimeType) throw new ApiError(400, OMNI_ERRORS.invalidImageUrl("not a PNG, JPEG or WebP image"));
  const budget = checkPicture(body);
  if (!budget.ok) throw new ApiError(400, OMNI_ERRORS.invalidImageUrl(budget.reason));
  return { bytes: body, mimeType, url };
}

/** A character as every answer shows it; a stored voice snapshot may still be JSON text. */
function characterView(
  r: CharacterRecord & { voice: CharacterVoice | string | null },
  mediaUrl: (key: string) => string,
): z.infer<typeof characterShape> {
  const voice = typeof r.voice === "string" ? (JSON.parse(r.voice) as CharacterVoice) : r.voice;
  return {
    character_id: r.character_id,
    partner_job_id: r.partner_job_id,
    name: r.name,
    description: r.description,
    image_url: mediaUrl(r.image_key),
    voice_id: r.voice_id,
    voice: voiceView(voice),
    created_at: timestamp(r.created_at),
  };
}

const listCharacters = libraryListOperation({
  path: "/omni/characters",
  summary: "This account's characters, newest first",
  library: CHARACTER_LIBRARY,
  field: "characters",
  shape: characterShape,
  view: characterView,
});

const deleteCharacter = libraryDeleteOperation({
  path: "/omni/characters/<id>",
  summary: "Delete a character",
  library: CHARACTER_LIBRARY,
});

export const characterOperations = [createCharacter, listCharacters, deleteCharacter];
