// `text.generate` through any OpenAI-compatible chat-completions endpoint (OpenAI, or a self-hosted server
// speaking the same API: vLLM, llama.cpp, Ollama, LiteLLM), configured by TEXT_GENERATE_URL / _KEY / _MODEL /
// _TIMEOUT_MS (config.ts): POST <base>/v1/chat/completions with the instructions as the system message and the
// input as the user's, temperature 0 (the same request, as nearly as the model allows the same answer), and
// `response_format: {type: "json_object"}` when JSON is asked; the answer is `choices[0].message.content`.
//
// The URL is a base URL, as the captions adapter takes its own (one rule, lib/outbound/upstream-url.ts); a
// base ending in /v1 (as OpenAI's SDKs take it) is not doubled, and a full URL ending in /chat/completions is
// used as is, since that is what many servers' documentation shows.
//
// Called through the kernel's outbound guard (docs/architecture.md invariant 6): an endpoint on a private address is refused
// unless ALLOW_PRIVATE_URLS, redirects are not followed, the call has a deadline and the answer a size cap.
// Every failure (HTTP error, time-out, unreachable, not the API's JSON, no content, an answer cut off or over
// maxChars, invalid JSON in JSON mode) is a TextGenerationError: the caller's 502, refunded.
//
// Every request carries a token cap (config.ts answerTokens). The field: `max_completion_tokens` to OpenAI's
// own API, which deprecated `max_tokens` and refuses it for its reasoning models (o-series, gpt-5); `max_tokens`
// to any other server, since the OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LiteLLM) all read it and
// some ignore the newer name, which would leave the answer uncapped.
//
// The answer is upstream text (lib/upstream-text.ts): NUL and other control characters, and unpaired
// surrogates (also where JSON mode wrote them as escapes), are cleaned out before anyone stores it, and the
// endpoint's own error text is cleaned and capped before it reaches a log line.
//
// The key is a secret (docs/architecture.md invariant 7): sent as a Bearer token and nowhere else. A 401/403 answer's text is
// never repeated (OpenAI's echoes part of the key), and every other message has the key, and anything shaped
// like a key or a Bearer token, cut out.
import {
  cleanUpstreamJson,
  cleanUpstreamText,
  describeCallFailure,
  errorAnswerDetail,
  type OutboundGuard,
  redactKey,
  TextGenerationError,
  type TextGenerationRequest,
  type TextGenerator,
} from "mediagate/plugin";
import { answerTokens, DEFAULT_MAX_CHARS, type TextSettings } from "./config.ts";

const PATH = "/v1/chat/completions";
/** A chat answer is a few kB; 4 MB is far beyond any answer we cap at 20,000 characters. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** How much of the endpoint's own error message an error carries. */
const MAX_MESSAGE_CHARS = 200;
const MAX_ERROR_CHARS = 400;

/** The URL posted to: a full .../chat/completions URL as is, a base ending in /v1 plus the rest, else base + PATH. */
export function endpointOf(base: string): string {
  const trimmed = base.replace(/(?<!\/)\/+$/, "");
  if (/\/chat\/completions$/.test(trimmed)) return trimmed;
  return /\/v1$/.test(trimmed) ? `${trimmed}/chat/completions` : `${trimmed}${PATH}`;
}

/** `text` with the key and anything shaped like an API key removed. */
export const redact = redactKey;

/** The parts of a chat-completions answer we read. */
interface ChatAnswer {
  choices?: Array<{ message?: { content?: unknown; refusal?: unknown }; finish_reason?: unknown }>;
}

/** The name of the token cap the endpoint reads (see the head of this file). */
export function tokenField(endpoint: string): "max_tokens" | "max_completion_tokens" {
  let host = "";
  try {
    host = new URL(endpoint).hostname.toLowerCase();
  } catch {
    // not a URL: config.ts validated it, so this does not happen
  }
  return host === "api.openai.com" ? "max_completion_tokens" : "max_tokens";
}

export function openAiChatGenerator(settings: TextSettings & { url: string }, guard: OutboundGuard): TextGenerator {
  const endpoint = endpointOf(settings.url);
  const capField = tokenField(endpoint);
  const fail = (message: string): never => {
    throw new TextGenerationError(cleanUpstreamText(redact(message, settings.key), MAX_ERROR_CHARS));
  };
  return {
    async generate(req: TextGenerationRequest) {
      const maxChars = req.maxChars ?? DEFAULT_MAX_CHARS;
      const body = JSON.stringify({
        model: settings.model,
        temperature: 0,
        [capField]: answerTokens(maxChars),
        messages: [
          { role: "system", content: req.instructions },
          { role: "user", content: req.input },
        ],
        ...(req.json ? { response_format: { type: "json_object" } } : {}),
      });
      let res;
      try {
        res = await guard.fetch(endpoint, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json",
            ...(settings.key ? { authorization: `Bearer ${settings.key}` } : {}),
          },
          body,
          timeoutMs: settings.timeoutMs,
          maxBytes: MAX_ANSWER_BYTES,
          ...(req.signal ? { signal: req.signal } : {}),
          // Every status is read here, so an error answer's own message can be reported.
          acceptStatus: () => true,
        });
      } catch (err) {
        // The caller gave up: its reason, not a provider failure.
        if (req.signal?.aborted) throw req.signal.reason;
        return fail(`text endpoint failed (${describeCallFailure(err)})`);
      }
      const raw = new TextDecoder().decode(res.body);
      if (res.status < 200 || res.status >= 300) {
        return fail(
          `text endpoint answered ${res.status}${errorAnswerDetail(res.status, raw, settings.key, MAX_MESSAGE_CHARS)}`,
        );
      }
      let answer: ChatAnswer;
      try {
        answer = JSON.parse(raw) as ChatAnswer;
      } catch {
        return fail("text endpoint answered malformed JSON");
      }
      const choice = Array.isArray(answer?.choices) ? answer.choices[0] : undefined;
      if (!choice || typeof choice !== "object") return fail("text endpoint answered no choices");
      const answered = choice.message?.content;
      // Control characters and unpaired surrogates out (a NUL in an answer was a 500 when it was stored),
      // once the answer is known to be within maxChars: a 4 MB answer of them is refused, not cleaned.
      const content =
        typeof answered === "string" && answered.length <= maxChars ? cleanUpstreamText(answered, maxChars) : answered;
      if (typeof content !== "string" || content.trim() === "") {
        return fail(
          typeof choice.message?.refusal === "string"
            ? "text endpoint refused the request"
            : "text endpoint answered no content",
        );
      }
      // A cut-off answer is half a prompt or half a JSON object: a failure, not a shorter answer.
      if (choice.finish_reason === "length") return fail("text endpoint's answer was cut off (finish_reason length)");
      if (content.length > maxChars)
        return fail(`text endpoint answered ${content.length} characters, over the ${maxChars} allowed`);
      if (req.json) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(content);
        } catch {
          return fail("text endpoint answered invalid JSON in JSON mode");
        }
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
          return fail("text endpoint answered JSON that is not an object in JSON mode");
        // "\u0000" written as an escape is a NUL only once parsed: the strings are cleaned, the text rewritten.
        return { text: JSON.stringify(cleanUpstreamJson(parsed, maxChars)), provider: "openai-compatible" };
      }
      return { text: content, provider: "openai-compatible" };
    },
  };
}
