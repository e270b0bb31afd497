// The text plugin's declared configuration, read by the kernel at boot (a bad value stops the boot by name):
// the OpenAI-compatible chat-completions endpoint (openai-chat.ts). TEXT_GENERATE_URL unset: the deterministic
// sandbox answers (sandbox.ts) and the other three variables are not used.

import { defineConfig, envVar, upstreamBaseUrl } from "mediagate/plugin";
import { z } from "zod";

/** TextGenerationRequest.maxChars when the caller gives none (contracts/text.ts), for both providers. */
export const DEFAULT_MAX_CHARS = 20_000;

/**
 * The token cap every chat request carries (a runaway or hostile model cannot answer forever; the answer is
 * still checked against maxChars). A token is at least one character of the answer nearly always, so the cap
 * is the answer's character cap, within a floor (reasoning models count their hidden reasoning in it too:
 * a small cap would cut a short answer) and a ceiling (what we would pay for at most).
 */
export const ANSWER_TOKENS = { floor: 4_096, ceiling: 16_384 } as const;

/** The `max_tokens` / `max_completion_tokens` of a request whose answer may have `maxChars` characters. */
export function answerTokens(maxChars: number): number {
  return Math.min(ANSWER_TOKENS.ceiling, Math.max(ANSWER_TOKENS.floor, Math.ceil(maxChars)));
}

/** One call's deadline: a chat answer of a few hundred words takes seconds; a loaded server, tens of seconds. */
export const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_TIMEOUT_MS = 600_000;

// The same rule as CAPTIONS_TRANSCRIBE_URL: http(s), no credentials (they belong in the key), no query or fragment.
const baseUrl = upstreamBaseUrl("https://api.openai.com");

export const textConfig = defineConfig({
  url: envVar(
    "TEXT_GENERATE_URL",
    baseUrl,
    "base URL of an OpenAI-compatible API (POST <url>/v1/chat/completions; a URL ending in /v1 gets /chat/completions, one ending in /chat/completions is used as is); unset: the deterministic sandbox answers",
  ),
  key: envVar(
    "TEXT_GENERATE_KEY",
    z.string().optional(),
    "secret: the text endpoint's API key, sent as a Bearer token and never logged (unset: no Authorization header)",
  ),
  model: envVar(
    "TEXT_GENERATE_MODEL",
    z
      .string()
      .trim()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, "must be a model name (printable ASCII, no spaces)")
      .default("gpt-4o-mini"),
    "the chat model (default gpt-4o-mini)",
  ),
  timeoutMs: envVar(
    "TEXT_GENERATE_TIMEOUT_MS",
    z
      .string()
      .regex(/^\d+$/, "must be a positive integer")
      .transform(Number)
      .refine((n) => n > 0 && n <= MAX_TIMEOUT_MS, `must be between 1 and ${MAX_TIMEOUT_MS}`)
      .default(DEFAULT_TIMEOUT_MS),
    `deadline of one call in milliseconds (default ${DEFAULT_TIMEOUT_MS})`,
  ),
});

export type TextSettings = ReturnType<typeof textConfig.of>;
