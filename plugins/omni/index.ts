// Omni (spec part 3, "Omni character" to "Omni batch", the Omni endpoints, states, events, errors and limits):
// reusable characters (charged, synchronous) and voices (free) of an account's library, character-consistent
// videos rendered through `omni.generate` (the sandbox by default), the batch runner, and prompt repair
// through `text.generate`. Each step has its folder, with the plugin's usual file names inside:
//   characters/  the account's characters          voices/   presets and the account's voices
//   videos/      the Omni video job, submit, status, list, every check before the charge
//   batch/       the batch runner (one job per section)   improve/  prompt repair
// and beside them prices.ts (numbers and prices), errors.ts (every text), records.ts (the tables' reads).
//
// Choices where the spec is silent, written down here:
// - Feature switch `omni` (admin API) turns the whole area off for an account (403); the service-wide pause
//   `omni` answers 503 `Omni is currently unavailable` to every POST (voices: the spec's text with its full stop).
import { definePlugin } from "mediagate/plugin";
import { batchOperations } from "./batch/operations.ts";
import { captionableOmniVideos } from "./captionable.ts";
import { characterOperations } from "./characters/operations.ts";
import { repairJob } from "./improve/job.ts";
import { improveOperations } from "./improve/operations.ts";
import { omniMigrations } from "./migrations.ts";
import { OMNI_COSTS, OMNI_FEATURE, OMNI_PAUSE } from "./prices.ts";
import { omniVideoJob } from "./videos/job.ts";
import { videoOperations } from "./videos/operations.ts";
import { voiceOperations } from "./voices/operations.ts";

export default definePlugin({
  name: "omni",
  requires: ["omni.generate", "text.generate", "media", "outbound"],
  costs: OMNI_COSTS,
  features: [OMNI_FEATURE],
  pauses: [OMNI_PAUSE],
  jobs: { video: omniVideoJob, repair: repairJob },
  contributes: { "captionable.videos": captionableOmniVideos },
  operations: [
    ...characterOperations,
    ...voiceOperations,
    ...videoOperations,
    ...batchOperations,
    ...improveOperations,
  ],
  migrations: omniMigrations,
});
