// The `text.generate` capability: instructions + input in, text out. Prompt repair (plugins/omni) and ad
// analysis use it. Provided by plugins/text: a deterministic sandbox by default, or any OpenAI-compatible
// chat-completions endpoint when configured (TEXT_GENERATE_URL), called through the outbound guard.

export interface TextGenerationRequest {
  /** What to do, as a system prompt. */
  instructions: string;
  /** What to do it to (the user message). */
  input: string;
  /**
   * A stable name of the task (`prompt-repair`, `ad-analysis`, ...). Upstream models ignore it; the sandbox
   * uses it to answer deterministically and meaningfully for the tasks it knows.
   */
  task: string;
  /** Answer a JSON object (the adapter asks the endpoint for `response_format: json_object`). */
  json?: boolean;
  /** Cap on the answer's length in characters (default 20000); a longer answer is a failure. */
  maxChars?: number;
  signal?: AbortSignal;
}

export interface GeneratedText {
  text: string;
  /** What the generator says it changed or did, one short sentence (the sandbox always sets it). */
  notes?: string;
  /** Which provider answered (`sandbox`, `openai-compatible`): for logs, never shown to partners. */
  provider: string;
}

/** The provider answered an error, timed out or answered something unusable: the caller's 502 (refunded). */
export class TextGenerationError extends Error {}

export interface TextGenerator {
  generate(request: TextGenerationRequest): Promise<GeneratedText>;
}

declare module "./index.ts" {
  interface CapabilityMap {
    "text.generate": TextGenerator;
  }
}
