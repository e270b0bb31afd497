// Image generation (spec part 1, "Image generation", "Image record", the image states table): the
// declaration. Handlers are in operations.ts, the job in job.ts, prices in prices.ts.
import { definePlugin } from "mediagate/plugin";
import { imageJob } from "./job.ts";
import { imagesMigrations } from "./migrations.ts";
import { generateImage, imageStatus, listImages } from "./operations.ts";
import { IMAGE_COSTS } from "./prices.ts";
import { imageRecords } from "./records.ts";

export default definePlugin({
  name: "images",
  requires: ["image.generate", "outbound"],
  provides: {
    // Files live in this plugin's blob store whichever area made them, so one media URL scheme serves all.
    "images.records": (host) => imageRecords(host.blobs.scoped("images")),
  },
  costs: IMAGE_COSTS,
  jobs: { image: imageJob },
  operations: [generateImage, imageStatus, listImages],
  migrations: imagesMigrations,
});
