// Voiceover (spec part 3, "Voiceover record" and the Voiceover endpoints; part 1 for `costs.voiceover`, the
// in-flight cap and the rate limits). POST /generate-voiceover is synchronous: validate everything, charge
// through the kernel's tier math, synthesize through `speech.synthesize` (the sandbox by default) under the
// model's time-out, store the audio under a permanent media link, and on any upstream failure refund and
// answer the spec's 502 text.
//
// Choices where the spec is silent, written down here:
// - The charge is a job (`job_id`) that holds an in-flight slot while the speech is made, like any counted
//   job; it is finished `success` or `failed` (refunded) before the response, so the slot is released then.
// - `status` is `processing` while synthesizing, then `success` or `failed`; a failed attempt stays listed
//   with its sanitized `error_message` and `credits_used` as charged (the refund is a ledger row).
// - `char_count` counts Unicode code points of the text with surrounding whitespace trimmed; that is what is
//   spoken and billed, and what the 5000 limit applies to.
// - `output_format` identifiers are `mp3_<rate>_<kbps>`, `opus_48000_<kbps>` (Ogg), and `pcm_<rate>`,
//   `ulaw_8000`, `alaw_8000` (WAV container, so the file plays as is). Others are a 400 before any charge.
// - `source` is at most 200 characters; `partner_job_id` (convention 5) is accepted, echoed and listed.
// - An upstream answer of HTTP 400 or above (the sandbox's markers included) is "generation failed"; a
//   time-out, a network error or anything else thrown is "service unavailable".
// - A custom-tier account is billed with its negotiated `voiceover.models.<id>.chars_per_credit`; without one
//   it gets the kernel's custom-rate 400 before any charge.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  operation,
  PAGE_BOUNDS,
  pageBody,
  pageQuery,
  pageShape,
  SpeechHttpError,
  synthesizeWithin,
} from "mediagate/plugin";
import { z } from "zod";
import { VOICEOVER_ERRORS } from "./errors.ts";
import { GenerateVoiceoverInput } from "./input.ts";
import { DEFAULT_MODEL, MODEL_IDS, MODELS, VOICES } from "./models.ts";
import { priceOf } from "./prices.ts";
import { insertVoiceover, listView, storeAudioKey, voiceovers } from "./records.ts";

// The fields both answers give, in the spec's order: the record's ids, then the voice, the model, the size and the charge.
const recordIds = {
  id: z.number().int(),
  job_id: z.string(),
  partner_job_id: z.string().nullable(),
};
const spokenAs = {
  voice_id: z.string(),
  voice_name: z.string(),
  model_id: z.string(),
  char_count: z.number().int(),
  credits_used: z.number().int(),
};

interface JobOutput {
  audio_key: string;
  duration: number;
}

const failureText = (err: unknown) =>
  err instanceof SpeechHttpError ? VOICEOVER_ERRORS.failed : VOICEOVER_ERRORS.unavailable;

export const voicesOperation = operation({
  method: "GET",
  path: "/voiceover/voices",
  summary: "The voice catalog and the voiceover models",
  output: z.object({
    voices: z.array(
      z.object({
        voice_id: z.string(),
        name: z.string(),
        lang: z.string(),
        gender: z.string(),
        description: z.string(),
      }),
    ),
    models: z.array(z.object({ id: z.string(), label: z.string() })),
    default_model: z.string(),
  }),
  async handle() {
    return {
      voices: VOICES.map((v) => ({ ...v })),
      models: MODEL_IDS.map((id) => ({ id, label: MODELS[id].label })),
      default_model: DEFAULT_MODEL,
    };
  },
});

export const generateVoiceover = operation({
  method: "POST",
  path: "/generate-voiceover",
  inflight: true,
  summary: "Synthesize speech from text (synchronous)",
  input: GenerateVoiceoverInput,
  output: z.object({ ...recordIds, audio_url: z.string(), ...spokenAs, credits_remaining: z.number().int() }),
  async handle(ctx) {
    const req = ctx.input;
    const provider = ctx.capability("speech.synthesize").provider(req.model);
    if (!provider) throw new ApiError(503, VOICEOVER_ERRORS.notConfigured);
    const credits = priceOf(ctx, req.model, req.charCount);

    let id = 0;
    const job = await ctx.submitJob({
      kind: "voiceover",
      state: "processing",
      credits,
      partnerJobId: req.partner_job_id,
      description: `Voiceover: ${req.charCount} characters, ${req.model}`,
      input: { output_format: req.format.id },
      async insertRecords(trx, [jobId]) {
        id = await insertVoiceover(trx, {
          job_id: jobId!,
          partner_id: ctx.partner.id,
          text: req.text,
          voice_id: req.voice.voice_id,
          voice_name: req.voice.name,
          model_id: req.model,
          output_format: req.format.id,
          char_count: req.charCount,
          source: req.source,
        });
      },
    });

    let key: string;
    try {
      const audio = await synthesizeWithin(
        provider,
        { text: req.text, voiceId: req.voice.voice_id, model: req.model, format: req.format },
        MODELS[req.model].timeoutMs,
        ctx.request.signal,
      );
      if (audio.bytes.byteLength === 0) throw new SpeechHttpError(502, "empty audio");
      key = `audio/${job.jobId}-${randomBytes(16).toString("hex")}.${req.format.extension}`; // 128 random bits: a capability URL
      await ctx.blobs.put(key, audio.bytes, { contentType: req.format.mimeType });
      await storeAudioKey(ctx.db, job.jobId, key);
      await ctx.finishJob(job.jobId, {
        state: "success",
        refund: false,
        output: { audio_key: key, duration: audio.durationSeconds } satisfies JobOutput,
      });
    } catch (err) {
      const text = failureText(err);
      // The provider's own words stay in our log; the partner gets the sanitized text.
      ctx.log.warn(`voiceover ${job.jobId} failed: ${err instanceof Error ? err.message : String(err)}`);
      await ctx.finishJob(job.jobId, { state: "failed", refund: true, error: text });
      throw new ApiError(502, text);
    }
    return {
      id,
      job_id: job.jobId,
      partner_job_id: req.partner_job_id,
      audio_url: ctx.mediaUrl(key),
      voice_id: req.voice.voice_id,
      voice_name: req.voice.name,
      model_id: req.model,
      char_count: req.charCount,
      credits_used: job.creditsUsed,
      credits_remaining: job.creditsRemaining,
    };
  },
});

export const listVoiceovers = operation({
  method: "GET",
  path: "/voiceovers",
  summary: "This account's voiceovers, newest first",
  input: pageQuery(PAGE_BOUNDS.voiceovers),
  output: pageShape(
    "voiceovers",
    z.object({
      ...recordIds,
      text: z.string(),
      ...spokenAs,
      audio_url: z.string().nullable(),
      status: z.enum(["processing", "success", "failed"]),
      error_message: z.string().nullable(),
      source: z.string(),
      created_at: z.string(),
    }),
  ),
  async handle(ctx) {
    const page = await voiceovers.page(ctx.db, ctx.partner.id, ctx.input);
    return pageBody("voiceovers", page, ctx.input, (row) => listView(row, ctx.mediaUrl));
  },
});
