// Image and video upscaling (spec part 1, "Upscaling"; part 2 for the video states and GET /video-status): the
// declaration. Handlers are in operations.ts; each job kind is in the file of its medium (image.ts, video.ts),
// with the measuring and planning its handler shares; prices and limits in prices.ts.
import { definePlugin } from "mediagate/plugin";
import { imageUpscaleJob } from "./image.ts";
import { upscaleImage, upscaleVideo } from "./operations.ts";
import { UPSCALE_COSTS } from "./prices.ts";
import { videoUpscaleJob } from "./video.ts";

export default definePlugin({
  name: "upscale",
  requires: ["media", "outbound", "service-media", "images.records", "video.records"],
  costs: UPSCALE_COSTS,
  jobs: { image: imageUpscaleJob, video: videoUpscaleJob },
  operations: [upscaleImage, upscaleVideo],
});
