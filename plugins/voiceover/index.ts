// Voiceover (spec part 3, "Voiceover record" and the Voiceover endpoints): the declaration. Handlers are in
// operations.ts, the job kind in job.ts, prices in prices.ts.
import { definePlugin } from "mediagate/plugin";
import { voiceoverJob } from "./job.ts";
import { voiceoverMigrations } from "./migrations.ts";
import { generateVoiceover, listVoiceovers, voicesOperation } from "./operations.ts";
import { VOICEOVER_COSTS } from "./prices.ts";

export default definePlugin({
  name: "voiceover",
  requires: ["speech.synthesize", "media"],
  costs: VOICEOVER_COSTS,
  jobs: { voiceover: voiceoverJob },
  operations: [voicesOperation, generateVoiceover, listVoiceovers],
  migrations: voiceoverMigrations,
});
