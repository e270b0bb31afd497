// The captions plugin's declared configuration (read by the kernel at boot; a bad value stops the boot by
// name). All of it is about transcription: the OpenAI-compatible upstream adapter (transcribe/openai.ts), where
// the offline recognizer is (transcribe/pocketsphinx.ts) and the order in which the chain (transcribe/index.ts)
// tries its providers.

import { defineConfig, envVar, upstreamBaseUrl } from "mediagate/plugin";
import { z } from "zod";

/** The providers the chain knows, by the name each answers under (Transcript.provider). */
export const PROVIDER_NAMES = ["spoken", "timed-text", "pocketsphinx", "openai"] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/**
 * Our own record and an embedded track first: they are exact and free. Then the offline recognizer, then the
 * upstream, which costs money per minute and sends the audio out. An operator who configures the upstream
 * adapter because it is better (pocketsphinx is modest on real speech) puts it before pocketsphinx:
 * CAPTIONS_TRANSCRIBE_ORDER=spoken,timed-text,openai,pocketsphinx (pocketsphinx then only answers when the
 * upstream fails or is unconfigured).
 */
export const DEFAULT_ORDER: readonly ProviderName[] = ["spoken", "timed-text", "pocketsphinx", "openai"];

const order = z
  .string()
  .optional()
  .transform((text, ctx): ProviderName[] => {
    if (text === undefined || text.trim() === "") return [...DEFAULT_ORDER];
    const names = text.split(",").map((s) => s.trim().toLowerCase());
    for (const name of names) {
      if (!(PROVIDER_NAMES as readonly string[]).includes(name)) {
        ctx.addIssue({
          code: "custom",
          message: `must list providers among ${PROVIDER_NAMES.join(", ")}, comma-separated ("${name}" is none of them)`,
        });
        return z.NEVER;
      }
    }
    if (new Set(names).size !== names.length) {
      ctx.addIssue({ code: "custom", message: "must not list a provider twice" });
      return z.NEVER;
    }
    return names as ProviderName[];
  });

const baseUrl = upstreamBaseUrl("https://api.openai.com");

export const captionsConfig = defineConfig({
  transcribeUrl: envVar(
    "CAPTIONS_TRANSCRIBE_URL",
    baseUrl,
    "base URL of an OpenAI-compatible transcription API (POST <url>/v1/audio/transcriptions; a URL ending in /v1 is used as is); unset: the upstream adapter is off",
  ),
  transcribeKey: envVar(
    "CAPTIONS_TRANSCRIBE_KEY",
    z.string().optional(),
    "secret: the upstream's API key, sent as a Bearer token and never logged (unset: no Authorization header)",
  ),
  transcribeModel: envVar(
    "CAPTIONS_TRANSCRIBE_MODEL",
    z
      .string()
      .trim()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, "must be a model name (printable ASCII, no spaces)")
      .default("whisper-1"),
    "the upstream's transcription model (default whisper-1)",
  ),
  pocketsphinxPath: envVar(
    "CAPTIONS_POCKETSPHINX_PATH",
    z.string().trim().min(1).optional(),
    "the pocketsphinx_continuous binary (default: pocketsphinx_continuous on PATH; pocketsphinx_batch is looked up beside it)",
  ),
  transcribeOrder: envVar(
    "CAPTIONS_TRANSCRIBE_ORDER",
    order,
    `the transcription providers in the order tried, comma-separated (default ${DEFAULT_ORDER.join(",")}; put openai before pocketsphinx for better quality)`,
  ),
});

export type CaptionsConfig = ReturnType<typeof captionsConfig.of>;

/** The account feature switch that turns every caption endpoint on or off (spec part 1, features). */
export const CAPTIONS_FEATURE = "captions";
