// Voices: GET /omni/voice-presets, POST/GET/DELETE /omni/voices. Free and synchronous: no job, no ledger line.
//
// Choices where the spec is silent, written down here:
// - Samples are WAV (16-bit mono, eSpeak's 22,050 Hz): what the synthesizer makes, playable everywhere, and
//   100-200 kB for a sentence. A preset's sample says "Hi, I'm <Name>. This is how I sound." in its voice; it
//   is synthesized once, on the first GET /omni/voice-presets of a process that does not find it stored, under
//   a key made of the preset, its voice settings and the sentence (every process finds the same file; a
//   change of voice or text makes a new one). A partner voice's sample says its `example_dialogue`, or "Hi,
//   I'm <name>." when there is none, in its base preset's voice, under a 128-bit key.
// - `name` is trimmed; descriptions are kept as sent. The voice fields of every answer are the create
//   response's: voice_id, partner_job_id, name, base_voice, base_voice_name, gender, traits, description,
//   example_dialogue, sample_url, created_at.
// - DELETE removes the row and its sample; characters keep the voice they were created with (a snapshot).
import { createHash } from "node:crypto";
import type { Selectable } from "kysely";
import { ApiError, allocateServiceId, type BlobStore, mediaToken, operation, speak } from "mediagate/plugin";
import { z } from "zod";
import { OMNI_ERRORS } from "../errors.ts";
import { libraryDeleteOperation, libraryListOperation } from "../library.ts";
import { OMNI_FEATURE, OMNI_PAUSE } from "../prices.ts";
import { timestamp, VOICES_TABLE, type VoiceRow } from "../records.ts";
import { CreateVoiceInput } from "./input.ts";
import { presetById, VOICE_PRESETS, type VoicePreset } from "./presets.ts";

/** A voice row as read back (its creation time a Date). */
type Voice = Selectable<VoiceRow>;

/** Voices as a library: DELETE removes the row and its sample. */
const VOICE_LIBRARY = { table: VOICES_TABLE, id: "voice_id", file: "sample_key" };
const WAV = "audio/wav";

const presetSentence = (p: VoicePreset) => `Hi, I'm ${p.name}. This is how I sound.`;

function presetSampleKey(p: VoicePreset): string {
  const hash = createHash("sha256")
    .update(JSON.stringify([p.espeak, presetSentence(p)]))
    .digest("hex")
    .slice(0, 16);
  return `presets/${p.id}-${hash}.wav`;
}

// One synthesis per blob store and process, however many first requests arrive together.
const presetSamples = new WeakMap<BlobStore, Promise<void>>();

async function ensurePresetSamples(blobs: BlobStore, signal: AbortSignal): Promise<void> {
  let ready = presetSamples.get(blobs);
  if (!ready) {
    ready = (async () => {
      for (const p of VOICE_PRESETS) {
        const key = presetSampleKey(p);
        if (await blobs.has(key)) continue;
        const wav = await speak(presetSentence(p), p.espeak);
        await blobs.put(key, wav.bytes, { contentType: WAV });
      }
    })();
    presetSamples.set(blobs, ready);
    // A failure is not cached: the next request tries again.
    ready.catch(() => presetSamples.delete(blobs));
  }
  signal.throwIfAborted();
  await ready;
}

const presetShape = z.object({
  id: z.string(),
  name: z.string(),
  gender: z.string(),
  traits: z.string(),
  sample_url: z.string(),
});

const voiceShape = z.object({
  voice_id: z.string(),
  partner_job_id: z.string().nullable(),
  name: z.string(),
  base_voice: z.string(),
  base_voice_name: z.string(),
  gender: z.string(),
  traits: z.string(),
  description: z.string(),
  example_dialogue: z.string(),
  sample_url: z.string(),
  created_at: z.string(),
});

function voiceView(row: Voice, mediaUrl: (key: string) => string): z.infer<typeof voiceShape> {
  const preset = presetById(row.base_voice);
  return {
    voice_id: row.voice_id,
    partner_job_id: row.partner_job_id,
    name: row.name,
    base_voice: row.base_voice,
    base_voice_name: preset?.name ?? row.base_voice,
    gender: preset?.gender ?? "neutral",
    traits: preset?.traits ?? "",
    description: row.description,
    example_dialogue: row.example_dialogue,
    sample_url: mediaUrl(row.sample_key),
    created_at: timestamp(row.created_at),
  };
}

const listPresets = operation({
  method: "GET",
  path: "/omni/voice-presets",
  feature: OMNI_FEATURE,
  summary: "The 30 preset voices, each with a spoken sample",
  output: z.object({ presets: z.array(presetShape) }),
  async handle(ctx) {
    await ensurePresetSamples(ctx.blobs, ctx.request.signal);
    return {
      presets: VOICE_PRESETS.map((p) => ({
        id: p.id,
        name: p.name,
        gender: p.gender,
        traits: p.traits,
        sample_url: ctx.mediaUrl(presetSampleKey(p)),
      })),
    };
  },
});

const createVoice = operation({
  method: "POST",
  path: "/omni/voices",
  status: 201,
  feature: OMNI_FEATURE,
  summary: "Create a voice from a preset (free)",
  input: CreateVoiceInput,
  output: voiceShape,
  async handle(ctx) {
    if (await ctx.isPaused(OMNI_PAUSE)) throw new ApiError(503, OMNI_ERRORS.voicesUnavailable);
    const { preset, name, description, exampleDialogue, partnerJobId } = ctx.input;
    const key = `voices/${mediaToken()}.wav`;
    try {
      const wav = await speak(exampleDialogue.trim() || `Hi, I'm ${name}.`, preset.espeak, ctx.request.signal);
      await ctx.blobs.put(key, wav.bytes, { contentType: WAV });
    } catch (err) {
      if (ctx.request.signal.aborted) throw err;
      ctx.log.warn(`omni voice sample failed: ${err instanceof Error ? err.message : String(err)}`);
      await ctx.blobs.remove(key).catch(() => {});
      throw new ApiError(502, OMNI_ERRORS.voiceFailed);
    }
    try {
      const row = (await ctx.db.transaction().execute(async (trx) => {
        const voiceId = await allocateServiceId(trx);
        return trx
          .insertInto(VOICES_TABLE)
          .values({
            voice_id: voiceId,
            partner_id: ctx.partner.id,
            partner_job_id: partnerJobId,
            name,
            base_voice: preset.id,
            description,
            example_dialogue: exampleDialogue,
            sample_key: key,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      })) as Voice;
      return voiceView(row, ctx.mediaUrl);
    } catch (err) {
      await ctx.blobs.remove(key).catch(() => {});
      throw err;
    }
  },
});

const listVoices = libraryListOperation({
  path: "/omni/voices",
  summary: "This account's voices, newest first",
  library: VOICE_LIBRARY,
  field: "voices",
  shape: voiceShape,
  view: voiceView,
});

const deleteVoice = libraryDeleteOperation({
  path: "/omni/voices/<id>",
  summary: "Delete a voice (characters created with it keep it)",
  library: VOICE_LIBRARY,
});

export const voiceOperations = [listPresets, createVoice, listVoices, deleteVoice];
