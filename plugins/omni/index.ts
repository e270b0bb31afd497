// Omni (spec part 3, "Omni character" to "Omni batch", the Omni endpoints, states, events, errors and limits):
// reusable characters (charged, synchronous) and voices (free) of an account's library, character-consistent
// videos rendered through `omni.generate` (the sandbox by default), the batch runner, and prompt repair
// through `text.generate`. Each module holds one area; this file only assembles the declaration:
//   voices.ts      presets and the account's voices          characters.ts  the account's characters
//   video.ts       the Omni video job, submit, status, list  video-input.ts every check before the charge
//   batch.ts       the batch runner (one job per section)     improve.ts     prompt repair
//   limits.ts      numbers and prices                         errors.ts      every text
//
// Choices where the spec is silent, written down here:
// - Feature switch `omni` (admin API) turns the whole area off for an account (403); the service-wide pause
//   `omni` answers 503 `Omni is currently unavailable` to every POST (voices: the spec's text with its full stop).
import { definePlugin } from "mediagate/plugin";
import { batchOperations } from "./batch.ts";
import { captionableOmniVideos } from "./captionable.ts";
import { characterOperations } from "./characters.ts";
import { improveOperations, repairJob } from "./improve.ts";
import { OMNI_COSTS, OMNI_FEATURE, OMNI_PAUSE } from "./limits.ts";
import { omniMigrations } from "./migrations.ts";
import { omniVideoJob, videoOperations } from "./video.ts";
import { voiceOperations } from "./voices.ts";

export default definePlugin({
  name: "omni",
  requires: ["omni.generate", "text.generate", "media", "outbound"],
  costs: OMNI_COSTS,
  features: [OMNI_FEATURE],
  pauses: [OMNI_PAUSE],
  jobs: { video: omniVideoJob, repair: repairJob },
  contributes: { "captionable.videos": captionableOmniVideos },
  operations: [...characterOperations, ...voiceOperations, ...videoOperations, ...batchOperations, ...improveOperations],
  migrations: omniMigrations,
});
