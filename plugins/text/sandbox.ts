// The deterministic sandbox of `text.generate` (the default when TEXT_GENERATE_URL is unset): no model, the
// same answer for the same request, and a useful one for the tasks it knows (sandbox-tasks.ts, one entry per
// task; any other task gets a digest of the input).
//
// It answers at once and does not sleep SANDBOX_LATENCY_MS: that variable simulates media rendering, while a
// text call is a small part of a request (prompt repair runs inside POST .../improve), and a sleep there would
// only slow every test and demo that goes through it.
//
// Markers (docs/architecture.md "Sandbox providers"): any input holding `[sandbox:fail]`, whatever the task, fails with
// TextGenerationError (the caller's 502). `[sandbox:unsafe]` is not a failure here: it is what prompt repair
// removes.
import {
  type GeneratedText,
  hasMarker,
  TextGenerationError,
  type TextGenerationRequest,
  type TextGenerator,
} from "mediagate/plugin";
import { DEFAULT_MAX_CHARS } from "./config.ts";
import { sandboxTask } from "./sandbox-tasks.ts";

export { digest, repairPrompt, SANDBOX_TASKS, UNSAFE_WORDS } from "./sandbox-tasks.ts";

export function sandboxTextGenerator(): TextGenerator {
  return {
    async generate(req: TextGenerationRequest): Promise<GeneratedText> {
      req.signal?.throwIfAborted();
      if (hasMarker(req.input, "fail"))
        throw new TextGenerationError("sandbox text generator: asked to fail ([sandbox:fail])");
      const { text, notes } = sandboxTask(req.task)(req);
      if (text.length > (req.maxChars ?? DEFAULT_MAX_CHARS))
        throw new TextGenerationError(
          `sandbox text generator: answer of ${text.length} characters is over the ${req.maxChars ?? DEFAULT_MAX_CHARS} allowed`,
        );
      return { text, notes, provider: "sandbox" };
    },
  };
}
