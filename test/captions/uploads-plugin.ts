// The upload operations as a plugin for the upload tests: the captions plugin's name, feature, price and
// tables with the five upload operations, and a caption job kind that never runs (the tests do not start
// workers), so these tests are about uploads alone, whatever state the rest of the captions area is in.
import { definePlugin } from "../../core/plugin.ts";
import { captionsConfig } from "../../plugins/captions/config.ts";
import { CAPTION_STATES } from "../../plugins/captions/job.ts";
import { captionMigrations } from "../../plugins/captions/migrations.ts";
import { CAPTION_CREDITS } from "../../plugins/captions/prices.ts";
import { uploadMigrations } from "../../plugins/captions/upload-migrations.ts";
import { uploadOperations } from "../../plugins/captions/uploads/operations.ts";

/** The style check the operations use, for the tests' expected texts. */
export { checkStyle } from "../../plugins/captions/style/input.ts";
export { uploadMigrations, uploadOperations };

/** The caption job kind's states, with a runner the tests never start. */
const standInJob = {
  ...CAPTION_STATES,
  failError: "Caption rendering failed",
  async run() {
    return { state: "failed" as const, output: {} };
  },
} as const;

export const uploadsPlugin = definePlugin({
  name: "captions",
  features: ["captions"],
  costs: { captions: CAPTION_CREDITS },
  // The operations read it: without a speech recognizer (pocketsphinx or CAPTIONS_TRANSCRIBE_URL) they answer 503.
  config: captionsConfig,
  operations: uploadOperations,
  jobs: { caption: standInJob as any },
  migrations: [...captionMigrations, ...uploadMigrations],
});
