// Metadata removal (spec part 1, "Clean-copy record", "Metadata removal"): the declaration. The handler and
// the choices where the spec is silent are in operations.ts.
import { definePlugin } from "mediagate/plugin";
import { metadataMigrations } from "./migrations.ts";
import { FEATURE, PAUSE, removeMetadata } from "./operations.ts";

export default definePlugin({
  name: "metadata",
  requires: ["outbound", "service-media", "media", "counters"],
  features: [FEATURE],
  pauses: [PAUSE],
  operations: [removeMetadata],
  migrations: metadataMigrations,
});
