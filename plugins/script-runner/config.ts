// The Script Runner's declared configuration.

import { defineConfig, envVar } from "mediagate/plugin";
import { z } from "zod";

export const runnerConfig = defineConfig({
  scenesAtOnce: envVar(
    "SCRIPT_RUNNER_SCENES_AT_ONCE",
    z
      .string()
      .regex(/^\d+$/, "must be a positive integer")
      .transform(Number)
      .refine((n) => n >= 1 && n <= 20, "must be 1-20")
      .default(4),
    "scenes of one run rendered at once, each its frame then its clip (default 4: enough to hide the providers' latency)",
  ),
});
